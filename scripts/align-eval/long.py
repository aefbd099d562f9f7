#!/usr/bin/env python3
"""A long recording with exact word boundaries and a deliberately bad stretch (issue 29, point 4).

espeak-ng speaks 15 words one at a time (-s 175); each is cut to its sound (first to last sample
at or above -50 dBFS, as Tests/NarratorCLITests/Shared/SpokenWords.swift does) and laid end to end
at 22.05 kHz with the same silences, a sentence of 15 words repeated (600 ms between sentences).
With --noise, 10 s of loud Gaussian noise (sigma 3000) replaces the middle. narrator align runs on
it pinned to one core; the error of every word start and end is printed for the words away from
the bad stretch (more than 0.5 s from it) and inside it, with align's own peak resident memory
(and with its children: its PocketSphinx worker, aeneas) and the stage seconds.

usage: long.py NARRATOR WORKDIR [--repeats 25] [--noise]
"""
import argparse, json, os, subprocess, time, wave
import numpy as np

WORDS = "look at the big brown dog it runs and jumps over seven small red fish".split()
GAPS = [180, 60, 140, 250, 45, 110, 320, 70, 90, 200, 55, 130, 80, 160, 100]
RATE = 22050


def build(work, repeats, noise):
    voices = []
    for i, w in enumerate(WORDS):
        path = os.path.join(work, f"w{i}.wav")
        subprocess.run(["espeak-ng", "-v", "en", "-s", "175", "-w", path, w], check=True)
        v = np.frombuffer(wave.open(path).readframes(10**7), dtype=np.int16)
        loud = np.nonzero(np.abs(v.astype(int)) >= 104)[0]
        voices.append(v[loud[0]:loud[-1] + 1])
    parts, truth, text, n = [], [], [], 0
    for p in range(repeats * len(WORDS)):
        i = p % len(WORDS)
        gap = np.zeros((600 if i == 0 and p > 0 else GAPS[i]) * RATE // 1000, np.int16)
        parts += [gap, voices[i]]
        n += len(gap)
        truth.append((n, n + len(voices[i])))
        n += len(voices[i])
        text.append(WORDS[i] + ("." if i == len(WORDS) - 1 else ""))
    parts.append(np.zeros(300 * RATE // 1000, np.int16))
    audio = np.concatenate(parts)
    bad = (len(audio) // 2, len(audio) // 2 + 10 * RATE) if noise else None
    if bad:
        rng = np.random.default_rng(1)
        audio[bad[0]:bad[1]] = np.clip(rng.normal(0, 3000, bad[1] - bad[0]), -32768, 32767).astype(np.int16)
    path = os.path.join(work, "long.wav")
    with wave.open(path, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(RATE)
        w.writeframes(audio.tobytes())
    return path, truth, " ".join(text), bad, len(audio) / RATE


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("narrator")
    ap.add_argument("work")
    ap.add_argument("--repeats", type=int, default=25)
    ap.add_argument("--noise", action="store_true")
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    path, truth, text, bad, seconds = build(a.work, a.repeats, a.noise)
    # align's own peak (VmHWM, read while it runs: it only grows) and, from wait4, the peak of
    # it and its children (its PocketSphinx worker, aeneas).
    stdout, stderr = os.path.join(a.work, "align.stdout"), os.path.join(a.work, "align.stderr")
    began = time.monotonic()
    p = subprocess.Popen(["taskset", "-c", "0", a.narrator, "align", path, "--text", text,
                          "--timings", os.path.join(a.work, "out.json"), "--rate", str(RATE), "--json"],
                         stdout=open(stdout, "w"), stderr=open(stderr, "w"))
    own = 0
    while True:
        try:
            for line in open(f"/proc/{p.pid}/status"):
                if line.startswith("VmHWM:"):
                    own = max(own, int(line.split()[1]))
        except OSError:
            pass
        pid, status, usage = os.wait4(p.pid, os.WNOHANG)
        if pid:
            break
        time.sleep(0.01)
    wall, rss = time.monotonic() - began, usage.ru_maxrss
    if os.waitstatus_to_exitcode(status) != 0:
        print(f"long: narrator align failed: {open(stderr).read().strip()[-400:]}")
        return
    out = json.load(open(stdout))
    margin = RATE // 2
    groups = {"away": [], "inside": []}
    for (s, e), w in zip(truth, out["words"]):
        near = bad and e > bad[0] - margin and s < bad[1] + margin
        groups["inside" if near else "away"] += [abs(w["startFrame"] - s) * 1000 / RATE, abs(w["endFrame"] - e) * 1000 / RATE]
    stages = sum(w["stage"] == "pocketsphinx" for w in out["words"])
    print(f"long: {seconds:.1f} s, {len(truth)} words{', 10 s of noise in the middle' if bad else ''}; "
          f"{float(wall):.1f} s on one core ({seconds / float(wall):.1f}x), peak RSS {own / 1024:.1f} MB "
          f"({int(rss) // 1024} MB with its children); "
          f"{stages} words by PocketSphinx; seconds {out['seconds']}")
    for name, errs in groups.items():
        if errs:
            x = np.array(errs)
            print(f"  {name}: n {len(x)}, p50 {np.percentile(x, 50):.1f} ms, p95 {np.percentile(x, 95):.1f} ms, "
                  f"max {x.max():.1f} ms, within 20 ms {100 * np.mean(x <= 20):.0f} %, within 50 ms {100 * np.mean(x <= 50):.0f} %")


if __name__ == "__main__":
    main()
