#!/usr/bin/env python3
"""Synthetic recordings whose every word boundary is known exactly.

Each word is synthesized alone (espeak-ng or flite), cut to its sound (first to last sample
at or above -50 dBFS), and the words are laid end to end at 16 kHz with digital silences of
30-80 ms between them (180 ms lead-in, 300 ms at the end). A variant mixes a piano-like bed
(decaying harmonic notes, random chords) 20 dB under the voice (RMS over the voiced part).

usage: synth.py OUTDIR [--seed N]   (writes OUTDIR/clean and OUTDIR/bed20)
"""
import argparse, json, os, random, subprocess, sys, tempfile
import numpy as np
import soundfile as sf

RATE = 16000
TEXTS = [
    "The old lighthouse keeper climbed the stairs every evening to light the great lamp",
    "A small brown dog jumped over the fence and ran quickly into the garden",
    "Please take the book back to the library before it closes today",
    "Thirty two children sat quietly and listened to the story about a big red kite",
]
# name, command builder, speed factor/pitch change for the variant
VOICES = {
    "espeak": lambda w, out: ["espeak-ng", "-v", "en-us", "-s", "165", "-w", out, w],
    "flite-kal": lambda w, out: ["flite", "-voice", "kal16", "-t", w, "-o", out],
    "flite-awb": lambda w, out: ["flite", "-voice", "awb", "-t", w, "-o", out],
    "flite-slt": lambda w, out: ["flite", "-voice", "slt", "-t", w, "-o", out],
}
# a "child" voice: flite rms slowed to 85 % and pitched up 6 semitones (sox), as in the issue
CHILD = ("flite-child", "rms", ["tempo", "0.85", "pitch", "600"])


def synth_word(voice, word, td):
    raw = os.path.join(td, "w.wav")
    out = os.path.join(td, "w16.wav")
    if voice == CHILD[0]:
        subprocess.run(["flite", "-voice", CHILD[1], "-t", word, "-o", raw], check=True)
        subprocess.run(["sox", raw, "-r", str(RATE), "-c", "1", "-b", "16", out] + CHILD[2], check=True,
                       stderr=subprocess.DEVNULL)
    else:
        subprocess.run(VOICES[voice](word, raw), check=True)
        subprocess.run(["sox", raw, "-r", str(RATE), "-c", "1", "-b", "16", out], check=True)
    x, _ = sf.read(out, dtype="float64")
    return cut_to_sound(x)


def cut_to_sound(x):
    """A word cut to its sound: its first to its last sample at or above -50 dBFS."""
    idx = np.nonzero(np.abs(x) >= 10 ** (-50 / 20))[0]
    return x[idx[0]:idx[-1] + 1]


def piano_bed(n, rng):
    t = np.arange(n) / RATE
    bed = np.zeros(n)
    pos = 0
    notes = [48, 52, 55, 57, 60, 64, 67, 69, 72]
    while pos < n:
        dur = int(rng.uniform(0.4, 0.9) * RATE)
        for midi in rng.choice(notes, size=3, replace=False):
            f = 440 * 2 ** ((midi - 69) / 12)
            seg = np.arange(min(dur * 2, n - pos)) / RATE
            env = np.exp(-seg * 3.0) * (1 - np.exp(-seg * 200))
            tone = sum((0.6 ** k) * np.sin(2 * np.pi * f * (k + 1) * seg) for k in range(5))
            bed[pos:pos + len(seg)] += env * tone
        pos += dur
    return bed


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("outdir")
    ap.add_argument("--seed", type=int, default=29)
    a = ap.parse_args()
    for sub in ("clean", "bed20"):
        os.makedirs(os.path.join(a.outdir, sub), exist_ok=True)
    rng = np.random.default_rng(a.seed)
    voices = list(VOICES) + [CHILD[0]]
    with tempfile.TemporaryDirectory() as td:
        for voice in voices:
            for ti, text in enumerate(TEXTS):
                pieces, words, t = [np.zeros(int(0.18 * RATE))], [], 0.18
                for w in text.split():
                    x = synth_word(voice, w, td)
                    words.append({"text": w.lower(), "start": round(t, 6), "end": round(t + len(x) / RATE, 6)})
                    pieces.append(x)
                    t += len(x) / RATE
                    gap = int(rng.uniform(0.030, 0.080) * RATE)
                    pieces.append(np.zeros(gap))
                    t += gap / RATE
                pieces[-1] = np.zeros(int(0.30 * RATE))
                y = np.concatenate(pieces)
                peak = np.max(np.abs(y))
                y = y / peak * 0.5
                base = f"{voice}-{ti + 1}"
                meta = {"source": voice, "licence": "made here", "speaker": voice, "language": "eng",
                        "kind": "synthetic", "words": words}
                sf.write(os.path.join(a.outdir, "clean", base + ".wav"), y, RATE, subtype="PCM_16")
                json.dump(meta, open(os.path.join(a.outdir, "clean", base + ".json"), "w"), indent=1)
                # the same with a bed 20 dB under the voice
                voiced = np.concatenate([y[int(w["start"] * RATE):int(w["end"] * RATE)] for w in words])
                v_rms = np.sqrt(np.mean(voiced ** 2))
                bed = piano_bed(len(y), rng)
                bed *= v_rms * 10 ** (-20 / 20) / np.sqrt(np.mean(bed ** 2))
                z = y + bed
                z = z / max(1.0, np.max(np.abs(z)) / 0.9)
                sf.write(os.path.join(a.outdir, "bed20", base + ".wav"), z, RATE, subtype="PCM_16")
                meta["kind"] = "synthetic+bed20"
                json.dump(meta, open(os.path.join(a.outdir, "bed20", base + ".json"), "w"), indent=1)
    print(f"synth: {len(voices) * len(TEXTS) * 2} recordings in {a.outdir}", file=sys.stderr)


if __name__ == "__main__":
    main()
