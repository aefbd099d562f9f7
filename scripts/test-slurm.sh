#!/usr/bin/env bash
# `make test-slurm`: the four batch commands on a real Slurm scheduler. A one-machine cluster
# (scripts/slurm-test-cluster.sh: munged, slurmctld, slurmd on 127.0.0.1, as root, in a temp
# folder) runs align, validate, render-all and pack of a generated catalog as `sbatch --array`
# jobs of scripts/slurm/narrator-task.sbatch (--shard auto); then merge and pack --finish, and
# everything is compared byte for byte with one unsharded run. Task 2 of align is killed while it
# runs (scancel JOBID_2), and task 1 of render-all and of pack before they start: merge and pack
# --finish refuse, writing nothing; the align task requeued (scontrol requeue) and the other two
# resubmitted alone (task 1 of the same array), all complete. Fails (exit 1) at the first difference.
#
#   NARRATOR=.build/debug/narrator bash scripts/test-slurm.sh
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
narrator=$(cd "$(dirname "${NARRATOR:-.build/debug/narrator}")" && pwd)/narrator
[ -x "$narrator" ] || { echo "test-slurm: $narrator not built (swift build)" >&2; exit 1; }
[ "$(id -u)" = 0 ] || { echo "test-slurm: slurmd and munged run as root here: run as root" >&2; exit 1; }
export PATH="$(dirname "$narrator"):/usr/sbin:$PATH"
unset SLURM_JOB_ID SLURM_ARRAY_TASK_ID SLURM_ARRAY_TASK_MIN SLURM_ARRAY_TASK_MAX SLURM_ARRAY_TASK_STEP SLURM_ARRAY_TASK_COUNT \
	JOB_COMPLETION_INDEX NARRATOR_SHARD_COUNT

tmp=$(mktemp -d /tmp/narrator-slurm.XXXXXX)
started=$(date +%s)
cleanup() {
	bash "$repo/scripts/slurm-test-cluster.sh" stop "$tmp/cluster" || true
	[ -n "${KEEP:-}" ] && echo "test-slurm: kept $tmp" || rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
fail() {
	echo "test-slurm: FAILED: $*" >&2
	for log in "$tmp"/logs/*.out; do [ -s "$log" ] && { echo "--- $log"; tail -n 5 "$log"; }; done >&2
	exit 1
}
step() { echo "test-slurm: [$(($(date +%s) - started)) s] $*"; }

catalog=$tmp/catalog
python3 scripts/make-catalog.py "$catalog" --clips 120 --per-lesson 10 --chain 5 --speech 5 >/dev/null
job=$repo/scripts/slurm/narrator-task.sbatch

# The cluster first: it comes up while the unsharded run goes.
eval "$(bash scripts/slurm-test-cluster.sh start "$tmp/cluster")"
step "cluster up: $(sinfo -h -o '%P %a %D %t %C')"

# One unsharded run of each, as one machine would.
whole=$tmp/whole
mkdir -p "$whole"
status=0
narrator align --manifest "$catalog/manifest.jsonl" --to "$whole/aligned" --report "$whole/align.jsonl" >/dev/null || fail "unsharded align"
narrator validate "$catalog/lessons" --no-progress --report "$whole/validate.jsonl" >/dev/null || status=$?
[ "$status" -le 1 ] || fail "unsharded validate: exit $status"
narrator render-all "$catalog/lessons" --to "$whole/rendered" --ext flac --seed 7 --no-progress --report "$whole/render-all.jsonl" >/dev/null ||
	fail "unsharded render-all"
narrator pack "$catalog/lessons" --to "$whole/packed" --format opus --no-progress >"$whole/pack.txt" || fail "unsharded pack"
step "unsharded run done"

# Each command a job array: align from 1 (1-3), the others from 0 (0-2). render-all and pack are
# submitted held, their task 1 cancelled, then released: those two arrays end incomplete.
out=$tmp/sharded
mkdir -p "$tmp/logs"
align=$(sbatch --parsable --job-name=align --array=1-3 --output="$tmp/logs/%x-%a.out" "$job" align "$catalog" "$out")
# Task 2 of align killed while it runs (aeneas takes a second or more to start): its report is
# written whole at the end or not at all, so none is left.
deadline=$(($(date +%s) + 60))
until [ "$(squeue -h -j "${align}_2" -o %T 2>/dev/null)" = RUNNING ]; do
	[ "$(date +%s)" -lt "$deadline" ] || fail "task 2 of align did not start in 60 s"
	sleep 0.1
done
scancel "${align}_2"
validate=$(sbatch --parsable --job-name=validate --array=0-2 --output="$tmp/logs/%x-%a.out" "$job" validate "$catalog" "$out")
render=$(sbatch --parsable --hold --job-name=render-all --array=0-2 --output="$tmp/logs/%x-%a.out" "$job" render-all "$catalog" "$out")
pack=$(sbatch --parsable --hold --job-name=pack --array=0-2 --output="$tmp/logs/%x-%a.out" "$job" pack "$catalog" "$out")
scancel "${render}_1" "${pack}_1"
scontrol release "$render" "$pack"
step "submitted: align $align, validate $validate, render-all $render, pack $pack (task 1 of render-all and pack cancelled)"

# Until no task of these arrays is pending or running.
wait_for() {
	local deadline=$(($(date +%s) + 150))
	while squeue -h -j "$(IFS=,; echo "$*")" -t PENDING,RUNNING,CONFIGURING,COMPLETING 2>/dev/null | grep -q .; do
		[ "$(date +%s)" -lt "$deadline" ] || { squeue -t all >&2; fail "the arrays did not finish in 150 s"; }
		sleep 0.5
	done
}
wait_for "$align" "$validate" "$render" "$pack"
state() { scontrol show job "$1" | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p' | head -1; }
for task in "${align}_1" "${align}_3" "${validate}_0" "${validate}_1" "${validate}_2" "${render}_0" "${render}_2" "${pack}_0" "${pack}_2"; do
	[ "$(state "$task")" = COMPLETED ] || fail "task $task ended $(state "$task")"
done
[ ! -e "$out/parts/render-all-1.jsonl" ] && [ ! -e "$out/packed/.narrator-pack/shard-2-of-3.jsonl" ] ||
	fail "task 1 of render-all or pack was not cancelled"
killed=$(state "${align}_2")
case "$killed" in
CANCELLED)
	[ ! -e "$out/parts/align-2.jsonl" ] || fail "task 2 of align, killed, left a part"
	if narrator merge "$out"/parts/align-*.jsonl --to "$out/align.jsonl" 2>"$tmp/refused.txt"; then fail "merge took an incomplete align"; fi
	grep -q "missing the report of shard 2/3" "$tmp/refused.txt" || fail "merge's refusal: $(cat "$tmp/refused.txt")"
	# A task that ran keeps its record: requeued in its array, it is shard 2/3 again.
	scontrol requeue "${align}_2"
	scontrol update jobid="${align}_2" StartTime=now
	;;
COMPLETED) echo "test-slurm: note: task 2 of align finished before scancel reached it (a race the kill lost); not requeued" ;;
*) fail "task 2 of align ended $killed" ;;
esac
step "arrays done; align's task 2 killed while it ran ($killed), render-all and pack are missing their task 1"

# The incomplete results are refused, and nothing is written.
if narrator merge "$out"/parts/render-all-*.jsonl --to "$out/render-all.jsonl" 2>"$tmp/refused.txt"; then fail "merge took an incomplete render-all"; fi
grep -q "missing the report of shard 2/3" "$tmp/refused.txt" || fail "merge's refusal: $(cat "$tmp/refused.txt")"
[ ! -e "$out/render-all.jsonl" ] || fail "merge wrote a partial report"
if narrator pack "$catalog/lessons" --to "$out/packed" --format opus --no-progress --finish >/dev/null 2>"$tmp/refused.txt"; then
	fail "pack --finish took an incomplete pack"
fi
grep -q "missing the marker of shard 2/3" "$tmp/refused.txt" || fail "pack --finish's refusal: $(cat "$tmp/refused.txt")"
[ -z "$(find "$out/packed" -name 'lesson-*.json')" ] || fail "pack --finish wrote lessons from an incomplete pack"
step "merge and pack --finish refuse the incomplete arrays: $(cat "$tmp/refused.txt")"

# That one task again, as task 1 of an array 0-2 (so that it keeps its K of N, 2/3): the array
# submitted held, its other tasks cancelled, then released. (A task cancelled while it ran keeps
# its record, and `scontrol requeue JOBID_1` reruns it; one cancelled before it started has none.)
render=$(sbatch --parsable --hold --job-name=render-all --array=0-2 --output="$tmp/logs/%x-%a.out" "$job" render-all "$catalog" "$out")
pack=$(sbatch --parsable --hold --job-name=pack --array=0-2 --output="$tmp/logs/%x-%a.out" "$job" pack "$catalog" "$out")
scancel "${render}_0" "${render}_2" "${pack}_0" "${pack}_2"
scontrol release "$render" "$pack"
wait_for "$render" "$pack" "$align"
[ "$(state "${render}_1")" = COMPLETED ] && [ "$(state "${pack}_1")" = COMPLETED ] || fail "the resubmitted tasks did not complete"
[ "$(state "${align}_2")" = COMPLETED ] || fail "the requeued align task did not complete"
grep -q "(shard 2/3: " "$tmp/logs/render-all-1.out" || fail "the resubmitted render-all task was not shard 2/3"
step "align's task 2 requeued, task 1 of render-all and pack resubmitted alone: all completed"

# Merged and finished: byte for byte the unsharded run.
for command in align validate render-all; do
	narrator merge "$out"/parts/$command-*.jsonl --to "$out/$command.jsonl" >/dev/null || fail "merge of $command"
	cmp "$whole/$command.jsonl" "$out/$command.jsonl" || fail "$command: the merged report differs from the unsharded run's"
done
narrator pack "$catalog/lessons" --to "$out/packed" --format opus --no-progress --finish >"$out/pack.txt" || fail "pack --finish"
diff <(sed "s|$whole|DIR|g" "$whole/pack.txt") <(sed "s|$out|DIR|g" "$out/pack.txt") || fail "pack --finish's report differs"
for folder in aligned rendered packed; do
	diff -r "$whole/$folder" "$out/$folder" >&2 || fail "$folder: the sharded files differ from the unsharded run's"
done
files=$(find "$out/aligned" "$out/rendered" "$out/packed" -type f | wc -l)
grep -q '"words": ' "$out/align.jsonl" || fail "align aligned nothing"
step "PASSED: align, validate, render-all and pack by Slurm arrays of 3 equal one unsharded run ($files files and 3 reports byte for byte)"
