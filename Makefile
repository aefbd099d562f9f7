# Narrator: the two commands for a fresh Debian machine are `make demo` and `make test`.
# Both install what they need first (apt packages included; run as root or with sudo).

APT_PACKAGES := pkg-config libsndfile1-dev libsoxr-dev sox libsox-fmt-all espeak-ng python3 time
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
SWIFT_BUILD_FLAGS ?=
OUT := out

.PHONY: deps build demo test bench fixtures clean

## deps: install the system packages (apt-get update first; skipped when all are present)
deps:
	@missing=$$(for p in $(APT_PACKAGES); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q '^install ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
		echo "installing:" $$missing; \
		$(SUDO) apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends $$missing; \
	fi
	@command -v swift >/dev/null || { echo "swift not found: install the Swift 6 toolchain (swift.org) and put it on PATH"; exit 1; }

build: deps
	swift build $(SWIFT_BUILD_FLAGS)

## demo: render the sample lesson's "correct" chain and show its cues
demo: build
	@mkdir -p $(OUT)
	swift run $(SWIFT_BUILD_FLAGS) narrator render Timings/lessons/sample.json --chain correct --seed 7 \
		--output $(OUT)/correct.wav --cues $(OUT)/correct.cues.json
	@echo; swift run $(SWIFT_BUILD_FLAGS) narrator inspect $(OUT)/correct.wav
	@echo; echo "cue sheet ($(OUT)/correct.cues.json):"; cat $(OUT)/correct.cues.json
	@echo; echo "rendered audio: $(OUT)/correct.wav"

## test: every test, unit and end to end (fixtures, sox, the CLI)
test: deps
	swift build --build-tests $(SWIFT_BUILD_FLAGS)
	swift test --skip-build $(SWIFT_BUILD_FLAGS)

## bench: render benchmark against sox (prints figures; not a test)
bench: deps
	bash scripts/bench-render.sh

## fixtures: regenerate Audio/ and Timings/ fixtures from speech and synthetic sounds
fixtures: deps
	python3 scripts/make-fixtures.py

clean:
	rm -rf .build $(OUT)
