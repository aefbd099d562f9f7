#!/usr/bin/env bash
# Byte-identity check for refactors of the activity runner and the announcer: runs two narrator
# binaries over the same scenarios (every activity of Timings/lessons with its states, 40 seeded
# random tap scripts each plus fixed ones: sounds past polyphony, replay and close at once, idle
# prompts exhausted, announcements) and compares `simulate` traces, `render --cues` cue sheets
# and the rendered WAVs (md5), file by file. Prints IDENTICAL or the differences (exit 1).
#
# Usage: scripts/trace-identity.sh OLD_NARRATOR NEW_NARRATOR [WORKDIR]
#   e.g. git stash; swift build; cp .build/debug/narrator /tmp/old; git stash pop; swift build
#        scripts/trace-identity.sh /tmp/old .build/debug/narrator
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
old=$(realpath "$1"); new=$(realpath "$2"); work=${3:-$(mktemp -d)}
cd "$repo"

scenarios() {
    python3 - <<'PY'
import json, random, glob
rng = random.Random(20261124)
for path in sorted(glob.glob("Timings/lessons/*.json")):
    for act, a in sorted(json.load(open(path)).get("activities", {}).items()):
        intro = a.get("intro")
        answers = [s["answer"] for s in a.get("steps", [])]
        vocab = answers + ["wrong1", "wrong2", "replay", "close"] + sorted(a.get("sounds", {}))
        for state in (sorted(intro) if isinstance(intro, dict) else [None]):
            base = [path, "--activity", act] + (["--state", state] if state else [])
            runs = [["--taps", ""], ["--until", "3"], ["--until", "600"]]
            for _ in range(40):
                taps = [f"{round(rng.uniform(0, 45), rng.choice([0, 1, 3, 6]))}:{rng.choice(vocab)}" for _ in range(rng.randint(1, 10))]
                runs.append(["--taps", ",".join(taps)] + (["--until", str(round(rng.uniform(1, 60), 2))] if rng.random() < 0.3 else []))
            if answers:
                runs.append(["--taps", ",".join(f"{6 + 7 * i}:{x}" for i, x in enumerate(answers))])
            if a.get("sounds"):
                names = sorted(a["sounds"])
                runs.append(["--taps", ",".join(f"{0.5 + 0.05 * i}:{names[i % len(names)]}" for i in range(12))])
                runs.append(["--taps", ",".join(f"1:{x}" for x in names * 3 + ["replay", "close"])])
            for run in runs:
                print(json.dumps(base + run))
sight = "Timings/lessons/homer-sight-words.json"
print(json.dumps([sight, "--activity", "sight-words", "--until", "86400"]))
print(json.dumps([sight, "--activity", "sight-words", "--taps", "3:see,3:see,3:replay,3:close"]))
for requests in ["0:text:try-again,0.25:message:try-again", "0:text:idle-see,0.5:text:idle-hat,0.9:text:try-again",
                 "0:progress:try-again,0.1:progress:try-again,0.2:progress:try-again,0.3:important:try-again",
                 "0:notification:try-again,0.1:notification:idle-see,0.2:progress:idle-hat,0.3:text:try-again"]:
    print(json.dumps([sight, "--requests", requests]))
PY
}

outputs() { # BINARY DIR
    mkdir -p "$2"
    local i=0
    while read -r line; do
        i=$((i + 1))
        mapfile -t args < <(python3 -c 'import json, sys; print("\n".join(json.loads(sys.argv[1])))' "$line")
        local f=$2/$(printf %04d $i)
        echo "${args[*]}" >"$f.args"
        { "$1" simulate "${args[@]}" --seed 7 2>&1 && echo "status 0" || echo "status $?"; } >"$f.sim"
        { "$1" render "${args[@]}" --seed 7 --output "$f.wav" --cues "$f.cues.json" 2>&1 && echo "status 0" || echo "status $?"; } >"$f.render"
        if [ -f "$f.wav" ]; then md5sum <"$f.wav" >"$f.wav.md5"; rm "$f.wav"; fi
    done < <(scenarios)
    echo "$i scenarios" >&2
}

outputs "$old" "$work/old"
outputs "$new" "$work/new"
if diff -r "$work/old" "$work/new"; then echo IDENTICAL; else exit 1; fi
