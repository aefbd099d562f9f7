#!/usr/bin/env bash
# Word-alignment benchmark (issue 29): p50 / p95 / max / within 20 ms / within 50 ms of every
# word start and end, by boundary kind (joins, pauses, clip edges), for each first stage alone
# (aeneas, PocketSphinx 5), the PocketSphinx + refinement prototype, and `narrator align`, on
#   - real read speech with hand-placed word boundaries, read at bench time from public
#     repositories (never committed: see scripts/align-eval/corpus.py and docs/align-research.md),
#   - the same real speech with a piano-like bed 20 and 30 dB under the voice (noisy.py),
#   - synthetic voices (espeak-ng, four flite voices) with exact boundaries, clean and with a
#     piano-like bed 20 dB under the voice,
#   - other synthetic voices (espeak-ng en-gb slow and en-us+f3 fast, flite kal and rms,
#     festival), other texts, at 22.05 and 44.1 kHz: clean, dithered, through MP3, over
#     another piano bed 20 dB under, over a pad with plucked bass and hi-hat 20 dB under, and
#     over mains hum with pink noise 30 dB under (scripts/align-eval/heldout.py).
# After each table, the confidence table: per set, the words more than 50 ms off at either
# boundary, the words narrator align reports (confidence under 0.5), recall and precision.
#
# usage: scripts/bench-align.sh [WORKDIR]
#   ALIGN_MIRRORS  where the bare git dirs of the corpus repositories are (OWNER+NAME/repo);
#                  default /work/.mirror. Missing ones are skipped with a note.
#   NARRATOR       the narrator binary (default .build/debug/narrator, then .build/release).
#   RUNS           how many times to run the whole table (default 1; aligners are rerun each time).
#   SYSTEMS        default aeneas,ps,ps+deep+bias5+edges,narrator-stage,narrator,narrator-aeneas
#                  (narrator-stage: narrator align's first stage alone, its aligner frames;
#                  narrator-aeneas: narrator align --first-stage aeneas, the other languages' path).
#                  narrator runs are pinned to one core (taskset -c 0) and timed: the speed table,
#                  one `align` a clip and every clip in one manifest (one PocketSphinx worker).
# needs: python3 with pocketsphinx, aeneas-ng, tgt, soundfile, numpy; sox, espeak-ng, flite.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/.." && pwd)"
work="${1:-$(mktemp -d -t bench-align.XXXXXX)}"
mkdir -p "$work"
runs="${RUNS:-1}"
systems="${SYSTEMS:-aeneas,ps,ps+deep+bias5+edges,narrator-stage,narrator,narrator-aeneas}"

missing=()
for c in sox espeak-ng flite python3; do command -v "$c" >/dev/null || missing+=("$c"); done
python3 -c "import pocketsphinx, aeneas, tgt, soundfile, numpy" 2>/dev/null || missing+=("python: pocketsphinx aeneas-ng tgt soundfile numpy")
if ((${#missing[@]})); then
    echo "bench-align: missing ${missing[*]} (apt-get install sox espeak-ng flite; pip install pocketsphinx aeneas-ng tgt soundfile numpy)" >&2
    exit 1
fi

narrator="${NARRATOR:-}"
if [[ -z "$narrator" ]]; then
    for b in "$root/.build/debug/narrator" "$root/.build/release/narrator"; do
        [[ -x "$b" ]] && { narrator="$b"; break; }
    done
fi
[[ -n "$narrator" ]] || echo "bench-align: no narrator binary (swift build first); its rows are left out" >&2

python3 "$here/align-eval/corpus.py" "$work/real" --mirrors "${ALIGN_MIRRORS:-/work/.mirror}"
python3 "$here/align-eval/synth.py" "$work/synth"
# Material the refinement was not tuned on: other voices, rates and texts, dithered and MP3 files.
python3 "$here/align-eval/heldout.py" "$work/other"
command -v text2wave >/dev/null || echo "bench-align: festival is not installed (make bench installs it); its voice is left out of other-*" >&2

sets=("synth-clean=$work/synth/clean" "synth-bed20=$work/synth/bed20"
      "other-clean=$work/other/clean" "other-dither=$work/other/dither" "other-mp3=$work/other/mp3"
      "other-piano20=$work/other/piano20" "other-pad20=$work/other/pad20" "other-hum30=$work/other/hum30")
if ls "$work/real"/*.json >/dev/null 2>&1; then
    # The real recordings again with synth.py's piano bed 20 and 30 dB under the voice.
    python3 "$here/align-eval/noisy.py" "$work/real" "$work/real-bed"
    sets=("real=$work/real" "real-bed20=$work/real-bed/bed20" "real-bed30=$work/real-bed/bed30" "${sets[@]}")
fi

for ((r = 1; r <= runs; r++)); do
    echo "## run $r of $runs ($(date -u +%FT%TZ))"
    start=$(date +%s)
    python3 "$here/align-eval/evaluate.py" --sets "${sets[@]}" --systems "$systems" \
        ${narrator:+--narrator "$narrator"} --cache "$work/cache-$r" --json "$work/run-$r.json"
    echo "(run $r: $(( $(date +%s) - start )) s)"
done
if ls "$work/real"/*.json >/dev/null 2>&1; then
    echo "## stop-initial words: closure or burst (real speech)"
    python3 "$here/align-eval/stops.py" --sets "$work/real" --cache "$work/cache-1"
fi
if [[ -n "$narrator" ]]; then
    echo "## a long recording (3 minutes), clean and with 10 s of noise in the middle"
    python3 "$here/align-eval/long.py" "$narrator" "$work/long-clean"
    python3 "$here/align-eval/long.py" "$narrator" "$work/long-noise" --noise
    if ls "$work/real"/*.json >/dev/null 2>&1; then
        echo "## real speech read at length: the real clips end to end, ten times (one speaker, then all)"
        python3 "$here/align-eval/long_real.py" "$narrator" "$work/real" "$work/long-real-one" --only emuR
        python3 "$here/align-eval/long_real.py" "$narrator" "$work/real" "$work/long-real-all"
    fi
fi
echo "## confidence predictors (words > 50 ms off)"
(cd "$work" && python3 "$here/align-eval/confidence.py" --sets real synth/clean synth/bed20 \
    --system ps+deep+bias5+edges --cache "$work/cache-1" 2>/dev/null | tail -n +1) || true
echo "bench-align: work files in $work"
