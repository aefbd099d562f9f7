#!/usr/bin/env bash
# Fuzzes Narrator's parsers with libFuzzer (docs/fuzzing.md): builds narrator-fuzz with
# -sanitize=fuzzer,address in its own scratch path (.build-fuzz), seeds each target's corpus
# from the repository's fixtures, runs each target for FUZZ_SECONDS, and prints per target the
# executions and the crash inputs it saved.
#
#   FUZZ_TARGET   one target, or several separated by spaces, in that order (default: all;
#                 `FUZZ_TARGET=list` prints them)
#   FUZZ_SECONDS  seconds per target (default 600)
#   FUZZ_JOBS     targets fuzzed at the same time (default 1)
#   OUT           where corpora, crashes and logs go (default out; out/fuzz/…)
#   FUZZ_SCRATCH  the instrumented build's scratch path (default .build-fuzz; another lets a
#                 second run build newer sources while the first goes on)
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"

seconds=${FUZZ_SECONDS:-600}
jobs=${FUZZ_JOBS:-1}
only=${FUZZ_TARGET:-}
out="$repo/${OUT:-out}/fuzz"
nice=${FUZZ_NICE:-10}

targets=(json aeneas-json gentle audacity aeneas-tsv aeneas-csv webvtt srt textgrid smil smil-page lesson sprite-map wav request)
if [ "$only" = list ]; then printf '%s\n' "${targets[@]}"; exit 0; fi
if [ -n "$only" ]; then
    chosen=()
    for name in $only; do
        case " ${targets[*]} " in *" $name "*) chosen+=("$name") ;; *)
            echo "unknown FUZZ_TARGET '$name' (targets: ${targets[*]})" >&2; exit 2 ;;
        esac
    done
    targets=("${chosen[@]}")
fi
[[ "$seconds" =~ ^[1-9][0-9]*$ ]] || { echo "FUZZ_SECONDS must be a whole number of seconds, not '$seconds'" >&2; exit 2; }
[[ "$jobs" =~ ^[1-9][0-9]*$ ]] || { echo "FUZZ_JOBS must be a whole number, not '$jobs'" >&2; exit 2; }

# The fuzz build: every module of narrator-fuzz's graph is instrumented (coverage for libFuzzer,
# AddressSanitizer), in release; libFuzzer supplies main (-parse-as-library, and
# NARRATOR_LIBFUZZER leaves out the replay tool's @main).
scratch=${FUZZ_SCRATCH:-$repo/.build-fuzz}
flags=(-c release --scratch-path "$scratch" -Xswiftc -sanitize=fuzzer,address -Xswiftc -parse-as-library
    -Xswiftc -DNARRATOR_LIBFUZZER)
echo "building narrator-fuzz with libFuzzer and AddressSanitizer ($scratch)…"
nice -n "$nice" swift build "${flags[@]}" --product narrator-fuzz
bin="$(swift build "${flags[@]}" --show-bin-path)/narrator-fuzz"

# Seeds: fixtures of the repository, the small committed seeds, and every crash input saved
# for regression (so a fix is fuzzed around at once). Copied, never moved: libFuzzer adds to
# the corpus folder.
fixtures() {
    local t=Timings/fixtures f=Timings/fixtures/formats
    case "$1" in
        json) echo $t/sentence.json Timings/lessons/sight-words/part1.json Timings/lessons/sight-words/part2.json ;;
        aeneas-json) echo $f/sentence.aeneas.json ;;
        gentle) echo $f/sentence.gentle.json ;;
        audacity) echo $t/sentence.txt Timings/lessons/dictionary/apple.txt ;;
        aeneas-tsv) echo $f/sentence.tsv ;;
        aeneas-csv) echo $f/sentence.csv ;;
        webvtt) echo $t/sentence.vtt ;;
        srt) echo $f/sentence.srt ;;
        textgrid) echo $f/sentence.TextGrid $f/sentence.short.TextGrid ;;
        smil) echo $f/sentence.aeneas.smil $f/epub/chapter.smil ;;
        smil-page) echo $f/sentence.xhtml $f/epub/page.xhtml ;;
        lesson) grep -l '"sampleRate"' Timings/lessons/*.json ;;
        sprite-map) echo Audio/lessons/apps/hat-shop-sfx.json ;;
        wav) echo Audio/lessons/apps/letter-a.wav Audio/lessons/apps/letter-b.wav ;;
        request) ;;
    esac
}
dictionary() {
    case "$1" in
        json | aeneas-json | gentle | lesson | sprite-map | request) echo Tests/Fixtures/fuzz-seeds/json.dict ;;
        smil | smil-page) echo Tests/Fixtures/fuzz-seeds/xml.dict ;;
        audacity | aeneas-tsv | aeneas-csv | webvtt | srt | textgrid) echo Tests/Fixtures/fuzz-seeds/text.dict ;;
    esac
}

# Small WAV files with cue points and labels (the wav target's seeds): 16-bit mono with three
# markers (one without a label, one with offset 0 and a play-order position), 24-bit stereo with
# one, 32-bit float without any.
make_wav_seeds() {
    python3 - "$1" <<'EOF'
import struct, sys, os
folder = sys.argv[1]
def chunk(tag, body):
    return tag + struct.pack('<I', len(body)) + body + (b'\0' if len(body) % 2 else b'')
def wav(name, rate, channels, bits, fmt_tag, frames, cues):
    width = bits // 8
    data = bytes((i * 37) & 0xFF for i in range(frames * channels * width))
    fmt = struct.pack('<HHIIHH', fmt_tag, channels, rate, rate * channels * width, channels * width, bits)
    body = chunk(b'fmt ', fmt) + chunk(b'data', data)
    if cues:
        points = b''.join(struct.pack('<II4sIII', i + 1, position, b'data', 0, 0, offset)
                          for i, (offset, position, _) in enumerate(cues))
        body += chunk(b'cue ', struct.pack('<I', len(cues)) + points)
        labels = b''.join(chunk(b'labl', struct.pack('<I', i + 1) + label.encode() + b'\0')
                          for i, (_, _, label) in enumerate(cues) if label is not None)
        body += chunk(b'LIST', b'adtl' + labels)
    with open(os.path.join(folder, name), 'wb') as f:
        f.write(b'RIFF' + struct.pack('<I', 4 + len(body)) + b'WAVE' + body)
wav('cues-s16.wav', 8000, 1, 16, 1, 400, [(10, 0, 'a'), (0, 120, 'red'), (300, 0, None)])
wav('cue-s24-stereo.wav', 22050, 2, 24, 1, 200, [(50, 0, 'apple')])
wav('f32.wav', 11025, 1, 32, 3, 100, [])
EOF
}

# "failure | function | Sources/…:line" of a replayed crash's output.
signature() {
    local why frame where
    why=$(grep -m1 -oE 'Swift runtime failure: [^/]*' "$1" | sed 's/ *$//' || true)
    [ -n "$why" ] || why=$(grep -m1 -oE 'ERROR: (AddressSanitizer|libFuzzer): [a-z -]+|(timeout|out-of-memory) after [0-9]+|ALARM: working on the last Unit for [0-9]+ seconds' "$1" | sed 's/ *$//' || true)
    # Stack frames past libFuzzer's handler and libc's signal trampoline, not the runtime failure's.
    frame=$(grep -E '^ +#[0-9]+ ' "$1" | grep -vE 'sanitizer|compiler-rt|libc\.so|Swift runtime failure' | head -1 |
        sed -E 's/^ +#[0-9]+ 0x[0-9a-f]+ in ([^ ]+).*/\1/; s/^ +#[0-9]+ 0x[0-9a-f]+ +\(([^)+]+).*/\1/' |
        swift demangle --simplified --compact 2>/dev/null | cut -c1-90 || true)
    where=$(grep -m1 -oE '/Sources/[A-Za-z-]+/[A-Za-z+-]+\.swift:[0-9]+' "$1" | sed 's|^/||' || true)
    echo "${why:-no failure reproduced} | ${frame:-?} | ${where:-?}"
}

mkdir -p "$out"
summary="$out/summary.txt"
: >"$summary"

fuzz_one() {
    local target=$1
    local corpus="$out/corpus/$target" crashes="$out/crashes/$target" log="$out/logs/$target.log"
    local work="$out/work/$target"
    mkdir -p "$corpus" "$crashes" "$(dirname "$log")" "$work"
    for file in $(fixtures "$target"); do cp "$file" "$corpus/"; done
    for folder in Tests/Fixtures/fuzz-seeds/"$target" Tests/Fixtures/fuzz-crashes/"$target"; do
        [ -d "$folder" ] && cp "$folder"/* "$corpus/" 2>/dev/null || true
    done
    [ "$target" = wav ] && make_wav_seeds "$corpus"
    local before dict
    before=$(find "$crashes" -type f -not -name '*.stack' | sort)
    dict=$(dictionary "$target")
    # Fork mode goes on after a crash (each is saved), so one run finds more than one bug.
    # Inputs taking over 10 s count as hangs (timeout-*), over 2 GB as leaks (oom-*).
    # Swift's own backtracer is off: libFuzzer and ASan print the stack, and the backtracer can
    # take seconds per crash (or stall) in an instrumented process.
    NARRATOR_FUZZ_TARGET=$target NARRATOR_FUZZ_WORKDIR=$work ASAN_OPTIONS=detect_leaks=0 SWIFT_BACKTRACE=enable=no \
        nice -n "$nice" "$bin" -fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1 \
        -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
        -artifact_prefix="$crashes/" ${dict:+-dict="$repo/$dict"} "$corpus" >"$log" 2>&1 || true
    local new
    new=$(comm -13 <(echo "$before") <(find "$crashes" -type f -not -name '*.stack' | sort) | grep . || true)
    # Fork mode's progress lines: "#123456: cov: … exec/s: … oom/timeout/crash: 0/0/2 time: 60s …"
    local executions lines
    executions=$(grep -o '^#[0-9]*' "$log" | tail -1 | tr -d '#')
    lines=$(printf '%-12s %6ss %12s executions %4s crash/hang inputs saved\n' "$target" "$seconds" "${executions:-?}" \
        "$(echo -n "$new" | grep -c . || true)")
    # Each new input replayed once for its stack (FILE.stack); the summary groups them by what
    # failed and where: the failure, the first frame past the signal handler, the first line of
    # Narrator's sources on the stack.
    local signatures=""
    for file in $new; do
        NARRATOR_FUZZ_TARGET=$target NARRATOR_FUZZ_WORKDIR=$work ASAN_OPTIONS=detect_leaks=0 SWIFT_BACKTRACE=enable=no \
            timeout 60 "$bin" -timeout=10 -rss_limit_mb=2048 "$file" >"$file.stack" 2>&1 || true
        signatures+="$(signature "$file.stack")"$'\t'"$(basename "$file")"$'\n'
    done
    if [ -n "$signatures" ]; then
        lines+=$'\n'"$(printf '%s' "$signatures" | sort | awk -F'\t' '
            $1 != last { if (n) printf "    %4d× %s (e.g. %s)\n", n, last, example; last = $1; n = 0; example = $2 }
            { n++ } END { if (n) printf "    %4d× %s (e.g. %s)", n, last, example }')"
    fi
    rm -rf "$work"
    echo "$lines" | tee -a "$summary"
}

for target in "${targets[@]}"; do
    while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
    echo "fuzzing $target for ${seconds}s (log: $out/logs/$target.log)"
    fuzz_one "$target" &
done
wait
echo
echo "summary (also in $summary):"
cat "$summary"
