#!/usr/bin/env python3
"""Writes lessons of a million of something into a folder, to measure that loading and
scheduling stay linear (see scripts/bench-lesson-scale.sh). Nothing it writes is committed.

Usage: scripts/make-huge-lessons.py FOLDER [N]   (N defaults to 1,000,000)

FOLDER/tick.wav       a 10 ms 48 kHz mono click (480 frames)
FOLDER/chain.json     chain "c" of N clip items                       (2N+1 cues)
FOLDER/silence.json   chain "c" of N silences of 1 ms                 (1 cue)
FOLDER/pool.json      a pool of N distinct clips, chain "c" draws it N times (2N+1 cues)
FOLDER/pulse.json     chain "c": one pulse item with N targets, then the clip
FOLDER/steps.json     activity "a" with N steps (intro "c"); chain "c" is one clip
FOLDER/unplayed.json  chain "big" of N clip items and chain "c" of one: "c" is played
FOLDER/nested.json    N nested arrays (must be refused: deeper than 512 levels)
"""
import json
import os
import struct
import sys
import wave


def write(path, text):
    with open(path, "w") as f:
        f.write(text)


def main():
    folder = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 1_000_000
    os.makedirs(folder, exist_ok=True)
    with wave.open(os.path.join(folder, "tick.wav"), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(48000)
        w.writeframes(b"".join(struct.pack("<h", 8000 if k < 48 else 0) for k in range(480)))

    def lesson(clips, chains, pools=None, activities=None):
        parts = ['{"sampleRate": 48000', '"clips": ' + clips, '"chains": ' + chains]
        if pools:
            parts.append('"pools": ' + pools)
        if activities:
            parts.append('"activities": ' + activities)
        return ",\n".join(parts) + "}\n"

    one = '{"t": {"file": "tick.wav"}}'
    items = ",\n".join(['{"clip": "t"}'] * n)
    write(os.path.join(folder, "chain.json"), lesson(one, '{"c": [\n' + items + "]}"))
    silences = ",\n".join(['{"silence": 0.001}'] * n)
    write(os.path.join(folder, "silence.json"), lesson(one, '{"c": [\n' + silences + "]}"))
    many = "{" + ",\n".join(f'"t{k}": {{"file": "tick.wav"}}' for k in range(n)) + "}"
    members = ", ".join(f'"t{k}"' for k in range(n))
    draws = ",\n".join(['{"pool": "p"}'] * n)
    write(os.path.join(folder, "pool.json"),
          lesson(many, '{"c": [\n' + draws + "]}", pools='{"p": {"clips": [' + members + '], "noRepeat": ' + str(n - 1) + "}}"))
    targets = ", ".join(f'"target{k}"' for k in range(n))
    write(os.path.join(folder, "pulse.json"), lesson(one, '{"c": [{"pulse": [' + targets + ']}, {"clip": "t"}]}'))
    steps = ",\n".join(json.dumps({"answer": f"a{k}", "correct": "c", "wrong": ["c"]}) for k in range(n))
    write(os.path.join(folder, "steps.json"),
          lesson(one, '{"c": [{"clip": "t"}]}', activities='{"a": {"intro": "c", "steps": [\n' + steps + "]}}"))
    write(os.path.join(folder, "unplayed.json"), lesson(one, '{"c": [{"clip": "t"}], "big": [\n' + items + "]}"))
    write(os.path.join(folder, "nested.json"), "[" * n + "]" * n)


if __name__ == "__main__":
    main()
