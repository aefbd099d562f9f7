#!/usr/bin/env bash
# Benchmark of controls through `narrator serve --output pulse` and a private PulseAudio server
# (scripts/pulse-test-server.sh): request-to-heard latency of pause, resume, seek and speed, p50/p99
# (scripts/bench-controls.py says how). Release build as shipped, default flags. A benchmark,
# not a test: it asserts nothing.
#
# Usage: [NARRATOR=path] scripts/bench-controls.sh [REPEAT]   (the sample chain REPEAT times, default 12)
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
# shellcheck source=scripts/bench-lib.sh
. scripts/bench-lib.sh
bench_narrator bench-controls
work=$(mktemp -d)
daemon=
trap '[ -n "$daemon" ] && kill "$daemon" 2>/dev/null; scripts/pulse-test-server.sh stop "$work/pulse" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'); load $(cut -d' ' -f1-3 /proc/loadavg)"
scripts/pulse-test-server.sh start "$work/pulse" >/dev/null
set -a; . "$work/pulse/env"; set +a
"$narrator" serve --library Timings/lessons --socket "$work/n.sock" --output pulse >"$work/daemon.out" 2>"$work/daemon.err" &
daemon=$!
for _ in $(seq 100); do [ -S "$work/n.sock" ] && break; sleep 0.1; done
[ -S "$work/n.sock" ] || { echo "bench-controls: the daemon did not start: $(cat "$work/daemon.err")" >&2; exit 1; }
python3 scripts/bench-controls.py "$narrator" "$work/n.sock" Timings/lessons/sample.json correct "${1:-12}"
