#!/usr/bin/env python3
"""Word-boundary errors against exact or hand-placed boundaries, by boundary kind.

Every word start and every word end is a boundary. Its kind comes from the reference:
  edge  - the first word's start and the last word's end (leading/trailing silence),
  join  - between two words with no pause between them in the reference (gap < 10 ms),
  pause - a word end before, or a word start after, a pause in the reference.
error = |found - reference| in ms. For each system and set: p50, p95, max, % within 20 ms
and 50 ms, per kind and over all.

Confidence (narrator systems): a word is off when either of its boundaries is more than 50 ms
from the reference (a highlight wrong at either end is wrong; issue 29's "words more than
50 ms off"); reported when its `confidence` is under 0.5 (AlignConfidence.threshold, the
words `narrator align`'s summary names). Per set: words, off, reported, recall (the share of
the off words reported) and precision (the share of the reported words that are off).

usage: evaluate.py --sets DIR... --systems aeneas,ps,ps+refine[,narrator] [--cache DIR]
                   [--narrator BIN] [--json OUT]
"""
import argparse, glob, json, os, sys
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import aligners  # noqa: E402
import refine  # noqa: E402

JOIN_GAP = 0.010


def boundaries(ref):
    """[(kind, word index, 'start'|'end', time)]"""
    ws = ref["words"]
    out = []
    for i, w in enumerate(ws):
        if i == 0:
            ks = "edge"
        else:
            ks = "join" if w["start"] - ws[i - 1]["end"] < JOIN_GAP else "pause"
        if i == len(ws) - 1:
            ke = "edge"
        else:
            ke = "join" if ws[i + 1]["start"] - w["end"] < JOIN_GAP else "pause"
        out.append((ks, i, "start", w["start"]))
        out.append((ke, i, "end", w["end"]))
    return out


def errors(ref, found):
    return [(k, i, se, abs(found[i][se] - t) * 1000.0, (found[i][se] - t) * 1000.0)
            for k, i, se, t in boundaries(ref)]


def stats(errs):
    e = np.asarray(errs, dtype=float)
    if len(e) == 0:
        return None
    return {"n": len(e), "p50": float(np.percentile(e, 50)), "p95": float(np.percentile(e, 95)),
            "max": float(e.max()), "w20": float(np.mean(e <= 20) * 100), "w50": float(np.mean(e <= 50) * 100)}


def run_system(system, wav, ref, cache, narrator_bin=None):
    words = [w["text"] for w in ref["words"]]
    tag = os.path.basename(os.path.dirname(os.path.abspath(wav))) + "-" + os.path.basename(wav)
    key = os.path.join(cache, system.split("+")[0], tag + ".json") if cache else None
    base = system.split("+")[0]
    if key and os.path.exists(key):
        first = json.load(open(key))
    else:
        if base == "aeneas":
            first = aligners.aeneas(wav, words)
        elif base == "ps":
            first = aligners.pocketsphinx(wav, words)
        elif base == "psbatch":  # cepstral mean over the whole clip, not the live estimate
            first = aligners.pocketsphinx(wav, words, {"cmn": "batch"})
        elif base == "narrator":
            first = aligners.narrator(narrator_bin, wav, words)
        elif base == "narrator-aeneas":  # narrator align with aeneas as the first stage (its other languages' path)
            first = aligners.narrator(narrator_bin, wav, words, ["--first-stage", "aeneas"], system=base)
        elif base == "narrator-stage":  # narrator align's first stage alone (its aligner frames, before refinement)
            first = [dict(w, start=w["stageStart"], end=w["stageEnd"])
                     for w in run_system("narrator", wav, ref, cache, narrator_bin)]
        else:
            raise ValueError(system)
        if key:
            os.makedirs(os.path.dirname(key), exist_ok=True)
            json.dump(first, open(key, "w"))
    if "+" in system:
        return refine.run(system.split("+", 1)[1], wav, first)
    return first


def load_set(d):
    items = []
    for j in sorted(glob.glob(os.path.join(d, "*.json"))):
        wav = j[:-5] + ".wav"
        if os.path.exists(wav):
            items.append((wav, json.load(open(j))))
    return items


def table(rows):
    lines = ["| set | system | kind | n | p50 ms | p95 ms | max ms | ≤20 ms | ≤50 ms |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        s = r["stats"]
        lines.append(f"| {r['set']} | {r['system']} | {r['kind']} | {s['n']} | {s['p50']:.1f} | {s['p95']:.1f} | "
                     f"{s['max']:.1f} | {s['w20']:.0f} % | {s['w50']:.0f} % |")
    return "\n".join(lines)


OFF_MS = 50.0
LOW_CONFIDENCE = 0.5


def confidence_rows(found_by_set):
    """[(set, system, words, off, reported, both)] from {(set, system): [(ref, found)]}."""
    rows = []
    for (name, system), clips in found_by_set.items():
        words = off = reported = both = 0
        for ref, found in clips:
            for r, f in zip(ref["words"], found):
                if f.get("confidence") is None:
                    continue
                is_off = max(abs(f["start"] - r["start"]), abs(f["end"] - r["end"])) * 1000 > OFF_MS
                is_low = f["confidence"] < LOW_CONFIDENCE
                words += 1
                off += is_off
                reported += is_low
                both += is_off and is_low
        if words:
            rows.append((name, system, words, off, reported, both))
    return rows


def confidence_table(rows):
    lines = ["| set | system | words | off (> 50 ms) | reported (< 0.5) | recall | precision |",
             "|---|---|---|---|---|---|---|"]
    for name, system, words, off, reported, both in rows:
        recall = f"{both / off * 100:.0f} % ({both}/{off})" if off else "–"
        precision = f"{both / reported * 100:.0f} % ({both}/{reported})" if reported else "–"
        lines.append(f"| {name} | {system} | {words} | {off} | {reported} | {recall} | {precision} |")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sets", nargs="+", required=True, help="NAME=DIR or DIR[:glob-filter]")
    ap.add_argument("--systems", default="aeneas,ps")
    ap.add_argument("--cache")
    ap.add_argument("--narrator")
    ap.add_argument("--kinds", default="all,join,pause,edge")
    ap.add_argument("--json")
    a = ap.parse_args()
    rows, raw, judged = [], {}, {}
    for spec in a.sets:
        name, d = spec.split("=", 1) if "=" in spec else (os.path.basename(spec.rstrip("/")), spec)
        filt = None
        if ":" in d:
            d, filt = d.split(":", 1)
        items = load_set(d)
        if filt:
            import fnmatch
            items = [(w, r) for w, r in items if fnmatch.fnmatch(os.path.basename(w), filt)]
        for system in a.systems.split(","):
            if system.startswith("narrator") and not a.narrator:
                continue
            errs = []
            for wav, ref in items:
                try:
                    found = run_system(system, wav, ref, a.cache, a.narrator)
                except Exception as e:  # a failure is reported, not hidden
                    print(f"{system} failed on {wav}: {e}", file=sys.stderr)
                    continue
                if system in ("narrator", "narrator-aeneas"):
                    judged.setdefault((name, system), []).append((ref, found))
                for k, i, se, e, signed in errors(ref, found):
                    errs.append({"file": os.path.basename(wav), "kind": k, "word": i, "which": se,
                                 "err": e, "signed": signed})
            raw[f"{name}/{system}"] = errs
            for kind in a.kinds.split(","):
                sel = [x["err"] for x in errs if kind == "all" or x["kind"] == kind]
                s = stats(sel)
                if s:
                    rows.append({"set": name, "system": system, "kind": kind, "stats": s})
    print(table(rows))
    conf = confidence_rows(judged)
    if conf:
        print()
        print(confidence_table(conf))
    batch = None
    if a.narrator and "narrator" in a.systems.split(","):
        # The catalog's way: every clip in one manifest, one `narrator align` (one PocketSphinx
        # worker, its model loaded once), pinned to one core.
        import subprocess, tempfile, time, wave
        clips = [(w, r) for spec in a.sets for w, r in load_set(spec.split("=", 1)[-1].split(":")[0])]
        with tempfile.TemporaryDirectory() as td:
            with open(os.path.join(td, "batch.jsonl"), "w") as f:
                for n, (wav, ref) in enumerate(clips):
                    f.write(json.dumps({"audio": os.path.abspath(wav), "text": " ".join(w["text"] for w in ref["words"]),
                                        "timings": f"t{n}.json"}) + "\n")
            began = time.monotonic()
            r = subprocess.run(["taskset", "-c", "0", a.narrator, "align", "--manifest", os.path.join(td, "batch.jsonl")],
                               capture_output=True, text=True)
            wall = time.monotonic() - began
            if r.returncode != 0:
                print(f"narrator batch failed: {r.stderr.strip()[-500:]}", file=sys.stderr)
            audio = sum(wave.open(w).getnframes() / wave.open(w).getframerate() for w, _ in clips)
            batch = (len(clips), audio, wall)
    if aligners.SPEED:
        print()
        print("| system | clips | audio s | wall s (one core) | × real time | decode s | anchors (aeneas) s | pocketsphinx s | refinement s |")
        print("|---|---|---|---|---|---|---|---|---|")
        for system in sorted({x[0] for x in aligners.SPEED}):
            runs = [x for x in aligners.SPEED if x[0] == system]
            audio = sum(x[1] for x in runs)
            wall = sum(x[2] for x in runs)
            stage = {k: sum(x[3].get(k, 0) for x in runs) for k in ("decode", "anchors", "pocketsphinx", "refinement")}
            print(f"| {system} | {len(runs)} | {audio:.1f} | {wall:.1f} | {audio / wall:.1f} | {stage['decode']:.2f} | {stage['anchors']:.1f} | "
                  f"{stage['pocketsphinx']:.1f} | {stage['refinement']:.2f} |")
        if batch:
            print(f"| narrator, one manifest | {batch[0]} | {batch[1]:.1f} | {batch[2]:.1f} | {batch[1] / batch[2]:.1f} | | | | |")
    if a.json:
        json.dump({"rows": rows, "errors": raw,
                   "confidence": [dict(zip(("set", "system", "words", "off", "reported", "both"), c)) for c in conf]},
                  open(a.json, "w"))


if __name__ == "__main__":
    main()
