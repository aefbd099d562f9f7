#!/usr/bin/env bash
# Start-up benchmark: how long a process takes from exec to exit for commands that do little
# work, against a Swift "hello" that imports Foundation, built with the same compiler in the
# same run (the floor any Swift tool on Linux pays: the Swift runtime and Foundation loaded).
#
# Prints the median, 90th percentile and minimum wall time, and the median CPU time (user +
# system, which other load on the machine moves less), over RUNS runs of each of:
#   narrator --version
#   narrator inspect Audio/fixtures/sentence.wav   (opens and reads a WAV)
#   hello (Foundation)
# The commands run in turns (one run of each, then the next round), so load from other work on
# the machine falls on all of them alike. Also prints how many shared libraries each loads.
#
# A benchmark, not a test: figures are informational; the exit status is non-zero only when a
# build or a command fails.
#
# Usage:
#   scripts/bench-startup.sh
# Environment:
#   NARRATOR=path   use this narrator binary instead of building one (release, .build-bench)
#   BENCH_BUILD=plain  build it with plain `swift build -c release` (.build-bench-plain), as a
#                   SwiftPM user does, instead of scripts/build-release.sh
#   RUNS=N          runs per command (default 50)

set -euo pipefail
export LC_ALL=C

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
runs=${RUNS:-50}
say() { printf '%s\n' "$*" >&2; }
die() { say "bench-startup: $*"; exit 1; }

# shellcheck source=scripts/bench-lib.sh
source "$repo/scripts/bench-lib.sh"
bench_narrator bench-startup

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
printf 'import Foundation\nprint("hello \\(ProcessInfo.processInfo.processIdentifier > 0)")\n' >"$work/hello.swift"
swiftc -O "$work/hello.swift" -o "$work/hello" >/dev/null 2>&1 || die "could not build the Foundation hello"

clip=$repo/Audio/fixtures/sentence.wav
[[ -f $clip ]] || clip=$(ls "$repo"/Audio/fixtures/*.wav | head -1)

python3 - "$runs" "$narrator" "$clip" "$work/hello" <<'PY'
import os, statistics, subprocess, sys, time
runs, narrator, clip, hello = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
commands = [
    ("narrator --version", [narrator, "--version"]),
    ("narrator inspect " + os.path.relpath(clip), [narrator, "inspect", clip]),
    ("hello (Foundation)", [hello]),
]
devnull = os.open(os.devnull, os.O_WRONLY)
times = {name: [] for name, _ in commands}
cpu = {name: [] for name, _ in commands}
for name, argv in commands:  # each must work, and warms the page cache
    subprocess.run(argv, stdout=subprocess.DEVNULL, check=True)
for _ in range(runs):
    for name, argv in commands:
        start = time.perf_counter()
        pid = os.posix_spawn(argv[0], argv, os.environ, file_actions=[(os.POSIX_SPAWN_DUP2, devnull, 1)])
        _, status, usage = os.wait4(pid, 0)
        elapsed = time.perf_counter() - start
        if status != 0:
            sys.exit(f"bench-startup: {name} failed (status {status})")
        times[name].append(elapsed * 1000)
        cpu[name].append((usage.ru_utime + usage.ru_stime) * 1000)
def libraries(path):
    out = subprocess.run(["ldd", path], capture_output=True, text=True).stdout
    return sum(1 for line in out.splitlines() if "=>" in line or line.strip().startswith("/"))
print(f"start-up, {runs} runs each (ms, exec to exit; CPU is user + system, less moved by other load):")
print(f"{'command':44} {'median':>8} {'p90':>8} {'min':>8} {'CPU med':>8}")
for name, _ in commands:
    t = sorted(times[name])
    p90 = t[min(len(t) - 1, int(round(0.9 * (len(t) - 1))))]
    print(f"{name:44} {statistics.median(t):8.1f} {p90:8.1f} {t[0]:8.1f} {statistics.median(cpu[name]):8.1f}")
print(f"shared libraries at start (ldd): narrator {libraries(narrator)}, hello {libraries(hello)}")
PY
