#!/usr/bin/env python3
"""A long recording of real read speech with hand-placed word boundaries (issue 29, point 4).

The real set's clips (each a WAV beside its timing JSON of hand-placed words, as the bench's
corpus.py writes them) are laid end to end, in name order, with GAP ms between them,
REPEATS times, and Gaussian noise at NOISE dBFS is added over the whole (one room: gaps no
louder than the clips' own silences, or each gap reads as sound): a page read in one take,
every boundary known. `--only PREFIX` keeps the clips whose name starts with it (one speaker: `emuR`).
narrator align runs on it (its transcript the clips' words, each clip a sentence) and every
word's start and end are compared with the hand boundaries: p50, p95, max, within 20 and
50 ms, and the p50 of each repeat (a repeat far off while its neighbours are right is a
sentence anchor laid on the wrong pause). Nothing is written outside WORK.

usage: long_real.py NARRATOR REALSET WORK [--repeats 10] [--gap 700] [--noise -60] [--only PREFIX]
"""
import argparse, json, os, subprocess, wave
import numpy as np


def read(path):
    with wave.open(path) as w:
        rate, channels, width = w.getframerate(), w.getnchannels(), w.getsampwidth()
        if width != 2:
            raise SystemExit(f"{path}: {8 * width}-bit samples; only 16-bit is read here")
        samples = np.frombuffer(w.readframes(w.getnframes()), dtype=np.int16).reshape(-1, channels)
    return samples.mean(axis=1).astype(np.int16), rate


def build(realset, work, repeats, gap_ms, noise_dbfs, only):
    names = sorted(f[:-4] for f in os.listdir(realset) if f.endswith(".wav") and f.startswith(only))
    if not names:
        raise SystemExit(f"{realset}: no clips named {only}*.wav")
    clips = []
    rate = None
    for name in names:
        samples, r = read(os.path.join(realset, name + ".wav"))
        if rate is None:
            rate = r
        if r != rate:
            raise SystemExit(f"{name}: {r} Hz, the others {rate} Hz")
        words = json.load(open(os.path.join(realset, name + ".json")))["words"]
        clips.append((samples, words))
    rng = np.random.default_rng(7)
    gap = int(gap_ms * rate / 1000)
    parts, truth, text, at = [], [], [], 0
    for _ in range(repeats):
        for samples, words in clips:
            parts.append(samples)
            truth += [(at / rate + w["start"], at / rate + w["end"]) for w in words]
            spoken = [w["text"] for w in words]
            text.append(" ".join(spoken[:-1] + [spoken[-1] + "."]))
            at += len(samples)
            parts.append(np.zeros(gap, np.int16))
            at += gap
    audio = np.concatenate(parts).astype(np.float64)
    audio += rng.normal(0, 32768 * 10 ** (noise_dbfs / 20), len(audio))
    path = os.path.join(work, "long-real.wav")
    with wave.open(path, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(np.clip(np.round(audio), -32768, 32767).astype(np.int16).tobytes())
    return path, truth, " ".join(text), at / rate


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("narrator")
    ap.add_argument("realset")
    ap.add_argument("work")
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--gap", type=int, default=700)
    ap.add_argument("--noise", type=float, default=-60)
    ap.add_argument("--only", default="")
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    path, truth, text, seconds = build(a.realset, a.work, a.repeats, a.gap, a.noise, a.only)
    out = os.path.join(a.work, "out.json")
    run = subprocess.run([a.narrator, "align", path, "--text", text, "--timings", out, "--json"], capture_output=True, text=True)
    if run.returncode != 0:
        raise SystemExit(f"narrator align failed: {run.stderr.strip()}")
    seconds_by_stage = json.loads(run.stdout)["seconds"]
    words = json.load(open(out))["words"]
    if len(words) != len(truth):
        raise SystemExit(f"{len(words)} words aligned, {len(truth)} in the text")
    errors = np.array([abs(w[k] - t[i]) * 1000 for w, t in zip(words, truth) for i, k in ((0, "start"), (1, "end"))])
    per_word = errors.reshape(-1, 2).max(axis=1)
    per_repeat = np.array_split(per_word, a.repeats)
    print(f"{seconds:.1f} s, {len(truth)} words ({a.repeats} repeats of {len(truth) // a.repeats}); stages {seconds_by_stage}")
    print("boundaries: p50 %.1f, p95 %.1f, max %.1f ms; within 20 ms %.0f %%, within 50 ms %.0f %%" % (
        np.percentile(errors, 50), np.percentile(errors, 95), errors.max(), (errors <= 20).mean() * 100, (errors <= 50).mean() * 100))
    print("each repeat's p50 (ms): " + ", ".join("%.0f" % np.percentile(r, 50) for r in per_repeat))


main()
