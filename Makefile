# Narrator: the two commands for a fresh Debian machine are `make demo` and `make test`.
# Both install what they need first (apt packages included; run as root or with sudo).

APT_PACKAGES := pkg-config python3-jsonschema libsndfile1-dev libsoxr-dev libasound2-dev libpulse-dev sox libsox-fmt-all espeak-ng python3 time \
	gcc pulseaudio pulseaudio-utils libasound2-plugins alsa-utils socat chromium libespeak-ng-dev \
	g++ python3-dev python3-pip festival-dev libestools-dev ffmpeg \
	librsvg2-dev fonts-dejavu-core tmux lame vorbis-tools opus-tools flac libsonic-dev libebur128-dev libkissfft-dev \
	librsvg2-2 libespeak-ng1 libpulse0 flite libsqlite3-dev sqlite3 wasi-libc libclang-rt-dev-wasm32 binaryen nodejs
# librsvg2-2, libespeak-ng1 and libpulse0: the run-time libraries narrator loads with dlopen when a
# command needs them (librsvg-2.so.2 for a PNG plot, libespeak-ng.so.1 for synth and align,
# libpulse.so.0 for --output pulse; Sources/CLazyLibrary): nothing links them, so they are named
# here, not only pulled in by their -dev packages. librsvg2-dev: no build uses its headers
# (Sources/CRsvgLoader/include/rsvg_api.h declares what is called); LinkedLibrariesTests checks
# those declarations against them.
# libsonic-dev: the time stretcher (render --speed, TimeStretcher); SoundTouch and Rubber Band are
# only measured by scripts/compare-stretchers.py, which skips them when absent (docs/time-stretch.md).
# libebur128-dev: loudness (inspect, validate, a lesson's "loudness" target; docs/loudness.md).
# libpulse-dev: `--output pulse` (Sources/NarratorOutputs/Pulse), the native PulseAudio output.
# tmux: the terminal view's tests run narrator in a tmux pane (TerminalViewTests).
# lame, vorbis-tools (oggenc), opus-tools (opusenc) and flac: the encoders whose files the decoder is
# tested with (scripts/encoded-audio.sh, Tests/NarratorAudioFileTests/EncodedFileTests.swift).
# aeneas-ng (the aeneas forced aligner, run by Tests/NarratorCLITests/AeneasTests.swift) is a
# source package: pip compiles its C extensions against libespeak-ng-dev, festival-dev and
# libestools-dev, and it calls ffprobe/ffmpeg on the audio it aligns.
# libsqlite3-dev (public domain): the daemon's touch log (serve --touches, narrator touches;
# docs/touches.md); sqlite3, its command-line tool, reads the log back in TouchesTests.
# pocketsphinx (BSD-2-Clause, its en-US model inside the wheel): align's first stage for English.
# axe-selenium-python: only for the axe.min.js (axe-core, MPL-2.0) it bundles, which
# Tests/clients/player_browser.py injects over the DevTools protocol (NarratorPlayerTests).
# wasi-libc (a C library for wasm32: malloc, memcmp, pow, strtod) and libclang-rt-dev-wasm32
# (compiler-rt's builtins): what `make wasm` links narrator.wasm with, binaryen's wasm-opt what
# shrinks it (scripts/build-wasm.sh,
# docs/wasm.md); nodejs runs it in WasmEngineTests.
# flite: the second synthetic voice of the alignment tests and scripts/bench-align.sh.
PIP_PACKAGES := websockets aeneas-ng pocketsphinx axe-selenium-python
# What `deps` imports to tell that the pip packages are there (aeneas with its C extensions).
PIP_IMPORTS := websockets, aeneas.cew.cew, aeneas.cdtw.cdtw, aeneas.cmfcc.cmfcc, pocketsphinx, axe_selenium_python
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
SWIFT_BUILD_FLAGS ?=
OUT := out
LIVE_TESTS := LivePlaybackTests|PulseOutputTests|DaemonLiveTests|TerminalViewTests|PulseHarnessTests|APITests|LiveSpeedTests|LiveLongPauseTests|LiveVolumeTests|ReadAlongPageTests|DaemonShutdownTests|DaemonFairnessTests|FileOutputTests|NarratorPlayerTests|StreamSeekLiveTests

# test-pipewire's daemons: PipeWire, its pulse server and WirePlumber (pw-metadata is in pipewire-bin).
PIPEWIRE_APT_PACKAGES := pipewire pipewire-bin pipewire-pulse wireplumber

# $(call apt_install,PACKAGES): installs those of PACKAGES that are not installed yet (apt-get
# update first; nothing when all are present).
apt_install = missing=$$(for p in $(1); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q '^install ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
		echo "installing:" $$missing; \
		$(SUDO) apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends $$missing; \
	fi

.PHONY: deps build release wasm demo test test-pipewire test-slurm bench fuzz fixtures clean

## deps: install the system packages (apt-get update first; skipped when all are present)
deps:
	@$(call apt_install,$(APT_PACKAGES))
	@python3 -c "import $(PIP_IMPORTS)" 2>/dev/null || python3 -m pip install -q $(PIP_PACKAGES) || \
		python3 -m pip install -q --break-system-packages $(PIP_PACKAGES)
	@command -v swift >/dev/null || { echo "swift not found: install the Swift 6 toolchain (swift.org) and put it on PATH"; exit 1; }

build: deps
	swift build $(SWIFT_BUILD_FLAGS)

## wasm: the engine for the browser: .build-wasm/narrator.wasm and narrator.js (docs/wasm.md)
wasm: deps
	@bash scripts/build-wasm.sh

## release: narrator as it ships (optimized, the Swift runtime linked in; scripts/build-release.sh),
## in .build-bench/release/narrator, the binary the benchmarks time
release: deps
	@bin=$$(bash scripts/build-release.sh narrator) && echo "$$bin/narrator"

## demo: render the sample lesson's "correct" chain, then play it live (sound card, or a private
## PulseAudio server whose recording is saved to out/heard.wav)
demo: build
	OUT=$(OUT) bash scripts/demo.sh

## A try of the live tests takes about 5 minutes; one that hangs (a stuck sound server, a
## client that never ends) is stopped after this long and counts as failed.
LIVE_TRY_SECONDS ?= 900
## Where the live tests' harness writes the host stalls it measured (NarratorTestSupport's
## HostStalls): a failed try is retried only when this holds a stall measured during it.
LIVE_STALL_LOG := $(CURDIR)/.build/live-host-stalls.log

## test: every test, unit and end to end (fixtures, sox, the CLI). NARRATOR_NO_SKIPS=1: a test
## whose requirement is missing fails instead of skipping, outside the allow-list (AllowedSkip,
## docs/testing.md). The live timing tests run alone after the others, up to three tries: a
## failed try is run again only if the harness measured a stall of the host during it, and a
## pass on a later try is reported as one.
test: deps
	bash scripts/build-wasm.sh
	swift build --build-tests $(SWIFT_BUILD_FLAGS)
	NARRATOR_NO_SKIPS=1 swift test --skip-build $(SWIFT_BUILD_FLAGS) --skip '$(LIVE_TESTS)'
	@echo "live playback tests, alone (they measure timing):"
	@for try in 1 2 3; do \
		rm -f $(LIVE_STALL_LOG); \
		if NARRATOR_NO_SKIPS=1 NARRATOR_STALL_LOG=$(LIVE_STALL_LOG) timeout --kill-after=30 $(LIVE_TRY_SECONDS) \
			swift test --skip-build --no-parallel $(SWIFT_BUILD_FLAGS) --filter '$(LIVE_TESTS)'; then \
			[ $$try = 1 ] || echo "the live timing tests PASSED ON RETRY (try $$try of 3); the failures of the earlier tries, and the stalls that allowed their retry, are above"; \
			exit 0; \
		else status=$$?; fi; \
		[ $$status = 124 ] && echo "the live timing tests took over $(LIVE_TRY_SECONDS) s (try $$try of 3): stopped"; \
		if [ ! -s $(LIVE_STALL_LOG) ]; then \
			echo "the live timing tests failed (try $$try of 3) with no stall of the host measured: a failure, not retried"; \
			exit 1; \
		fi; \
		echo "the live timing tests failed (try $$try of 3); the harness measured these stalls of the host meanwhile:"; \
		cat $(LIVE_STALL_LOG); \
		[ $$try = 3 ] && exit 1; \
		echo "running them again: the first try that passes decides, and is reported as a pass on retry"; \
	done


## test-pipewire: the pulse output's live suites again, on a private PipeWire server (pipewire,
## pipewire-pulse, WirePlumber; scripts/pipewire-test-server.sh) instead of PulseAudio. Not part of
## `test` (docs/testing.md, PipeWire: about 4.5 minutes, and the idle-CPU spinners disturb the
## PipeWire graph, so they are off here). Installs its packages first.
PIPEWIRE_TESTS := LivePlaybackTests|PulseOutputTests|PulseHarnessTests|UnavailableDeviceTests
test-pipewire: deps
	@$(call apt_install,$(PIPEWIRE_APT_PACKAGES))
	swift build --build-tests $(SWIFT_BUILD_FLAGS)
	NARRATOR_TEST_SOUND_SERVER=pipewire NARRATOR_IDLE_CPUS=1 timeout --kill-after=30 $(LIVE_TRY_SECONDS) \
		swift test --skip-build --no-parallel $(SWIFT_BUILD_FLAGS) --filter '$(PIPEWIRE_TESTS)'

## test-slurm: align, validate, render-all and pack as `sbatch --array` jobs (--shard auto) on a
## one-machine Slurm cluster started for the test (scripts/test-slurm.sh; docs/cluster.md), merged
## and compared byte for byte with one unsharded run, with tasks killed and run again. As
## root; installs slurm-wlm and munge first. CI runs it after `make test`; about 30 s.
SLURM_APT_PACKAGES := slurm-wlm munge
test-slurm: deps
	@$(call apt_install,$(SLURM_APT_PACKAGES))
	swift build $(SWIFT_BUILD_FLAGS)
	timeout --kill-after=10 180 $(SUDO) env NARRATOR=$$(swift build $(SWIFT_BUILD_FLAGS) --show-bin-path)/narrator bash scripts/test-slurm.sh

## bench: render benchmark against sox, live playback, daemon, speed, controls, start-up, batch (both cores) and word alignment (scripts/bench-align.sh) figures (prints figures; not a test)
## festival (and its kal voice): a third engine for scripts/bench-align.sh's other-* sets.
BENCH_APT_PACKAGES := festival festvox-kallpc16k
bench: deps
	@$(call apt_install,$(BENCH_APT_PACKAGES))
	bash scripts/bench-render.sh
	bash scripts/bench-live.sh
	bash scripts/bench-daemon.sh
	bash scripts/bench-speed.sh
	bash scripts/bench-controls.sh
	bash scripts/bench-startup.sh
	bash scripts/bench-batch.sh
	bash scripts/bench-catalog.sh
	@python3 -c 'import tgt, soundfile, numpy' 2>/dev/null || python3 -m pip install -q tgt soundfile numpy || \
		python3 -m pip install -q --break-system-packages tgt soundfile numpy
	RUNS=$${RUNS:-3} bash scripts/bench-align.sh

## fuzz: fuzz every parser with libFuzzer and AddressSanitizer (docs/fuzzing.md), FUZZ_SECONDS each
## (default 600), FUZZ_JOBS targets at a time; FUZZ_TARGET=textgrid runs one. Not part of `test`.
## Crash inputs go to $(OUT)/fuzz/crashes/TARGET; the run prints each target's executions and crashes.
FUZZ_SECONDS ?= 600
FUZZ_JOBS ?= 1
FUZZ_TARGET ?=
fuzz: deps
	FUZZ_SECONDS=$(FUZZ_SECONDS) FUZZ_JOBS=$(FUZZ_JOBS) FUZZ_TARGET="$(FUZZ_TARGET)" OUT=$(OUT) bash scripts/fuzz.sh

## fixtures: regenerate Audio/ and Timings/ fixtures from speech and synthetic sounds
fixtures: deps
	python3 scripts/make-fixtures.py
	swift build --product narrator && bash scripts/make-locale-fixtures.sh

clean:
	rm -rf .build .build-fuzz .build-bench .build-bench-plain $(OUT)
