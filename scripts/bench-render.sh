#!/usr/bin/env bash
# Benchmark of `narrator render` against sox concatenating the same files.
#
# Renders chains of about 1, 10 and 60 minutes made of the committed 48 kHz mono 16-bit
# fixture clips, a 10-minute chain of 1,300 short clips cycling through 6 files, and a
# 10-minute chain of 1,200 short clips (0.2-0.8 s, 80 distinct files
# made here with sox: the shape of batch work, where per-clip and per-file costs show),
# played back to back with no silence, and times each render against
# `sox f1.wav f2.wav ... out.wav` over exactly the same files in the same order, in the
# same run. Prints wall time (best of 3), peak memory (max RSS over the 3 runs), the speed
# ratio (sox time / narrator time: above 1 means narrator is faster; of the best runs, and of
# the median runs, which load from other work on the machine moves less) and the real-time
# factor, and checks that both outputs carry bit-identical samples.
#
# This is a benchmark, not a test: the figures are informational. The exit status is
# non-zero only on a real failure (a build or command fails, or the outputs differ).
#
# Usage:
#   scripts/bench-render.sh
# Environment:
#   NARRATOR=path       use this narrator binary instead of building one
#   BENCH_BUILD=plain   build with plain `swift build -c release` (what a SwiftPM user gets,
#                       scratch path .build-bench-plain) instead of the shipped build
#                       (scripts/build-release.sh); both link the Swift runtime statically
#   BENCH_RUNS=N        runs per measurement (default 3; the best wall time is kept)
#   BENCH_LONG=auto|1|0 the 60-minute chain: auto (default) runs it only when the
#                       10-minute figures say it takes under a minute; 1 always; 0 never
#
# The release builds go to .build-bench and .build-bench-plain (not .build), so they never clash
# with a debug `swift build`/`swift test` running in the same checkout.

set -euo pipefail
export LC_ALL=C

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
runs=${BENCH_RUNS:-3}
long=${BENCH_LONG:-auto}
rate=48000

say() { printf '%s\n' "$*" >&2; }
die() { say "bench-render: $*"; exit 1; }

for tool in sox soxi sha256sum awk; do
    command -v "$tool" >/dev/null || die "$tool is not installed"
done
[[ -x /usr/bin/time ]] || die "GNU time (/usr/bin/time) is not installed"
[[ -n ${EPOCHREALTIME:-} ]] || die "bash 5 or later is needed (EPOCHREALTIME)"

script_start=$EPOCHREALTIME

# --- 1. The binary ------------------------------------------------------------------------
# shellcheck source=scripts/bench-lib.sh
source "$repo/scripts/bench-lib.sh"
bench_narrator bench-render

# --- 2. The fixtures and the lessons ---------------------------------------------------------
clips=(
    "$repo/Audio/fixtures/sentence.wav"
    "$repo/Audio/lessons/sight-words/part1.wav"
    "$repo/Audio/lessons/sight-words/part2.wav"
    "$repo/Audio/lessons/congrats/great-job.wav"
    "$repo/Audio/lessons/congrats/well-done.wav"
    "$repo/Audio/lessons/congrats/awesome.wav"
    "$repo/Audio/lessons/sfx/whoosh.wav"
)
frames=()
for clip in "${clips[@]}"; do
    [[ -f $clip ]] || die "missing fixture $clip"
    [[ $clip != *[\"\\]* ]] || die "fixture path not JSON-safe: $clip"
    format="$(soxi -r "$clip") $(soxi -c "$clip") $(soxi -b "$clip") $(soxi -e "$clip")"
    [[ $format == "$rate 1 16 Signed Integer PCM" ]] ||
        die "$clip is not 48 kHz mono 16-bit PCM ($format)"
    frames+=("$(soxi -s "$clip")")
done

work=$(mktemp -d "${TMPDIR:-/tmp}/bench-render.XXXXXX")
trap 'rm -rf "$work"' EXIT

# Writes $work/chain-M.json (lesson), $work/chain-M.list (the files, one a line) and
# prints the chain's length in frames: clips cycled in order until it lasts M minutes.
make_chain() {
    local minutes=$1 target=$(($1 * 60 * rate)) total=0 i=0 c n=${#clips[@]} sep=
    local lesson=$work/chain-$minutes.json list=$work/chain-$minutes.list
    : >"$list"
    {
        printf '{"sampleRate": %d, "channels": 1,\n "clips": {' "$rate"
        for ((c = 0; c < n; c++)); do
            printf '%s\n  "c%d": {"file": "%s"}' "$sep" "$c" "${clips[c]}"
            sep=,
        done
        sep=
        printf '},\n "chains": {"bench": ['
        while ((total < target)); do
            printf '%s{"clip": "c%d"}' "$sep" $((i % n))
            sep=,
            printf '%s\n' "${clips[i % n]}" >>"$list"
            total=$((total + frames[i % n]))
            i=$((i + 1))
        done
        printf ']}}\n'
    } >"$lesson"
    echo "$total"
}

# The short-clip chains: N distinct clips of 0.2 to 0.8 s (a tone each over pink noise, their
# lengths spread over the range), COUNT of them in a scrambled order: "short" is 80 files
# 1,200 times (about 10 minutes), "few" is 6 files 1,300 times (a handful of clips cycled, as a
# drill lesson is: per-clip costs, not per-file ones).
# make_short_chain NAME N COUNT: writes $work/chain-NAME.json and .list like make_chain and
# prints the length in frames.
make_short_chain() {
    local name=$1 n=$2 count=$3 k d total=0 sep= lesson=$work/chain-$1.json list=$work/chain-$1.list
    local -a short_frames=()
    mkdir -p "$work/$name"
    for ((k = 0; k < n; k++)); do
        d=$(awk -v k="$k" -v n="$n" 'BEGIN { printf "%.4f", 0.2 + 0.6 * ((k * 37) % n) / (n - 1) }')
        sox -n -r "$rate" -c 1 -b 16 "$work/$name/s$k.wav" synth "$d" sine $((200 + k * 13)) \
            synth "$d" pinknoise mix vol 0.4 || die "sox could not make the short clips"
        short_frames+=("$(soxi -s "$work/$name/s$k.wav")")
    done
    : >"$list"
    {
        printf '{"sampleRate": %d, "channels": 1,\n "clips": {' "$rate"
        for ((k = 0; k < n; k++)); do
            printf '%s\n  "s%d": {"file": "%s"}' "$sep" "$k" "$work/$name/s$k.wav"
            sep=,
        done
        sep=
        printf '},\n "chains": {"bench": ['
        for ((i = 0; i < count; i++)); do
            k=$(((i * 53 + i / n) % n))
            printf '%s{"clip": "s%d"}' "$sep" "$k"
            sep=,
            printf '%s\n' "$work/$name/s$k.wav" >>"$list"
            total=$((total + short_frames[k]))
        done
        printf ']}}\n'
    } >"$lesson"
    echo "$total"
}

# --- 3. Measurements -------------------------------------------------------------------------
# measure OUT_PREFIX cmd...: runs cmd $runs times under GNU time; sets
# best_wall (seconds, from EPOCHREALTIME, best run), median_wall (the median run) and peak_kib
# (max RSS over the runs).
measure() {
    local errfile=$work/cmd.err timefile=$work/time.txt
    best_wall=
    median_wall=
    peak_kib=0
    local -a walls=()
    for ((r = 1; r <= runs; r++)); do
        local t0=$EPOCHREALTIME
        if ! /usr/bin/time -f '%e %M' -o "$timefile" "$@" >/dev/null 2>"$errfile"; then
            say "command failed: ${*:1:4} ..."
            cat "$errfile" >&2
            tail -n 2 "$timefile" >&2 || true
            return 1
        fi
        local t1=$EPOCHREALTIME
        local wall kib
        wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.4f", b - a }')
        kib=$(tail -n 1 "$timefile" | awk '{ print $2 }')
        if [[ -z $best_wall ]] || awk -v w="$wall" -v b="$best_wall" 'BEGIN { exit !(w < b) }'; then
            best_wall=$wall
        fi
        ((kib > peak_kib)) && peak_kib=$kib
        walls+=("$wall")
    done
    median_wall=$(printf '%s\n' "${walls[@]}" | sort -g | awk '{ w[NR] = $1 } END { printf "%.4f", NR % 2 ? w[(NR + 1) / 2] : (w[NR / 2] + w[NR / 2 + 1]) / 2 }')
    return 0
}

# Samples of a file as raw s16, hashed (header-independent comparison).
sample_hash() { sox "$1" -t s16 - | sha256sum | awk '{ print $1 }'; }

# sox opens every input file at once: make sure the open-file limit allows it.
raise_nofile() {
    local need=$(($1 + 64)) soft hard
    soft=$(ulimit -Sn)
    [[ $soft == unlimited ]] && return 0
    ((soft >= need)) && return 0
    hard=$(ulimit -Hn)
    if [[ $hard != unlimited ]] && ((hard < need)); then
        ulimit -n "$hard" 2>/dev/null || true
        return 1
    fi
    ulimit -n "$need" 2>/dev/null
}

lengths=(1 10 60 short few)
declare -A row_frames row_n_med row_s_med row_n_wall row_n_kib row_s_wall row_s_kib row_files row_same
failed=0
notes=()
measured=()

for minutes in "${lengths[@]}"; do
    if [[ $minutes == 60 ]]; then
        case $long in
        0) notes+=("60-min chain skipped (BENCH_LONG=0)"); continue ;;
        1) ;;
        *)
            # Estimate from the 10-minute figures: 6x, both tools, $runs runs, plus checks.
            estimate=$(awk -v n="${row_n_wall[10]:-0}" -v s="${row_s_wall[10]:-0}" -v r="$runs" \
                'BEGIN { printf "%.0f", 6 * (n + s) * (r + 1) }')
            if ((estimate > 60)); then
                notes+=("60-min chain skipped: estimated ${estimate} s from the 10-min figures (BENCH_LONG=1 forces it)")
                continue
            fi
            ;;
        esac
    fi

    if [[ $minutes == short ]]; then
        total=$(make_short_chain short 80 1200)
    elif [[ $minutes == few ]]; then
        total=$(make_short_chain few 6 1300)
    else
        total=$(make_chain "$minutes")
    fi
    list=$work/chain-$minutes.list
    mapfile -t files <"$list"
    row_frames[$minutes]=$total
    row_files[$minutes]=${#files[@]}
    say "[$minutes min] ${#files[@]} clips, $total frames: narrator render x$runs..."

    n_out=$work/narrator-$minutes.wav
    s_out=$work/sox-$minutes.wav
    if ! measure "$narrator" render "$work/chain-$minutes.json" --chain bench --output "$n_out"; then
        failed=1
        notes+=("$minutes min: narrator render failed")
        continue
    fi
    row_n_wall[$minutes]=$best_wall
    row_n_med[$minutes]=$median_wall
    row_n_kib[$minutes]=$peak_kib

    say "[$minutes min] sox concatenation of the same ${#files[@]} files x$runs..."
    if ! raise_nofile "${#files[@]}"; then
        notes+=("$minutes min: sox needs ${#files[@]} open files, over the hard limit $(ulimit -Hn): sox not run")
        row_s_wall[$minutes]=
        row_same[$minutes]="n/a"
    elif ! measure sox "${files[@]}" "$s_out"; then
        failed=1
        notes+=("$minutes min: sox failed")
        row_same[$minutes]="n/a"
    else
        row_s_wall[$minutes]=$best_wall
        row_s_med[$minutes]=$median_wall
        row_s_kib[$minutes]=$peak_kib
    fi

    # Checks: length, format and samples.
    n_frames=$(soxi -s "$n_out")
    n_format="$(soxi -r "$n_out") $(soxi -c "$n_out") $(soxi -b "$n_out")"
    if [[ $n_frames != "$total" || $n_format != "$rate 1 16" ]]; then
        failed=1
        notes+=("$minutes min: narrator output is $n_frames frames ($n_format), expected $total ($rate 1 16)")
    fi
    if [[ -n ${row_s_wall[$minutes]:-} ]]; then
        say "[$minutes min] comparing samples..."
        s_frames=$(soxi -s "$s_out")
        [[ $s_frames == "$total" ]] || notes+=("$minutes min: sox output is $s_frames frames, expected $total")
        if [[ $(sample_hash "$n_out") == "$(sample_hash "$s_out")" ]]; then
            row_same[$minutes]=yes
        else
            row_same[$minutes]=NO
            failed=1
            notes+=("$minutes min: narrator and sox outputs DIFFER")
        fi
    fi
    rm -f "$n_out" "$s_out"
    measured+=("$minutes")
done

# --- 4. Report -------------------------------------------------------------------------------
mib() { awk -v k="$1" 'BEGIN { printf "%.1f", k / 1024 }'; }

echo
echo "narrator render vs sox concatenation, 48 kHz mono s16, no gaps: fixtures cycled (1/10/60 min);"
echo "short: 1,200 clips of 0.2-0.8 s (80 files); few: 1,300 clips of 0.2-0.8 s (6 files)"
echo "binary: $narrator"
echo "wall: best of $runs runs; RSS: peak over the runs; speed = sox wall / narrator wall"
echo "(> 1: narrator faster); median = the same over the median runs; realtime = audio seconds"
echo "per narrator wall second"
echo
printf '%6s %6s %11s %10s %11s %10s %11s %7s %7s %9s %10s\n' \
    "min" "clips" "frames" "narr s" "narr MiB" "sox s" "sox MiB" "speed" "median" "realtime" "identical"
for minutes in "${measured[@]}"; do
    f=${row_frames[$minutes]}
    nw=${row_n_wall[$minutes]}
    audio_min=$(awk -v f="$f" -v r="$rate" 'BEGIN { printf "%.2f", f / r / 60 }')
    [[ $minutes == short || $minutes == few ]] && audio_min+=s
    realtime=$(awk -v f="$f" -v r="$rate" -v w="$nw" 'BEGIN { printf "%.0fx", f / r / w }')
    if [[ -n ${row_s_wall[$minutes]:-} ]]; then
        sw=${row_s_wall[$minutes]}
        skib=$(mib "${row_s_kib[$minutes]}")
        speed=$(awk -v s="$sw" -v n="$nw" 'BEGIN { printf "%.2f", s / n }')
        median=$(awk -v s="${row_s_med[$minutes]}" -v n="${row_n_med[$minutes]}" 'BEGIN { printf "%.2f", s / n }')
    else
        sw="-" skib="-" speed="-" median="-"
    fi
    printf '%6s %6s %11s %10s %11s %10s %11s %7s %7s %9s %10s\n' \
        "$audio_min" "${row_files[$minutes]}" "$f" "$nw" "$(mib "${row_n_kib[$minutes]}")" \
        "$sw" "$skib" "$speed" "$median" "$realtime" "${row_same[$minutes]}"
done
echo
for note in "${notes[@]+"${notes[@]}"}"; do echo "note: $note"; done

summary=()
for minutes in 1 10 60; do
    if [[ -n ${row_n_kib[$minutes]:-} ]]; then summary+=("$(mib "${row_n_kib[$minutes]}")"); else summary+=("-"); fi
done
echo "memory 1-min vs 10-min vs 60-min: ${summary[0]} / ${summary[1]} / ${summary[2]} MiB"
awk -v a="$script_start" -v b="$EPOCHREALTIME" 'BEGIN { printf "(benchmark took %.1f s end to end)\n", b - a }'

exit "$failed"
