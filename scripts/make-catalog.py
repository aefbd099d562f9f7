#!/usr/bin/env python3
"""A generated catalog for the batch commands (scripts/bench-catalog.sh, scripts/test-slurm.sh).

    make-catalog.py OUT --clips N [--per-lesson 20] [--chain 5] [--speech M] [--rate 16000]

Writes, under OUT (made if missing; nothing is committed):
  audio/LLLL/cNN.wav, cNN.json  N tone clips: 2 to 4 "words" (tone bursts of 120-300 ms by 10 ms, 80 ms
                                apart, 50 ms of silence around), mono 16-bit at --rate, with their
                                word timings (Narrator JSON) at the bursts' edges
  lessons/lesson-LLLL.json      --per-lesson clips a lesson, a chain of --chain clips each
  speech/sNN.wav, manifest.jsonl  M sentences spoken by espeak-ng, and the `narrator align`
                                manifest that aligns them (their timings go under --to)
The same arguments give the same bytes (a fixed seed; espeak-ng's own output aside).
"""
import argparse
import json
import math
import os
import random
import struct
import subprocess
import sys
import wave

WORDS = "cat dog sun hat red big see can run the a map top fish bird tree blue green hop sit".split()


BURSTS = {}


def burst(freq, length, rate):
    """A tone burst with 5 ms fades (made once per pitch and length)."""
    key = (freq, length, rate)
    if key not in BURSTS:
        fade = int(0.005 * rate)
        BURSTS[key] = [int(8000 * min(1.0, n / fade, (length - 1 - n) / fade) * math.sin(2 * math.pi * freq * n / rate)) for n in range(length)]
    return BURSTS[key]


def tone_clip(rng, rate):
    """Samples and word intervals (seconds) of one clip."""
    samples = []
    words = []
    lead = int(0.05 * rate)
    samples.extend([0] * lead)
    for index in range(rng.randint(2, 4)):
        if index:
            samples.extend([0] * int(0.08 * rate))
        length = int(rng.randint(12, 30) * 0.01 * rate)
        start = len(samples)
        samples.extend(burst(rng.choice([220, 262, 330, 392, 440, 523]), length, rate))
        words.append((rng.choice(WORDS), start / rate, len(samples) / rate))
    samples.extend([0] * lead)
    return samples, words


def write_wav(path, samples, rate):
    with wave.open(path, "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(rate)
        out.writeframes(struct.pack("<%dh" % len(samples), *samples))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out")
    parser.add_argument("--clips", type=int, required=True)
    parser.add_argument("--per-lesson", type=int, default=20)
    parser.add_argument("--chain", type=int, default=5)
    parser.add_argument("--speech", type=int, default=0)
    parser.add_argument("--rate", type=int, default=16000)
    args = parser.parse_args()
    if not (1 <= args.clips <= 1_000_000 and 1 <= args.per_lesson <= 1000 and 1 <= args.chain and 0 <= args.speech <= 10_000):
        sys.exit("make-catalog.py: --clips 1..1000000, --per-lesson 1..1000, --chain 1 or more, --speech 0..10000")
    rng = random.Random(32)
    os.makedirs(os.path.join(args.out, "lessons"), exist_ok=True)
    lessons = (args.clips + args.per_lesson - 1) // args.per_lesson
    made = 0
    for lesson in range(1, lessons + 1):
        folder = os.path.join(args.out, "audio", "%04d" % lesson)
        os.makedirs(folder, exist_ok=True)
        clips = {}
        for index in range(1, min(args.per_lesson, args.clips - made) + 1):
            samples, words = tone_clip(rng, args.rate)
            name = "c%02d" % index
            write_wav(os.path.join(folder, name + ".wav"), samples, args.rate)
            with open(os.path.join(folder, name + ".json"), "w") as out:
                json.dump({"words": [{"text": t, "start": round(s, 6), "end": round(e, 6)} for t, s, e in words]}, out)
                out.write("\n")
            clips[name] = {"file": "../audio/%04d/%s.wav" % (lesson, name), "timings": "../audio/%04d/%s.json" % (lesson, name)}
            made += 1
        ids = sorted(clips)
        chains = {}
        for start in range(0, len(ids), args.chain):
            chains["part%02d" % (start // args.chain + 1)] = [{"clip": i} for i in ids[start:start + args.chain]]
        with open(os.path.join(args.out, "lessons", "lesson-%04d.json" % lesson), "w") as out:
            json.dump({"sampleRate": args.rate, "channels": 1, "clips": clips, "chains": chains}, out, indent=1, sort_keys=True)
            out.write("\n")
    if args.speech:
        os.makedirs(os.path.join(args.out, "speech"), exist_ok=True)
        with open(os.path.join(args.out, "manifest.jsonl"), "w") as manifest:
            for index in range(1, args.speech + 1):
                text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 6)))
                name = "s%03d" % index
                subprocess.run(["espeak-ng", "-w", os.path.join(args.out, "speech", name + ".wav"), text], check=True)
                manifest.write(json.dumps({"audio": "speech/%s.wav" % name, "text": text, "timings": name + ".json"}) + "\n")
    print("%d clips in %d lessons%s under %s" % (made, lessons, ", %d spoken for align" % args.speech if args.speech else "", args.out))


if __name__ == "__main__":
    main()
