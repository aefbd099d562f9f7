#!/usr/bin/env python3
"""A set of recordings with hand-placed (or exact) boundaries, again with synth.py's piano-like
bed mixed under the voice at 20 and 30 dB (the voice's RMS over its words' intervals, the
bed's over the whole clip): the same boundaries, a floor close under the voice. A check of the
confidence on real speech with a bed (the bench's bed sets are synthetic voices only).

usage: noisy.py SETDIR OUTDIR [--seed N]   (writes OUTDIR/bed20 and OUTDIR/bed30)
"""
import argparse, glob, json, os, sys
import numpy as np
import soundfile as sf

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from synth import piano_bed  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("setdir")
    ap.add_argument("outdir")
    ap.add_argument("--seed", type=int, default=29)
    a = ap.parse_args()
    rng = np.random.default_rng(a.seed)
    n = 0
    for j in sorted(glob.glob(os.path.join(a.setdir, "*.json"))):
        wav = j[:-5] + ".wav"
        if not os.path.exists(wav):
            continue
        meta = json.load(open(j))
        x, sr = sf.read(wav, dtype="float64")
        if x.ndim > 1:
            x = x.mean(axis=1)
        voiced = np.concatenate([x[int(w["start"] * sr):int(w["end"] * sr)] for w in meta["words"]])
        v_rms = np.sqrt(np.mean(voiced ** 2))
        bed = piano_bed(len(x), rng)
        bed /= np.sqrt(np.mean(bed ** 2))
        for under in (20, 30):
            z = x + bed * v_rms * 10 ** (-under / 20)
            peak = np.max(np.abs(z))
            if peak > 0.99:
                z *= 0.99 / peak
            out = os.path.join(a.outdir, f"bed{under}")
            os.makedirs(out, exist_ok=True)
            base = os.path.basename(j)[:-5]
            sf.write(os.path.join(out, base + ".wav"), z, sr, subtype="PCM_16")
            json.dump(dict(meta, kind=meta.get("kind", "") + f"+bed{under}"), open(os.path.join(out, base + ".json"), "w"), indent=1)
        n += 1
    print(f"noisy: {n} recordings with a bed 20 and 30 dB under in {a.outdir}", file=sys.stderr)


if __name__ == "__main__":
    main()
