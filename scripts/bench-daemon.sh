#!/usr/bin/env bash
# Benchmark of `narrator serve` under load: CLIENTS (default 50) clients subscribed to one
# playback, over the Unix socket and over WebSocket, each event's arrival compared with when
# its frame was heard (the private PulseAudio pipe sink's recording, scripts/pulse-test-server.sh).
# Release build. A benchmark, not a test: it asserts nothing. Each case also reports the event
# loops' CPU time per moment per client (robust on a loaded machine, unlike the latencies); with
# BENCH_SYSCALLS=1, their syscalls per moment per client too (perf on the kernel's tracepoints).
# It starts with the floor under the fan-out (LoopbackFloor.swift), in the same run: plain
# write(2) to CLIENTS sockets from one thread, over the Unix socket and loopback TCP; each case
# is then reported against issue 28.8's goal (first client p99 ≤ 0.5 ms after heard, last client
# p99 ≤ the floor's p99 + 0.5 ms).
#
# Usage: [BENCH_SYSCALLS=1] scripts/bench-daemon.sh [CLIENTS]
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
bin=$(bash scripts/build-release.sh narrator narrator-bench-daemon)
"$bin/narrator-bench-daemon" "$bin/narrator" "${1:-50}"
