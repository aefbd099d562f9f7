#!/usr/bin/env bash
# Benchmark of playback speed (the Sonic time stretcher, docs/time-stretch.md): CPU time per
# second of audio heard, for the whole narrator process,
#   - live: `narrator play --output pulse --speed S` through a private PulseAudio server
#     (scripts/pulse-test-server.sh), the sample lesson's chain `correct` 5 times (about 20 s
#     of audio at 1x);
#   - offline: `narrator render --speed S` of the same chain 20 times.
# At S = 1, 0.75 and 1.5, from one run each, in the same run. A benchmark: it asserts nothing.
#
# Usage: scripts/bench-speed.sh
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
bin=$(bash scripts/build-release.sh narrator)/narrator
lesson=Timings/lessons/sample.json
work=$(mktemp -d)
trap 'scripts/pulse-test-server.sh stop "$work/pulse" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
frames() { "$bin" cues "$lesson" --chain correct --seed 7 --repeat "$1" | python3 -c 'import json,sys; print(json.load(sys.stdin)["frames"])'; }
live_frames=$(frames 5)
render_frames=$(frames 20)
echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'); load $(cut -d' ' -f1-3 /proc/loadavg)"
scripts/pulse-test-server.sh start "$work/pulse" >/dev/null
printf '%-8s %-8s %12s %12s %14s\n' mode speed "audio (s)" "CPU (s)" "CPU ms/audio s"
for speed in 1 0.75 1.5; do
  audio=$(python3 -c "print($live_frames / 48000 / $speed)")
  cpu=$( (set -a; . "$work/pulse/env"; set +a
          /usr/bin/time -f '%U %S' "$bin" play "$lesson" --chain correct --seed 7 --repeat 5 --output pulse --speed "$speed" \
            --events /dev/null) 2>&1 >/dev/null | tail -1 | awk '{print $1 + $2}')
  printf '%-8s %-8s %12.2f %12.2f %14.2f\n' live "$speed" "$audio" "$cpu" "$(python3 -c "print(1000 * $cpu / $audio)")"
done
for speed in 1 0.75 1.5; do
  audio=$(python3 -c "print($render_frames / 48000 / $speed)")
  cpu=$( /usr/bin/time -f '%U %S' "$bin" render "$lesson" --chain correct --seed 7 --repeat 20 --speed "$speed" \
           --output "$work/out.wav" 2>&1 >/dev/null | tail -1 | awk '{print $1 + $2}')
  printf '%-8s %-8s %12.2f %12.2f %14.2f\n' render "$speed" "$audio" "$cpu" "$(python3 -c "print(1000 * $cpu / $audio)")"
done
