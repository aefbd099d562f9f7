#!/usr/bin/env python3
"""First-stage aligners for the benchmark: each returns a list of words
{"text", "start", "end"} (seconds), one per word of the text, plus extras per aligner.

- aeneas: `python3 -m aeneas.tools.execute_task` as `narrator align` runs it (one word a line).
- pocketsphinx: PocketSphinx 5 (PyPI `pocketsphinx`, BSD-2-Clause, its en-US model inside the
  package) in alignment mode: `Decoder.set_align_text`, then the word, phone and state
  alignment (`set_alignment` / `get_alignment`), 10 ms frames.
- narrator: `narrator align AUDIO --text ... --timings OUT.json --json` (read-only use of a
  built binary).
"""
import json, os, re, subprocess, sys, tempfile, wave

_PS = {}


def norm_word(w):
    return re.sub(r"[^a-z0-9']", "", w.lower())


def aeneas(wav, words, language="eng"):
    with tempfile.TemporaryDirectory() as td:
        txt = os.path.join(td, "words.txt")
        open(txt, "w").write("\n".join(words) + "\n")
        out = os.path.join(td, "out.json")
        subprocess.run([sys.executable, "-m", "aeneas.tools.execute_task", wav, txt,
                        f"task_language={language}|is_text_type=plain|os_task_file_format=json", out],
                       check=True, capture_output=True)
        frags = json.load(open(out))["fragments"]
    return [{"text": w, "start": float(f["begin"]), "end": float(f["end"])} for w, f in zip(words, frags)]


# Wider beams for the retry: with the default beams the alignment search sometimes loses every
# path that ends in the grammar's final state (espeak-ng voices: "Final result does not match
# the grammar"); the wide beams cost about twice the time, so they are only the fallback.
WIDE = dict(beam=1e-100, wbeam=1e-80, pbeam=1e-100, lpbeam=1e-80, lponlybeam=1e-80)


def _decoder(wide=False, opts=None):
    opts = dict(opts or {})
    if wide:
        opts.update(WIDE)
    # A fresh decoder for every clip: a reused one starts its live cepstral mean from the
    # previous clip's, so the result would depend on the order the clips come in.
    from pocketsphinx import Decoder
    return Decoder(samprate=16000, bestpath=False, loglevel="FATAL", **opts)


def _read16k(wav):
    w = wave.open(wav)
    assert w.getframerate() == 16000 and w.getnchannels() == 1 and w.getsampwidth() == 2, wav
    return w.readframes(w.getnframes())


def pocketsphinx(wav, words, opts=None):
    try:
        return _pocketsphinx(wav, words, False, opts)
    except Exception:
        pass
    try:
        return _pocketsphinx(wav, words, True, opts)
    except Exception:
        # last resort: no beam pruning at all
        return _pocketsphinx(wav, words, True, dict(opts or {}, beam=1e-200, pbeam=1e-200, wbeam=1e-200))


def _pocketsphinx(wav, words, wide, opts=None):
    """Word intervals from PocketSphinx's forced alignment, with its phones (name, start,
    end, acoustic score) and per-word acoustic score per frame. Silence between words is
    reported as <sil>/filler segments when the decoder inserts them; a word's interval is
    its own frames only."""
    d = _decoder(wide, opts)
    data = _read16k(wav)
    clean = []
    for w in words:
        n = norm_word(w)
        if d.lookup_word(n) is None:
            raise KeyError(f"pocketsphinx: '{n}' not in the dictionary")
        clean.append(n)
    d.set_align_text(" ".join(clean))
    d.start_utt()
    d.process_raw(data, full_utt=True)
    d.end_utt()
    d.set_alignment()
    d.start_utt()
    d.process_raw(data, full_utt=True)
    d.end_utt()
    out = []
    fr = 0.01
    for word in d.get_alignment():
        name = re.sub(r"\(\d+\)$", "", word.name)
        if name.startswith("<") or name.startswith("["):
            continue
        phones = [{"name": p.name, "start": p.start * fr, "end": (p.start + p.duration) * fr,
                   "score": p.score} for p in word]
        out.append({"text": name, "start": word.start * fr, "end": (word.start + word.duration) * fr,
                    "score": word.score, "frames": word.duration, "phones": phones})
    if len(out) != len(words):
        raise RuntimeError(f"pocketsphinx returned {len(out)} words for {len(words)}")
    for o, w in zip(out, words):
        o["text"] = w
    return out


# Per narrator run: (system, audio seconds, wall seconds, {stage: seconds}) for the speed table.
SPEED = []


def narrator(binary, wav, words, extra=(), system="narrator"):
    import time
    with tempfile.TemporaryDirectory() as td:
        out = os.path.join(td, "t.json")
        began = time.monotonic()
        r = subprocess.run(["taskset", "-c", "0", binary, "align", wav, "--text", " ".join(words), "--timings", out, "--json",
                            *extra], check=True, capture_output=True, text=True)
        wall = time.monotonic() - began
        info = json.loads(r.stdout)
    w = wave.open(wav)
    SPEED.append((system, w.getnframes() / w.getframerate(), wall, info.get("seconds", {})))
    ws = info["words"] if isinstance(info, dict) else info
    rate = float(info.get("rate", 48000)) if isinstance(info, dict) else 48000.0
    return [{"text": w, "start": float(x["start"]), "end": float(x["end"]),
             "stageStart": x.get("alignerStartFrame", 0) / rate, "stageEnd": x.get("alignerEndFrame", 0) / rate,
             "stage": x.get("stage"), "stageShiftMs": x.get("stageShiftMs"), "acousticScore": x.get("acousticScore"),
             "squeezedPhones": x.get("squeezedPhones"), "rangeDb": x.get("rangeDb"), "slackMs": x.get("slackMs"),
             "confidence": x.get("confidence")} for w, x in zip(words, ws)]
