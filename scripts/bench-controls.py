#!/usr/bin/env python3
"""Control-to-heard latency of pause, resume, seek and speed through `narrator serve` (run by
scripts/bench-controls.sh, which starts the sound server and the daemon).

  bench-controls.py NARRATOR SOCKET LESSON CHAIN REPEAT

Plays CHAIN of LESSON REPEAT times. At word cues about 2 s apart it pauses (as the word's event
arrives), resumes 300 ms after the pause's reply, then seeks back to that word 300 ms after the
resume's reply, and 300 ms after the seek's reply changes the speed (to 1.25, back to 1 at the
next word, and so on). Each control's latency is from the client's send (CLOCK_MONOTONIC) to
the `heard` of the event it caused (`paused`, `resumed`, `seeked`, `speedChanged`): the
daemon's stamps, which the daemon bench and the live tests check against the sound server's
recording (within 0.15 ms, and `speedChanged` within 0.5 ms of its fade-out's end).
Prints p50, p99 and max per control. Asserts nothing.
"""

import json
import statistics
import subprocess
import sys

narrator, socket, lesson, chain, repeat = sys.argv[1:6]
here = __file__.rsplit("/", 2)[0]
client = here + "/Tests/clients/narrator_client.py"

listing = json.loads(subprocess.run(
    [narrator, "cues", lesson, "--chain", chain, "--seed", "7", "--repeat", repeat],
    check=True, capture_output=True, text=True).stdout)
rate = listing["sampleRate"]
words = [cue["frame"] for cue in listing["cues"] if cue["type"] == "word"]
picks = []
for frame in words:
    if frame >= rate and (not picks or frame - picks[-1] >= 2 * rate) and frame < listing["frames"] - rate:
        picks.append(frame)

arguments = ["python3", client, "run", "--unix", socket]
for i, frame in enumerate(picks):
    arguments += ["--when", f"type=word,frame={frame}", "0", json.dumps({"id": f"p{i}", "op": "pause", "request": "a"})]
    arguments += ["--when", f"id=p{i},type=finished", "300", json.dumps({"id": f"r{i}", "op": "resume", "request": "a"})]
    arguments += ["--when", f"id=r{i},type=finished", "300",
                  json.dumps({"id": f"s{i}", "op": "seek", "request": "a", "frame": frame})]
    arguments += ["--when", f"id=s{i},type=finished", "300",
                  json.dumps({"id": f"v{i}", "op": "speed", "request": "a", "speed": 1.25 if i % 2 == 0 else 1})]
play = {"id": "a", "op": "play", "lesson": lesson.rsplit("/", 1)[-1], "chain": chain, "seed": 7, "repeat": int(repeat)}
done = subprocess.run(arguments + [json.dumps(play)], capture_output=True, text=True, timeout=600)
events = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
if done.returncode != 0:
    sys.exit(f"bench-controls: the client failed ({done.returncode}): {done.stderr.strip()}")

sent = {}
for event in events:
    if event.get("client") == "sent":
        sent[json.loads(event["request"])["id"]] = event["sent"]
replies = {event.get("id"): event.get("type") for event in events if event.get("type") in ("finished", "stopped", "error")}
heard = {kind: [e["heard"] for e in events if e.get("type") == kind and e.get("id") == "a"]
         for kind in ("paused", "resumed", "seeked", "speedChanged")}


def figures(values):
    values = sorted(values)
    if not values:
        return "none"
    p99 = values[min(len(values) - 1, int(round(0.99 * (len(values) - 1))))]
    return f"p50 {statistics.median(values):.2f} ms, p99 {p99:.2f} ms, max {values[-1]:.2f} ms (n={len(values)})"


print(f"{len(picks)} cycles of pause, resume, seek and speed; the playback ended with {replies.get('a')}; "
      f"controls answered finished: {sum(1 for k, v in replies.items() if k != 'a' and v == 'finished')} of {4 * len(picks)}")
for kind, prefix in (("paused", "p"), ("resumed", "r"), ("seeked", "s"), ("speedChanged", "v")):
    stamps = heard[kind]
    requests = [sent[f"{prefix}{i}"] for i in range(len(picks)) if f"{prefix}{i}" in sent]
    if len(stamps) != len(requests):
        print(f"{kind}: {len(stamps)} events for {len(requests)} requests: not paired")
        continue
    latency = [(h - s) / 1e6 for h, s in zip(stamps, requests)]
    print(f"{kind:12} request → heard: {figures(latency)}")
