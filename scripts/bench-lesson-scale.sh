#!/usr/bin/env bash
# How lesson loading and scheduling scale: `narrator cues` (release build) on lessons of a
# million chain items, pool draws, pulse targets and activity steps, generated into a temporary
# folder by scripts/make-huge-lessons.py (nothing big is committed). Prints wall time and peak
# memory (GNU time's maximum resident set size) for each; the target is under 2 s and 256 MiB.
#
# Usage:   scripts/bench-lesson-scale.sh [N]        (N defaults to 1000000)
# Environment: NARRATOR=path  use this binary instead of .build/release/narrator
set -euo pipefail
export LC_ALL=C
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
n=${1:-1000000}
narrator=${NARRATOR:-$repo/.build/release/narrator}
[[ -x $narrator ]] || { echo "build it first: swift build -c release --product narrator" >&2; exit 1; }
[[ -x /usr/bin/time ]] || { echo "GNU time (/usr/bin/time) is not installed" >&2; exit 1; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
python3 "$repo/scripts/make-huge-lessons.py" "$dir" "$n"
measure() {
    local name=$1; shift
    local status=0
    /usr/bin/time -v -o "$dir/time.txt" "$narrator" cues "$@" >"$dir/out.json" 2>"$dir/err.txt" || status=$?
    local seconds kib cues
    seconds=$(awk -F': ' '/Elapsed \(wall clock\)/ {n = split($2, p, ":"); s = 0; for (i = 1; i <= n; i++) s = s * 60 + p[i]; print s}' "$dir/time.txt")
    kib=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$dir/time.txt")
    cues=$(grep -c '"type":' "$dir/out.json" || true)
    printf '%-10s exit %d  %6.2f s  %5d MiB  %8d cues  %s\n' "$name" "$status" "$seconds" $((kib / 1024)) "$cues" "$(head -c 100 "$dir/err.txt")"
}
echo "narrator cues, N = $n ($narrator)"
measure chain "$dir/chain.json" --chain c --seed 1
measure unplayed "$dir/unplayed.json" --chain c --seed 1
measure silence "$dir/silence.json" --chain c --seed 1
measure pool "$dir/pool.json" --chain c --seed 1
measure pulse "$dir/pulse.json" --chain c --seed 1
measure steps "$dir/steps.json" --activity a --taps 0.5:a0,1:a1
measure nested "$dir/nested.json" --chain c
