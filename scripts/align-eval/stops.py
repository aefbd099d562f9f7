#!/usr/bin/env python3
"""Where does a word that begins with a stop start: at its closure or at its burst?

For every word whose first PocketSphinx phone is a stop (P T K B D G CH JH), compares the
hand-placed start with (a) the closure's start (PocketSphinx's word start + 5 ms) and
(b) the burst: the first 1 ms block inside the stop phone (+/- 20 ms) where the level jumps by
>= 12 dB over the lowest 10 ms before it.

usage: stops.py --sets DIR... [--cache DIR]
"""
import argparse, os, sys
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import evaluate, refine  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sets", nargs="+", required=True)
    ap.add_argument("--cache", default="cache")
    a = ap.parse_args()
    clo, bur, n = [], [], 0
    for d in a.sets:
        for wav, ref in evaluate.load_set(d):
            ps = evaluate.run_system("ps", wav, ref, a.cache)
            env = refine.Env(wav)
            for r, p in zip(ref["words"], ps):
                ph = p.get("phones") or []
                if not ph or ph[0]["name"] not in refine.STOPS:
                    continue
                s = int(ph[0]["start"] * 1000)
                e = int(ph[0]["end"] * 1000) + 20
                lo = max(0, s - 20)
                burst = None
                for t in range(lo + 10, min(e, env.n)):
                    if env.raw[t] - env.raw[lo:t].min() >= 12 and env.raw[t] > env.thr:
                        burst = t
                        break
                if burst is None:
                    continue
                n += 1
                clo.append((p["start"] + 0.005 - r["start"]) * 1000)
                bur.append((burst / 1000 - r["start"]) * 1000)
    for name, v in (("closure (PocketSphinx start + 5 ms)", clo), ("burst", bur)):
        v = np.array(v)
        print(f"{name}: n={len(v)} signed median {np.median(v):.1f} ms, |err| p50 {np.median(abs(v)):.1f}, "
              f"p95 {np.percentile(abs(v), 95):.1f}, within 20 ms {np.mean(abs(v) <= 20) * 100:.0f} %")


if __name__ == "__main__":
    main()
