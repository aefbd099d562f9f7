#!/usr/bin/env bash
# Benchmark of live playback (`narrator play`), through real libasound into a private
# PulseAudio server whose pipe sink hands back what was heard (scripts/pulse-test-server.sh).
# Prints, from one run each:
#   - how late a thread on each CPU wakes from a 1 ms sleep, with the CPUs idle and kept awake
#     (AwakeCPUs: on a VM an idle vCPU takes milliseconds to run again);
#   - cue delivery error |delivered − heard| p50/p99/max, against the sink's own clock
#     (with the CPUs idle, then awake);
#   - start latency: command → first frame written, and → first frame heard;
#   - CPU time per second of audio (the whole narrator process);
#   - peak memory (VmHWM) 20 s into playing a 1-minute and a 60-minute streamed music bed;
#   - underruns during STRESS_SECONDS (default 300) under `stress-ng --cpu 4`, at 50 and 100 ms.
# A benchmark, not a test: it asserts nothing and exits non-zero only when something fails to run.
#
# Usage: scripts/bench-live.sh        Environment: STRESS_SECONDS=N (default 300)
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
command -v stress-ng >/dev/null || {
  sudo=$([ "$(id -u)" = 0 ] || echo sudo)
  echo "installing stress-ng" >&2
  $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends stress-ng >/dev/null
}
bin=$(bash scripts/build-release.sh narrator narrator-bench-live)
"$bin/narrator-bench-live" "$bin/narrator" "${STRESS_SECONDS:-300}"
