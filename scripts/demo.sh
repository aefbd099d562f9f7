#!/usr/bin/env bash
# The main job: render the sample lesson's "correct" chain, then play it live, then
# play Learn with Homer's sight-words activity live with scripted taps (a wrong answer, the two
# right ones), its events delivered as heard.
# On a machine with a sound card it plays on the default output (the desktop's sound server
# through libpulse when one runs, else ALSA's default device). Without one (these build
# machines have no /dev/snd) it plays through a private PulseAudio server whose pipe sink hands
# back what was heard, saved to out/heard.wav.
set -euo pipefail
cd "$(dirname "$0")/.."
narrator=${NARRATOR:-.build/debug/narrator}
out=${OUT:-out}
mkdir -p "$out"
lesson=Timings/lessons/sample.json
args=(--chain correct --seed 7)
activity_lesson=Timings/lessons/homer-sight-words.json
activity_args=(--activity sight-words --taps 3:cat,4.5:see,9.5:hat --seed 7)

"$narrator" render "$lesson" "${args[@]}" --output "$out/correct.wav" --cues "$out/correct.cues.json"
echo "rendered: $out/correct.wav (cue sheet $out/correct.cues.json)"

if [ -d /dev/snd ] && aplay -l 2>/dev/null | grep -q '^card'; then
  echo "playing on the sound card (the default output)..."
  "$narrator" play "$lesson" "${args[@]}" --verbose --events "$out/events.jsonl"
  echo "playing the sight-words activity with scripted taps..."
  "$narrator" play "$activity_lesson" "${activity_args[@]}" --events "$out/activity.events.jsonl"
  echo "events: $out/events.jsonl, $out/activity.events.jsonl"
  exit 0
fi

echo "no sound card: playing through a private PulseAudio server (pipe sink)..."
dir=$(mktemp -d /tmp/narrator-demo.XXXXXX)
trap 'bash scripts/pulse-test-server.sh stop "$dir" >/dev/null 2>&1 || true; rm -rf "$dir"' EXIT
bash scripts/pulse-test-server.sh start "$dir" 48000 2 >/dev/null
bash scripts/pulse-test-server.sh record "$dir" "$dir/heard.raw" "$dir/heard.times.tsv" 2>/dev/null &
for _ in $(seq 100); do [ -e "$dir/recorder.ready" ] && break; sleep 0.1; done
# shellcheck disable=SC1091
(source "$dir/env" && "$narrator" play "$lesson" "${args[@]}" --verbose --events "$out/events.jsonl")
echo "playing the sight-words activity with scripted taps..."
(source "$dir/env" && "$narrator" play "$activity_lesson" "${activity_args[@]}" --events "$out/activity.events.jsonl")
sleep 0.2
bash scripts/pulse-test-server.sh stop "$dir" >/dev/null
sox -t raw -e signed -b 16 -c 2 -r 48000 "$dir/heard.raw" "$out/heard.wav"
echo "events (JSON lines, each cue when heard): $out/events.jsonl"
head -3 "$out/events.jsonl"
echo "..."
echo "activity events: $out/activity.events.jsonl"
grep -E '"type":"(tap|feedback|idlePrompt|advance|activityEnd)"' "$out/activity.events.jsonl" | cut -c1-160
echo "..."
echo "what was heard (the sink's recording, $(soxi -D "$out/heard.wav") s): $out/heard.wav"
