#!/usr/bin/env python3
"""Does a per-word confidence pick out the words more than 50 ms off?

For each word of each set: its error (the larger of |start error| and |end error| after the
chosen system) and candidate predictors:
  score     PocketSphinx's acoustic score per frame of the word (its alignment, log domain)
  minphone  the share of the word's phones at PocketSphinx's shortest duration (3 frames):
            a word squeezed into too few frames
  shift     how far PocketSphinx's word moves when the audio starts 5 ms later (the clip
            re-aligned with 80 samples of silence in front; both in the clip's time):
            a stable alignment barely moves, a doubtful one jumps
  aeneas    distance between aeneas's and PocketSphinx's word starts
A word is flagged when a predictor passes its threshold; recall = flagged share of the
words > 50 ms off, precision = share of the flagged that are > 50 ms off.

usage: confidence.py --sets DIR... [--system ps+pause+bias5+edges] [--cache DIR]
"""
import argparse, os, sys, tempfile
import numpy as np
import soundfile as sf

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import aligners, evaluate  # noqa: E402


def shifted(wav, words, cache):
    key = os.path.join(cache, "ps-shift5", os.path.basename(os.path.dirname(os.path.abspath(wav))) + "-" + os.path.basename(wav) + ".json")
    import json
    if os.path.exists(key):
        return json.load(open(key))
    x, sr = sf.read(wav, dtype="int16")
    with tempfile.TemporaryDirectory() as td:
        p = os.path.join(td, "s.wav")
        sf.write(p, np.concatenate([np.zeros(80, dtype=np.int16), x]), sr, subtype="PCM_16")
        out = aligners.pocketsphinx(p, words)
    for w in out:
        w["start"] -= 0.005
        w["end"] -= 0.005
    os.makedirs(os.path.dirname(key), exist_ok=True)
    json.dump(out, open(key, "w"))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sets", nargs="+", required=True)
    ap.add_argument("--system", default="ps+pause+bias5+edges")
    ap.add_argument("--cache", default="cache")
    a = ap.parse_args()
    rows = []
    for d in a.sets:
        for wav, ref in evaluate.load_set(d):
            words = [w["text"] for w in ref["words"]]
            try:
                ps = evaluate.run_system("ps", wav, ref, a.cache)
            except Exception as e:  # a clip PocketSphinx cannot align is left out, and said
                print(f"confidence: {wav} left out: {e}", file=sys.stderr)
                continue
            ae = evaluate.run_system("aeneas", wav, ref, a.cache)
            out = evaluate.run_system(a.system, wav, ref, a.cache)
            sh = shifted(wav, words, a.cache)
            for i, (r, p, e, o, s) in enumerate(zip(ref["words"], ps, ae, out, sh)):
                err = max(abs(o["start"] - r["start"]), abs(o["end"] - r["end"])) * 1000
                phones = p.get("phones", [])
                rows.append({
                    "set": d, "err": err,
                    "score": p["score"] / max(1, p["frames"]),
                    "minphone": np.mean([ph["end"] - ph["start"] <= 0.0301 for ph in phones]) if phones else 0,
                    "shift": max(abs(s["start"] - p["start"]), abs(s["end"] - p["end"])) * 1000,
                    "aeneas": abs(e["start"] - p["start"]) * 1000,
                })
    for d in a.sets + ["all"]:
        sel = [r for r in rows if d == "all" or r["set"] == d]
        off = np.array([r["err"] > 50 for r in sel])
        print(f"\n{d}: {len(sel)} words, {off.sum()} more than 50 ms off")
        if off.sum() == 0:
            continue
        for feat, sign in [("score", -1), ("minphone", 1), ("shift", 1), ("aeneas", 1)]:
            v = np.array([r[feat] for r in sel]) * sign
            # the threshold that flags >= 90 % of the off words
            thr = np.percentile(v[off], 10)
            flag = v >= thr
            prec = (flag & off).sum() / max(1, flag.sum())
            print(f"  {feat:9s} recall 90 % needs {'>' if sign > 0 else '<'}= {thr * sign:8.2f}: flags {flag.sum():4d}, precision {prec * 100:5.1f} %"
                  f"   median off {np.median(v[off]) * sign:8.2f}, right {np.median(v[~off]) * sign:8.2f}")
        # combination: shift or minphone
        for thr_s in (10, 20, 30):
            flag = np.array([r["shift"] >= thr_s or r["minphone"] >= 0.5 for r in sel])
            rec = (flag & off).sum() / off.sum()
            prec = (flag & off).sum() / max(1, flag.sum())
            print(f"  shift>={thr_s} or minphone>=0.5: recall {rec * 100:5.1f} %, precision {prec * 100:5.1f} %, flags {flag.sum()}")


if __name__ == "__main__":
    main()
