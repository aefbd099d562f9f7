#!/usr/bin/env bash
# Batch work on both cores: `narrator validate`, `pack` and `render-all` of the sample library
# (Timings/lessons), each timed on one core (taskset -c 0 and NARRATOR_JOBS=1: one item at a
# time, in order) and on every core the machine has, in the same run. Prints the best wall time
# of RUNS runs of each and the ratio one core / all cores (2.0 would be perfect on 2 cores).
#
# A benchmark, not a test: figures are informational; the exit status is non-zero only when a
# build or a command fails. The sequential and parallel results are checked equal by
# Tests/NarratorCLITests/BatchParallelTests.swift.
#
# Usage:
#   scripts/bench-batch.sh
# Environment:
#   NARRATOR=path   use this narrator binary instead of building one (release, .build-bench)
#   RUNS=N          runs of each (default 5; the best wall time is kept)
#   FORMAT=F        pack's --format (default opus)

set -euo pipefail
export LC_ALL=C

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
runs=${RUNS:-5}
format=${FORMAT:-opus}
say() { printf '%s\n' "$*" >&2; }
die() { say "bench-batch: $*"; exit 1; }
command -v taskset >/dev/null || die "taskset is not installed (util-linux)"

# shellcheck source=scripts/bench-lib.sh
source "$repo/scripts/bench-lib.sh"
bench_narrator bench-batch

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
library=$repo/Timings/lessons
cores=$(nproc)

# best_of COMMAND...: the best wall time in seconds of RUNS runs.
best_of() {
    local best="" start end t
    for _ in $(seq "$runs"); do
        rm -rf "$work/out"
        start=$(date +%s.%N)
        # validate exits 1 when the library has errors: that is its answer, not a failure.
        "$@" >/dev/null 2>&1 || { status=$?; [[ $status == 1 && " $* " == *" validate "* ]] || die "failed: $*"; }
        end=$(date +%s.%N)
        t=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.3f", b - a }')
        if [[ -z $best ]] || awk -v t="$t" -v b="$best" 'BEGIN { exit !(t < b) }'; then best=$t; fi
    done
    printf '%s' "$best"
}

printf 'batch work on the sample library (%s lessons), best of %s runs, %s cores:\n' \
    "$(ls "$library"/*.json | wc -l)" "$runs" "$cores"
printf '%-28s %10s %10s %8s\n' command "1 core" "all cores" ratio
for name in validate pack render-all; do
    if [[ $name == validate ]]; then
        args=(validate "$library" --no-progress)
    elif [[ $name == pack ]]; then
        args=(pack "$library" --to "$work/out" --format "$format" --no-progress)
    else
        args=(render-all "$library" --to "$work/out" --ext flac --seed 7 --no-progress)
    fi
    one=$(best_of env NARRATOR_JOBS=1 taskset -c 0 "$narrator" "${args[@]}")
    all=$(best_of env "$narrator" "${args[@]}")
    label=$name
    [[ $name == pack ]] && label="pack --format $format"
    [[ $name == render-all ]] && label="render-all --ext flac"
    printf '%-28s %9ss %9ss %8s\n' "$label" "$one" "$all" "$(awk -v a="$one" -v b="$all" 'BEGIN { printf "%.2f", a / b }')"
done
