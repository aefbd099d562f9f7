#!/usr/bin/env bash
# Benchmark of the browser build (docs/wasm.md, issue 31): narrator.wasm's size (raw and
# gzipped), the mixer's time per 128-frame quantum in Node for the hat shop (its music bed
# looped and ducked under the voice, scripted taps) and a plain chain, at speed 1 and through
# the stretcher (Sonic) at 1.5 and 0.75, and the start-up to the
# first cue heard in headless Chromium from a `narrator pack --web` folder on a static server.
# A benchmark, not a test: it prints figures and asserts nothing.
#
# Usage: scripts/bench-wasm.sh   (after make; narrator from .build/debug unless NARRATOR is set)
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
narrator=${NARRATOR:-$repo/.build/debug/narrator}
built=$(bash scripts/build-wasm.sh)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "narrator.wasm: $(stat -c %s "$built/narrator.wasm") bytes, $(gzip -9 -c "$built/narrator.wasm" | wc -c) gzipped (-9); narrator.js $(stat -c %s "$built/narrator.js") bytes"
"$narrator" pack Timings/lessons --to "$work/web" --web --no-progress >/dev/null
node scripts/bench-wasm.mjs "$work/web" homer-hat-shop.json '{"activity": "hat-shop", "state": "first-use", "taps": "1:cat,1.1:hats,1.2:cat"}' 7
node scripts/bench-wasm.mjs "$work/web" sample.json '{"chain": "correct"}' 7
# At a speed (pitch kept): the same chain and the hat shop through the playback's stretcher.
node scripts/bench-wasm.mjs "$work/web" sample.json '{"chain": "correct", "speed": 1.5}' 7
node scripts/bench-wasm.mjs "$work/web" sample.json '{"chain": "correct", "speed": 0.75}' 7
node scripts/bench-wasm.mjs "$work/web" homer-hat-shop.json '{"activity": "hat-shop", "state": "first-use", "taps": "1:cat,1.1:hats,1.2:cat", "speed": 1.5}' 7
mkdir -p "$work/web/pages" && cp Tests/wasm/pages/live.html "$work/web/pages/"
lesson=$(python3 -c "import json,sys; print(next(l['path'] for l in json.load(open(sys.argv[1]))['lessons'] if l['path'].endswith('/sample.json')))" "$work/web/narrator-web.json")
for run in 1 2 3; do
    echo "Chromium start-up, run $run (ms): $(python3 Tests/clients/wasm_browser.py "$work/web" pages/live.html "startup('$lesson', 'correct')")"
done
