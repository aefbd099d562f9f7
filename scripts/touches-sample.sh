#!/usr/bin/env bash
# Makes Timings/touches/picture-dictionary.sqlite, the touch log of `narrator touches`'s help
# example (docs/touches.md): a scripted session of the picture dictionary's popup on a daemon
# that plays into a file (no sound card): an answer the intro ignores, words tapped to be said,
# then replay and close. The log is then switched to journal_mode=DELETE, so that reading it
# read-only leaves no -wal or -shm file beside it.
#
# Usage: scripts/touches-sample.sh [NARRATOR] [OUT]   (needs socat and sqlite3)
set -euo pipefail

narrator=${1:-.build/debug/narrator}
out=${2:-Timings/touches/picture-dictionary.sqlite}
work=$(mktemp -d)
trap 'kill "$daemon" 2>/dev/null || true; rm -rf "$work"' EXIT

"$narrator" serve --library Timings/lessons --socket "$work/n.sock" --output file --device "$work/heard.wav" \
    --touches "$work/touches.sqlite" >"$work/serve.out" &
daemon=$!
until grep -q '"listening"' "$work/serve.out" 2>/dev/null; do sleep 0.1; done

# One connection: play, then (once it has started) the child's touches, a pause between each
# so that every tap is heard before the next.
mkfifo "$work/in"
socat -t 30 - UNIX-CONNECT:"$work/n.sock" <"$work/in" >"$work/events.jsonl" &
client=$!
exec 3>"$work/in"
echo '{"id":"play","op":"play","lesson":"picture-dictionary.json","activity":"word-popup"}' >&3
until grep -q '"type":"start"' "$work/events.jsonl" 2>/dev/null; do sleep 0.05; done
echo '{"id":"t1","op":"tap","request":"play","answer":"banana"}' >&3
sleep 0.3
n=0
for word in 3 0 3 7 0 3 1 7 0 3 5 3; do   # fruit ×5, apple ×3, trees ×2, A, grows
    n=$((n + 1))
    echo "{\"id\":\"say$n\",\"op\":\"say\",\"request\":\"play\",\"clip\":\"apple\",\"word\":$word}" >&3
    sleep 0.1
done
sleep 0.6
echo '{"id":"go","op":"resume","request":"play"}' >&3
sleep 0.3
echo '{"id":"t2","op":"replay","request":"play"}' >&3
sleep 0.5
echo '{"id":"t3","op":"close","request":"play"}' >&3
exec 3>&-
wait "$client"
kill -TERM "$daemon"
wait "$daemon"
sqlite3 "$work/touches.sqlite" 'PRAGMA journal_mode = DELETE' >/dev/null
mkdir -p "$(dirname "$out")"
mv "$work/touches.sqlite" "$out"
echo "$out: $(sqlite3 "$out" 'SELECT count(*) FROM touches') touches"
