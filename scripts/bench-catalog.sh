#!/usr/bin/env bash
# A catalog benchmark: the four batch commands over a generated catalog (scripts/make-catalog.py:
# CLIPS tone clips with word timings, 20 a lesson, a chain of 5 clips each; SPEECH sentences
# spoken by espeak-ng for align, which runs aeneas and is far slower a clip), in a temp folder.
# Each command runs as 1 worker (--shard 1/1 on core 0) and as 2 workers at once (--shard 1/2 on
# core 0, 2/2 on core 1), NARRATOR_JOBS=1 each: clips per second per core, and the scaling
# 1 → 2 workers (2.00 would be perfect), by wall time and by CPU time (the latter what the
# scaling would be with both cores to itself, on a machine others are using). The per-shard overhead is one worker of 100000 (--shard
# 1/100000: the whole catalog read and numbered, one item done); the last step is merge, or
# pack --finish. From them, the wall time projected for 100 nodes of 2 cores (200 workers):
#   overhead + (clips / 200) / (clips per second per core) + last step.
#
# A benchmark, not a test: the figures are informational (the sharded results are tested equal
# to unsharded ones by ShardedBatchTests and make test-slurm); exit status non-zero only when a
# command fails.
#
# Environment:
#   NARRATOR=path   this narrator instead of a release build (scripts/bench-lib.sh)
#   CLIPS=N         clips in the catalog (default 10000)
#   SPEECH=N        sentences for align (default 8)
#   COMMANDS="…"    which of align validate render-all pack (default all four)

set -euo pipefail
export LC_ALL=C
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
clips=${CLIPS:-10000}
speech=${SPEECH:-8}
commands=${COMMANDS:-validate render-all pack align}
say() { printf '%s\n' "$*" >&2; }
die() { say "bench-catalog: $*"; exit 1; }
command -v taskset >/dev/null || die "taskset is not installed (util-linux)"
[[ -x /usr/bin/time ]] || die "/usr/bin/time is not installed (apt-get install time)"
[[ $(nproc) -ge 2 ]] || die "needs 2 cores, this machine has $(nproc)"
# shellcheck source=scripts/bench-lib.sh
source "$repo/scripts/bench-lib.sh"
bench_narrator bench-catalog
unset SLURM_ARRAY_TASK_ID JOB_COMPLETION_INDEX

work=$(mktemp -d /tmp/narrator-catalog.XXXXXX)
trap 'rm -rf "$work"' EXIT
catalog=$work/catalog
start=$(date +%s.%N)
python3 "$repo/scripts/make-catalog.py" "$catalog" --clips "$clips" --per-lesson 20 --chain 5 --speech "$speech" >&2
say "bench-catalog: catalog generated in $(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.0f", b - a }') s ($(du -sh "$catalog" | cut -f1))"

now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", b - a }'; }

# shard_args COMMAND OUT SHARD PART: the command's arguments for one worker.
shard_args() {
	local command=$1 out=$2 shard=$3 part=$4
	case $command in
	align) echo align --manifest "$catalog/manifest.jsonl" --to "$out/aligned" --shard "$shard" --report "$part" ;;
	validate) echo validate "$catalog/lessons" --no-progress --shard "$shard" --report "$part" ;;
	render-all) echo render-all "$catalog/lessons" --to "$out/rendered" --ext flac --seed 7 --no-progress --shard "$shard" --report "$part" ;;
	pack) echo pack "$catalog/lessons" --to "$out/packed" --format opus --no-progress --shard "$shard" ;;
	esac
}
# worker CORE COMMAND OUT SHARD PART: one worker on one core, its CPU seconds (user + system) in
# $work/cpu.CORE; validate's exit 1 (findings) is an answer.
worker() {
	local core=$1
	shift
	# shellcheck disable=SC2046
	NARRATOR_JOBS=1 /usr/bin/time -f "%U %S" -o "$work/cpu.$core" taskset -c "$core" "$narrator" $(shard_args "$@") >/dev/null 2>"$work/err.$core" || {
		local status=$?
		[[ $status == 1 && $2 == validate ]] || { cat "$work/err.$core" >&2; die "failed: $*"; }
	}
}
# last_step COMMAND OUT: merge the parts, or pack --finish.
last_step() {
	local command=$1 out=$2
	if [[ $command == pack ]]; then
		"$narrator" pack "$catalog/lessons" --to "$out/packed" --format opus --no-progress --finish >/dev/null
	else
		"$narrator" merge "$out"/part-*.jsonl --to "$out/merged.jsonl" >/dev/null
	fi
}

printf 'catalog benchmark: %s clips (%s spoken for align), %s, load average %s\n' "$clips" "$speech" "$(nproc) cores" "$(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-11s %6s %17s %8s %17s %8s %9s %9s %10s\n' "" "" "by wall time" "" "by CPU time" "" "" "" ""
printf '%-11s %6s %8s %8s %8s %8s %8s %8s %9s %9s %10s\n' command items "1 worker" "2 workers" scaling "1 worker" "2 workers" scaling overhead "last step" "100 nodes"
for command in $commands; do
	items=$clips
	[[ $command == align ]] && items=$speech
	# 1 worker.
	out=$work/one
	rm -rf "$out" && mkdir -p "$out"
	t0=$(now)
	worker 0 "$command" "$out" 1/1 "$out/part-1.jsonl"
	one=$(elapsed "$t0" "$(now)")
	cpu_one=$(awk '{ print $1 + $2 }' "$work/cpu.0")
	# 2 workers at once, one a core.
	out=$work/two
	rm -rf "$out" && mkdir -p "$out"
	t0=$(now)
	worker 0 "$command" "$out" 1/2 "$out/part-1.jsonl" &
	first=$!
	worker 1 "$command" "$out" 2/2 "$out/part-2.jsonl"
	wait "$first"
	two=$(elapsed "$t0" "$(now)")
	cpu_two=$(awk '{ t = $1 + $2; if (t > m) m = t } END { print m }' "$work/cpu.0" "$work/cpu.1")
	t0=$(now)
	last_step "$command" "$out"
	last=$(elapsed "$t0" "$(now)")
	# The overhead of one more shard: the catalog read and numbered, one item done.
	out=$work/overhead
	rm -rf "$out" && mkdir -p "$out"
	t0=$(now)
	worker 0 "$command" "$out" 1/100000 "$out/part-1.jsonl"
	overhead=$(elapsed "$t0" "$(now)")
	awk -v c="$command" -v n="$items" -v one="$one" -v two="$two" -v o="$overhead" -v l="$last" -v full="$clips" \
		-v cpu1="$cpu_one" -v cpu2="$cpu_two" 'BEGIN {
		rate1 = n / one; rate2 = n / two / 2
		# By CPU: clips per CPU second of the one worker, and of the busier of the two (its half).
		cpurate1 = n / cpu1; cpurate2 = n / 2 / cpu2
		# 100 nodes of 2 cores to themselves: this catalog (align: its rate, over as many clips as
		# the catalog has) at the 2-worker rate by CPU.
		wall = o + (full / 200) / cpurate2 + l
		printf "%-11s %6d %8.1f %8.1f %7.2fx %8.1f %8.1f %7.2fx %8.2fs %8.2fs %9.1fs\n", c, n, rate1, rate2, one / two, cpurate1, cpurate2, cpu1 / cpu2, o, l, wall
	}'
done
printf '(workers: clips a second a core. By wall time: clips / wall seconds (/ 2 for 2 workers), scaling = wall of 1 / wall of 2.\n'
printf ' By CPU time: clips / CPU seconds of the worker (for 2: its half / the busier one), scaling = CPU of 1 / CPU of the busier\n'
printf ' of 2, the scaling with both cores to itself on a shared machine. 100 nodes: %s clips over 200 workers at the 2-worker\n' "$clips"
printf ' rate by CPU, each paying the overhead, then the last step)\n'
printf 'load average after: %s\n' "$(cut -d' ' -f1-3 /proc/loadavg)"
