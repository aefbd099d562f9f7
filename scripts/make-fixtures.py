#!/usr/bin/env python3
"""Generate Narrator's committed audio fixtures and their ground-truth timings.

What it makes (paths relative to the repo root):

  Audio/fixtures/sentence.wav                 "a red apple is a sweet fruit", 48 kHz mono s16
  Audio/fixtures/formats/sentence-*.wav|flac|ogg
                                              the same signal as 24/32-bit int, 32-bit float,
                                              FLAC, Ogg Vorbis, 44.1 kHz, 22.05 kHz and stereo
  Audio/fixtures/impulses-{22050,44100,48000,96000}.wav
                                              1 s of zeros with four single-sample impulses
  Audio/fixtures/markers-22050.wav            1 s of tone with WAV cue points and labl labels
                                              (written here from the RIFF specification)
  Audio/lessons/...                           clips of a sample lesson (sfx, congrats,
                                              sight words, a Picture Dictionary entry)
  Timings/fixtures/...                        truth files (integer frames), canonical JSON,
                                              Audacity labels, WebVTT karaoke cue
  Timings/lessons/...                         timings of the lesson clips, sample.json lesson

Why the timings are exact: speech is never synthesised as a whole sentence.  Each word
is synthesised on its own with espeak-ng, converted to 48 kHz s16 with sox (no dither,
repeatable mode), trimmed, and then stripped in Python of any leading/trailing samples
equal to 0, so its first and last samples are non-zero.  This script then concatenates
zero-valued lead-in, the words and zero-valued gaps of known lengths itself, so every
word's start frame (first non-zero sample after a run of zeros) and exclusive end frame
(first zero sample after it) are known to the frame by construction.

If a synthesised word contains a run of >= 200 consecutive zero samples inside it
(e.g. a stop closure), those zeros are replaced by +1/-1 alternating samples so that
"silence" (exact zeros) only ever occurs between words; the script reports when it
does this.

Conventions: truth files hold integer frames; other timing files hold seconds written
with exactly 6 decimals (f"{frame/rate:.6f}"), which recovers the frame exactly via
round(seconds * rate).  WebVTT has millisecond resolution only, so sentence.vtt gets
its own truth file with the frames the VTT actually encodes.

The output is deterministic for given espeak-ng / sox versions (sox is always run with
-D (no dither) and -R (repeatable random numbers, fixed Ogg serial)), and the script is
idempotent: it overwrites its outputs and leaves intermediates only in a temp dir.

Requires: python3 (stdlib), espeak-ng, sox (+ libsox-fmt-all for FLAC/Ogg).
Run:      scripts/make-fixtures.py   (from anywhere; it works relative to the repo root)
"""

import json
import os
import struct
import subprocess
import sys
import tempfile
import wave

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RATE = 48000
VOICE = ["-v", "en-us", "-s", "160"]
FORMAT_FRAMES = 48000  # length of the format variants, in frames of sentence.wav
SOX = ["sox", "-D", "-R"]  # no dither, repeatable mode
TRIM = ["silence", "1", "0.005", "0.5%", "reverse", "silence", "1", "0.005", "0.5%", "reverse"]
MAX_INNER_ZERO_RUN = 200

TMP = None  # temp dir, set in main()
_speech_cache = {}


# ---------------------------------------------------------------- utilities

def run(cmd):
    """Run a command; fail loudly; pass through any warnings it prints."""
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0:
        sys.exit(f"command failed ({res.returncode}): {' '.join(cmd)}\n{res.stderr}")
    if res.stderr.strip():
        sys.stderr.write(f"[{cmd[0]}] {res.stderr.strip()}\n")


def out_path(rel):
    path = os.path.join(ROOT, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    return path


def report(rel, detail=""):
    size = os.path.getsize(os.path.join(ROOT, rel))
    print(f"wrote {rel} ({size} bytes){'  ' + detail if detail else ''}")


def read_wav(path):
    """Read a 16-bit PCM WAV; returns (rate, channels, list of interleaved samples)."""
    with wave.open(path, "rb") as w:
        if w.getsampwidth() != 2:
            raise ValueError(f"{path}: expected 16-bit samples")
        n = w.getnframes() * w.getnchannels()
        data = w.readframes(w.getnframes())
        return w.getframerate(), w.getnchannels(), list(struct.unpack(f"<{n}h", data))


def write_wav(rel, samples, rate=RATE, channels=1):
    with wave.open(out_path(rel), "wb") as w:
        w.setnchannels(channels)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(struct.pack(f"<{len(samples)}h", *samples))
    report(rel, f"{len(samples) // channels} frames @ {rate} Hz x{channels}")


def sec(frame, rate=RATE):
    return f"{frame / rate:.6f}"


class Raw:
    """A pre-formatted JSON number (e.g. seconds with exactly 6 decimals)."""

    def __init__(self, text):
        self.text = text


def to_json(obj, indent=0, width=100):
    """Small pretty-printer: 2-space indent, containers kept on one line if short."""
    def flat(o):
        if isinstance(o, Raw):
            return o.text
        if isinstance(o, dict):
            return "{" + ", ".join(f"{json.dumps(k)}: {flat(v)}" for k, v in o.items()) + "}"
        if isinstance(o, (list, tuple)):
            return "[" + ", ".join(flat(v) for v in o) + "]"
        if isinstance(o, float):
            raise TypeError("use Raw() for non-integer numbers")
        return json.dumps(o)

    one = flat(obj)
    if not isinstance(obj, (dict, list, tuple)) or len(one) + indent <= width:
        return one
    pad, inner = " " * indent, " " * (indent + 2)
    if isinstance(obj, dict):
        items = [f"{inner}{json.dumps(k)}: {to_json(v, indent + 2, width)}" for k, v in obj.items()]
        return "{\n" + ",\n".join(items) + "\n" + pad + "}"
    items = [f"{inner}{to_json(v, indent + 2, width)}" for v in obj]
    return "[\n" + ",\n".join(items) + "\n" + pad + "]"


def write_text(rel, text, detail=""):
    with open(out_path(rel), "w", encoding="utf-8", newline="\n") as f:
        f.write(text)
    report(rel, detail)


def write_json(rel, obj, detail=""):
    write_text(rel, to_json(obj) + "\n", detail)


# ---------------------------------------------------------------- speech & sfx

def speech(text):
    """espeak-ng -> sox (48 kHz s16 mono, trimmed) -> samples with non-zero ends."""
    if text in _speech_cache:
        return _speech_cache[text]
    raw = os.path.join(TMP, "espeak.wav")
    conv = os.path.join(TMP, "espeak48.wav")
    run(["espeak-ng", *VOICE, "-w", raw, text])
    run([*SOX, raw, "-r", str(RATE), "-b", "16", "-c", "1", conv, "rate", "-v", *TRIM])
    rate, ch, s = read_wav(conv)
    assert rate == RATE and ch == 1
    a, b = 0, len(s)
    while a < b and s[a] == 0:
        a += 1
    while b > a and s[b - 1] == 0:
        b -= 1
    s = s[a:b]
    if not s:
        sys.exit(f"speech for {text!r} is empty after trimming")
    # Replace long internal runs of exact zeros so zeros only occur between words.
    i, patched = 0, 0
    while i < len(s):
        if s[i] == 0:
            j = i
            while j < len(s) and s[j] == 0:
                j += 1
            if j - i >= MAX_INNER_ZERO_RUN:
                for k in range(i, j):
                    s[k] = 1 if (k - i) % 2 == 0 else -1
                patched += j - i
            i = j
        else:
            i += 1
    if patched:
        print(f"note: {text!r}: replaced {patched} internal zero samples by +1/-1")
    assert s[0] != 0 and s[-1] != 0
    _speech_cache[text] = s
    return s


def sox_synth(rel_or_tmp, channels, effects, tmp=False):
    """Render a synthetic sound with sox (deterministic: no noise, no dither)."""
    path = os.path.join(TMP, rel_or_tmp) if tmp else out_path(rel_or_tmp)
    run([*SOX, "-n", "-r", str(RATE), "-c", str(channels), "-b", "16", path, *effects])
    return path


def assemble(segments):
    """segments: ("sil", n) | ("word", text[, label]) | ("sfx", samples).

    Returns (samples, words) where words = [(label, startFrame, endFrame_exclusive)].
    """
    out, words = [], []
    for seg in segments:
        kind = seg[0]
        if kind == "sil":
            out.extend([0] * seg[1])
        elif kind == "word":
            s = speech(seg[1])
            label = seg[2] if len(seg) > 2 else seg[1]
            words.append((label, len(out), len(out) + len(s)))
            out.extend(s)
        elif kind == "sfx":
            out.extend(seg[1])
        else:
            raise ValueError(kind)
    return out, words


def word_segments(words, lead, gaps, tail):
    if isinstance(gaps, int):
        gaps = [gaps] * (len(words) - 1)
    assert len(gaps) == len(words) - 1
    segs = [("sil", lead)]
    for i, w in enumerate(words):
        segs.append(("word",) + (w if isinstance(w, tuple) else (w,)))
        segs.append(("sil", gaps[i] if i < len(gaps) else tail))
    return segs


def verify_words(samples, words):
    for text, a, b in words:
        assert samples[a] != 0 and samples[a - 1] == 0, (text, a)
        assert samples[b - 1] != 0 and samples[b] == 0, (text, b)


# ---------------------------------------------------------------- timing formats

def canonical_json(words, rate=RATE):
    return {"words": [{"text": t, "start": Raw(sec(a, rate)), "end": Raw(sec(b, rate))}
                      for t, a, b in words]}


def truth_json(words, frames, rate=RATE):
    return {"sampleRate": rate, "frames": frames,
            "words": [{"text": t, "startFrame": a, "endFrame": b} for t, a, b in words]}


def audacity_labels(words, rate=RATE):
    return "".join(f"{sec(a, rate)}\t{sec(b, rate)}\t{t}\n" for t, a, b in words)


def frame_to_ms(frame, rate=RATE):
    """Nearest millisecond (half up), in integer arithmetic."""
    return (frame * 1000 * 2 + rate) // (rate * 2)


def vtt_time(ms):
    h, rem = divmod(ms, 3600000)
    m, rem = divmod(rem, 60000)
    s, ms = divmod(rem, 1000)
    return f"{h:02d}:{m:02d}:{s:02d}.{ms:03d}"


def karaoke_vtt(words, rate=RATE):
    """One cue with karaoke timestamps; returns (vtt text, words as the VTT encodes them)."""
    starts = [frame_to_ms(a, rate) for _, a, _ in words]
    end = frame_to_ms(words[-1][2], rate)
    assert all(x < y for x, y in zip(starts, starts[1:] + [end])), "VTT timestamps collide"
    text = words[0][0] + "".join(f" <{vtt_time(ms)}>{t}" for (t, _, _), ms in zip(words[1:], starts[1:]))
    vtt = f"WEBVTT\n\n1\n{vtt_time(starts[0])} --> {vtt_time(end)}\n{text}\n"
    to_frame = lambda ms: round(ms / 1000 * rate)
    bounds = [to_frame(ms) for ms in starts] + [to_frame(end)]
    encoded = [(t, bounds[i], bounds[i + 1]) for i, (t, _, _) in enumerate(words)]
    return vtt, encoded


# ---------------------------------------------------------------- fixtures

def make_sentence():
    text = "a red apple is a sweet fruit".split()
    segs = word_segments(text, 4800, [2401, 3001, 1777, 4099, 2203, 3607], 6011)
    samples, words = assemble(segs)
    verify_words(samples, words)
    write_wav("Audio/fixtures/sentence.wav", samples)
    n = len(samples)
    write_json("Timings/fixtures/sentence.truth.json", truth_json(words, n))
    write_json("Timings/fixtures/sentence.json", canonical_json(words))
    write_text("Timings/fixtures/sentence.txt", audacity_labels(words))
    vtt, encoded = karaoke_vtt(words)
    write_text("Timings/fixtures/sentence.vtt", vtt)
    write_json("Timings/fixtures/sentence.vtt.truth.json", truth_json(encoded, n))
    return samples, words


def make_timing_samples(words, n):
    """The sentence's timings in the formats aligners and subtitle tools write, each written
    from its format's specification with the times that tool would print, and a truth file
    per sample: the frames those printed times mean at 48 kHz (exact decimal arithmetic)."""
    from fractions import Fraction
    import math

    def frames_of(text):
        value = Fraction(text) * RATE
        return math.floor(value + Fraction(1, 2))

    def ms3(frame):
        return f"{frame_to_ms(frame) / 1000:.3f}"

    def hms(frame, comma=False):
        ms = frame_to_ms(frame)
        text = vtt_time(ms)
        return text.replace(".", ",") if comma else text

    def truth(rel, items):
        write_json(rel, {"sampleRate": RATE, "words": [{"text": t, "startFrame": a, "endFrame": b} for t, a, b in items]})

    base = "Timings/fixtures/formats/"
    ms_words = [(t, frames_of(ms3(a)), frames_of(ms3(b))) for t, a, b in words]

    # SubRip: one cue per word, hh:mm:ss,mmm.
    write_text(base + "sentence.srt", "".join(
        f"{i + 1}\n{hms(a, True)} --> {hms(b, True)}\n{t}\n\n" for i, (t, a, b) in enumerate(words)))
    truth(base + "sentence.srt.truth.json", ms_words)

    # Praat TextGrid as the Montreal Forced Aligner writes it: a words tier covering the
    # whole file (pauses as empty intervals) and a phones tier; long and short text formats.
    total = sec(n)
    intervals = []
    cursor = "0"
    for t, a, b in words:
        if sec(a) != cursor:
            intervals.append((cursor, sec(a), ""))
        intervals.append((sec(a), sec(b), t))
        cursor = sec(b)
    if cursor != total:
        intervals.append((cursor, total, ""))
    phones = [(sec(a), sec(b), t.upper()[:2]) for t, a, b in words]
    tiers = [("words", intervals), ("phones", phones)]
    long = ['File type = "ooTextFile"', 'Object class = "TextGrid"', "", "xmin = 0 ", f"xmax = {total} ",
            "tiers? <exists> ", f"size = {len(tiers)} ", "item []: "]
    for number, (name, items) in enumerate(tiers, 1):
        long += [f"    item [{number}]:", '        class = "IntervalTier" ', f'        name = "{name}" ',
                 "        xmin = 0 ", f"        xmax = {total} ", f"        intervals: size = {len(items)} "]
        for k, (a, b, t) in enumerate(items, 1):
            long += [f"        intervals [{k}]:", f"            xmin = {a} ", f"            xmax = {b} ",
                     f'            text = "{t}" ']
    write_text(base + "sentence.TextGrid", "\n".join(long) + "\n")
    short = ['File type = "ooTextFile"', 'Object class = "TextGrid"', "", "0", total, "<exists>", str(len(tiers))]
    for name, items in tiers:
        short += ['"IntervalTier"', f'"{name}"', "0", total, str(len(items))]
        for a, b, t in items:
            short += [a, b, f'"{t}"']
    write_text(base + "sentence.short.TextGrid", "\n".join(short) + "\n")
    truth(base + "sentence.TextGrid.truth.json", words)

    # aeneas sync maps: fragments cover the file, each ending where the next begins;
    # times printed to the millisecond.
    bounds = [0] + [a for _, a, _ in words[1:]] + [n]
    fragments = [(f"f{k + 1:06d}", t, bounds[k], bounds[k + 1]) for k, (t, _, _) in enumerate(words)]
    aeneas_truth = [(t, frames_of(ms3(a)), frames_of(ms3(b))) for _, t, a, b in fragments]
    doc = {"fragments": [{"begin": ms3(a), "children": [], "end": ms3(b), "id": i, "language": "eng", "lines": [t]}
                         for i, t, a, b in fragments]}
    write_text(base + "sentence.aeneas.json", json.dumps(doc, indent=1, sort_keys=True) + "\n")
    write_text(base + "sentence.csv", "".join(f'{i},{ms3(a)},{ms3(b)},"{t}"\n' for i, t, a, b in fragments))
    write_text(base + "sentence.tsv", "".join(f"{ms3(a)}\t{ms3(b)}\t{i}\n" for i, t, a, b in fragments))
    truth(base + "sentence.aeneas.truth.json", aeneas_truth)
    truth(base + "sentence.tsv.truth.json", [(i, a, b) for (i, _, _, _), (_, a, b) in zip(fragments, aeneas_truth)])
    pars = "".join(
        f'   <par id="par{k + 1:06d}">\n    <text src="sentence.xhtml#{i}"/>\n'
        f'    <audio clipBegin="{hms(a)}" clipEnd="{hms(b)}" src="../../../Audio/fixtures/sentence.wav"/>\n   </par>\n'
        for k, (i, t, a, b) in enumerate(fragments))
    write_text(base + "sentence.aeneas.smil",
               '<?xml version="1.0" encoding="UTF-8" standalone="no"?>\n'
               '<smil xmlns="http://www.w3.org/ns/SMIL" xmlns:epub="http://www.idpf.org/2007/ops" version="3.0">\n'
               ' <body>\n  <seq id="seq000001" epub:textref="sentence.xhtml">\n' + pars + "  </seq>\n </body>\n</smil>\n")
    write_text(base + "sentence.xhtml",
               '<?xml version="1.0" encoding="UTF-8"?>\n<html xmlns="http://www.w3.org/1999/xhtml">\n'
               " <head><title>sentence</title></head>\n <body>\n  <p>"
               + " ".join(f'<span id="{i}">{t}</span>' for i, t, _, _ in fragments) + "</p>\n </body>\n</html>\n")

    # EPUB 3 Media Overlays, with each SMIL clock-value form: full clock, partial clock,
    # timecount in s and in ms.
    forms = [lambda f: hms(f), lambda f: "%d:%06.3f" % divmod(frame_to_ms(f) / 1000, 60), lambda f: ms3(f) + "s",
             lambda f: f"{frame_to_ms(f)}ms"]
    pars = "".join(
        f'      <par id="w{k + 1}">\n        <text src="page.xhtml#word{k + 1}"/>\n'
        f'        <audio src="audio/sentence.mp4" clipBegin="{forms[k % 4](a)}" clipEnd="{forms[(k + 1) % 4](b)}"/>\n      </par>\n'
        for k, (t, a, b) in enumerate(words))
    write_text(base + "epub/chapter.smil",
               '<?xml version="1.0" encoding="UTF-8"?>\n'
               '<smil xmlns="http://www.w3.org/ns/SMIL" xmlns:epub="http://www.idpf.org/2007/ops" version="3.0">\n'
               '  <body>\n    <seq epub:textref="page.xhtml#p1" epub:type="bodymatter chapter">\n' + pars + "    </seq>\n  </body>\n</smil>\n")
    write_text(base + "epub/page.xhtml",
               '<?xml version="1.0" encoding="UTF-8"?>\n<!DOCTYPE html>\n'
               '<html xmlns="http://www.w3.org/1999/xhtml" xmlns:epub="http://www.idpf.org/2007/ops">\n'
               "  <head><title>A sentence</title></head>\n  <body>\n    <p id=\"p1\">"
               + " ".join(f'<span id="word{k + 1}">{t}</span>' for k, (t, _, _) in enumerate(words))
               + "</p>\n  </body>\n</html>\n")
    truth(base + "epub/chapter.smil.truth.json", ms_words)

    # Gentle: times to the hundredth (its 10 ms frames), offsets into the transcript, and a
    # transcript word it did not find in the audio (no times: skipped and reported).
    transcript = " ".join(t for t, _, _ in words) + " indeed"
    entries = []
    offset = 0
    for t, a, b in words:
        start, end = "%.2f" % (a / RATE), "%.2f" % (b / RATE)
        entries.append({"alignedWord": t, "case": "success", "end": Raw(end), "endOffset": offset + len(t),
                        "phones": [{"duration": Raw("%.2f" % ((b - a) / RATE)), "phone": t[0] + "_B"}],
                        "start": Raw(start), "startOffset": offset, "word": t})
        offset += len(t) + 1
    entries.append({"case": "not-found-in-audio", "endOffset": offset + 6, "startOffset": offset, "word": "indeed"})
    write_json(base + "sentence.gentle.json", {"transcript": transcript, "words": entries})
    truth(base + "sentence.gentle.truth.json", [(t, frames_of("%.2f" % (a / RATE)), frames_of("%.2f" % (b / RATE))) for t, a, b in words])


def make_formats():
    src = os.path.join(ROOT, "Audio/fixtures/sentence.wav")
    variants = [
        ("sentence-s24.wav", ["-b", "24"], []),
        ("sentence-s32.wav", ["-b", "32"], []),
        ("sentence-f32.wav", ["-e", "floating-point", "-b", "32"], []),
        ("sentence.flac", ["-b", "16"], []),
        ("sentence.ogg", ["-C", "3"], []),
        ("sentence-44100.wav", ["-b", "16", "-r", "44100"], ["rate", "-v", "44100"]),
        ("sentence-22050.wav", ["-b", "16", "-r", "22050"], ["rate", "-v", "22050"]),
        ("sentence-stereo.wav", ["-b", "16", "-c", "2"], ["remix", "1", "1"]),
    ]
    # The first second only ("a", "red" and the gaps around them): enough to prove each
    # format decodes to the same samples, and it keeps Audio/ small.
    for name, opts, effects in variants:
        rel = f"Audio/fixtures/formats/{name}"
        run([*SOX, src, *opts, out_path(rel), "trim", "0", f"{FORMAT_FRAMES}s", *effects])
        report(rel)


def make_impulses():
    truth = {}
    for r in [22050, 44100, 48000, 96000]:
        ks = [round(0.05 * r), 1237, round(0.5 * r) + 3, round(0.9 * r)]
        assert len(set(ks)) == len(ks), ks
        ks = sorted(ks)
        s = [0] * r
        for k in ks:
            s[k] = 16384
        write_wav(f"Audio/fixtures/impulses-{r}.wav", s, rate=r)
        truth[str(r)] = {"frames": r, "impulses": ks}
    write_json("Timings/fixtures/impulses.truth.json", truth)


def frames_at(frame, rate, target=RATE):
    """frame at rate, in frames at target: round half up, in integers."""
    return (2 * frame * target + rate) // (2 * rate)


def add_markers(rel, markers):
    """Append a `cue ` chunk and a LIST/adtl chunk of `labl` labels to the WAV at rel, as the
    RIFF specification (and Audacity) lay them out. markers: [(frame, label)] in the order to
    list them; an empty label gets no `labl` (a marker without a name)."""
    path = out_path(rel)
    with open(path, "rb") as f:
        data = f.read()
    assert data[:4] == b"RIFF" and data[8:12] == b"WAVE" and len(data) % 2 == 0
    cue = struct.pack("<I", len(markers))
    adtl = b"adtl"
    for ident, (frame, label) in enumerate(markers, 1):
        # id, position, fccChunk, chunkStart, blockStart, sampleOffset
        cue += struct.pack("<II4sIII", ident, frame, b"data", 0, 0, frame)
        if label:
            body = struct.pack("<I", ident) + label.encode() + b"\0"
            adtl += b"labl" + struct.pack("<I", len(body)) + body + (b"\0" if len(body) % 2 else b"")
    extra = b"cue " + struct.pack("<I", len(cue)) + cue
    if len(adtl) > 4:
        extra += b"LIST" + struct.pack("<I", len(adtl)) + adtl
    body = data[12:] + extra
    with open(path, "wb") as f:
        f.write(b"RIFF" + struct.pack("<I", 4 + len(body)) + b"WAVE" + body)
    report(rel, f"{len(markers)} cue markers")


def make_markers():
    """A 22.05 kHz file whose cue points are listed out of order, one label with XML/JSON
    specials, and a last marker without a label that ends the last word; its truth at 48 kHz."""
    rate = 22050
    rel = "Audio/fixtures/markers-22050.wav"
    run([*SOX, "-n", "-r", str(rate), "-c", "1", "-b", "16", out_path(rel), "synth", "1", "sine", "440", "vol", "0.3"])
    markers = [(11028, "sat"), (2205, "the"), (7000, 'cat & "dog"'), (16000, "")]
    add_markers(rel, markers)
    ordered = sorted(markers)
    words = []
    for i, (frame, label) in enumerate(ordered):
        if label:
            end = ordered[i + 1][0] if i + 1 < len(ordered) else rate
            words.append({"text": label, "start": frames_at(frame, rate), "end": frames_at(end, rate)})
    write_json("Timings/fixtures/markers.truth.json", {"rate": RATE, "frames": frames_at(rate, rate), "words": words})


def shared_clips():
    """The clips the sample lessons share (paths relative to Timings/lessons/): the correct
    sound, the whoosh, the three congratulations, the sight-word sentence parts."""
    aud = "../../Audio/lessons"
    return {
        "sfx": {"file": f"{aud}/sfx/correct.wav"},
        "whoosh": {"file": f"{aud}/sfx/whoosh.wav"},
        "ga": {"file": f"{aud}/congrats/great-job.wav"},
        "gb": {"file": f"{aud}/congrats/well-done.wav"},
        "gc": {"file": f"{aud}/congrats/awesome.wav"},
        "p1": {"file": f"{aud}/sight-words/part1.wav", "timings": "sight-words/part1.json"},
        "p2": {"file": f"{aud}/sight-words/part2.wav", "timings": "sight-words/part2.json"},
    }


CONGRATS_POOL = {"congrats": {"clips": ["ga", "gb", "gc"], "noRepeat": 2}}


def make_lesson():
    # --- sfx
    a = sox_synth("t1.wav", 2, ["synth", "0.15", "sine", "880", "fade", "0.005", "0", "0.02", "vol", "0.5"], tmp=True)
    b = sox_synth("t2.wav", 2, ["synth", "0.15", "sine", "1320", "fade", "0.005", "0", "0.02", "vol", "0.5"], tmp=True)
    rel = "Audio/lessons/sfx/correct.wav"
    run([*SOX, a, b, out_path(rel)])
    report(rel)
    rel = "Audio/lessons/sfx/whoosh.wav"
    sox_synth(rel, 1, ["synth", "0.4", "sine", "300-3000", "fade", "0.02", "0", "0.1", "vol", "0.5"])
    report(rel)

    # --- congrats phrases (synthesised whole, trimmed)
    for name, phrase in [("great-job", "Great job!"), ("well-done", "Well done!"), ("awesome", "Awesome!")]:
        write_wav(f"Audio/lessons/congrats/{name}.wav", speech(phrase))

    # --- sight words
    for name, text in [("part1", "I can see"), ("part2", "the big red hat")]:
        samples, words = assemble(word_segments(text.split(), 2400, 2400, 2400))
        verify_words(samples, words)
        write_wav(f"Audio/lessons/sight-words/{name}.wav", samples)
        write_json(f"Timings/lessons/sight-words/{name}.json", canonical_json(words))

    # --- picture dictionary: "apple", ding, definition word by word, ding
    ding_path = sox_synth("ding.wav", 1, ["synth", "0.25", "sine", "1568", "fade", "0.005", "0", "0.15", "vol", "0.4"], tmp=True)
    _, _, ding = read_wav(ding_path)
    definition = [("A",), ("round",), ("fruit",), ("that",), ("grows",), ("on",), ("trees", "trees.")]
    segs = [("sil", 2400), ("word", "apple"), ("sil", 4801), ("sfx", ding), ("sil", 4801)]
    segs += word_segments(definition, 0, 2011, 4801)[1:]
    segs += [("sfx", ding), ("sil", 4800)]
    samples, words = assemble(segs)
    verify_words(samples, words)
    write_wav("Audio/lessons/dictionary/apple.wav", samples)
    write_text("Timings/lessons/dictionary/apple.txt", audacity_labels(words))
    def_start, def_end = sec(words[1][1]), sec(words[-1][2])
    write_json("Timings/lessons/dictionary/apple.region.json",
               {"defStart": Raw(def_start), "defEnd": Raw(def_end)})

    # --- lesson file (paths relative to Timings/lessons/)
    aud = "../../Audio/lessons"
    lesson = {
        "sampleRate": 48000,
        "channels": 2,
        "clips": {
            **shared_clips(),
            "apple": {"file": f"{aud}/dictionary/apple.wav", "timings": "dictionary/apple.txt"},
            "def": {"file": f"{aud}/dictionary/apple.wav", "timings": "dictionary/apple.txt",
                    "start": Raw(def_start), "end": Raw(def_end)},
        },
        "pools": CONGRATS_POOL,
        "chains": {
            "correct": [{"clip": "sfx"}, {"pool": "congrats"}, {"pulse": ["ticket-1"]},
                        {"clip": "p1"}, {"silence": Raw("0.25")}, {"clip": "p2"},
                        {"pulse": ["checkbox"]}],
            "popup": [{"clip": "apple"}],
            "definition": [{"clip": "def"}, {"clip": "whoosh"}],
        },
    }
    write_json("Timings/lessons/sample.json", lesson)


def make_sight_words_activity():
    """Learn with Homer, sight words in a sentence: the activity's own clips and lesson."""
    for name, text in [("intro", "Tap the word you hear."), ("try-again", "Try again!")]:
        write_wav(f"Audio/lessons/homer/{name}.wav", speech(text))
    for name, text in [("see-tap-see", "see, tap see"), ("hat-tap-hat", "hat, tap hat"),
                       ("word-see", "see"), ("word-hat", "hat")]:
        samples, words = assemble(word_segments(text.replace(",", "").split(), 2400, 2400, 2400))
        verify_words(samples, words)
        write_wav(f"Audio/lessons/homer/{name}.wav", samples)
        write_json(f"Timings/lessons/homer/{name}.json", canonical_json(words))

    aud = "../../Audio/lessons"
    clip = lambda name: {"file": f"{aud}/homer/{name}.wav", "timings": f"homer/{name}.json"}
    lesson = {
        "sampleRate": 48000,
        "channels": 2,
        "clips": {
            **shared_clips(),
            "intro": {"file": f"{aud}/homer/intro.wav"},
            "try-again": {"file": f"{aud}/homer/try-again.wav"},
            "see-tap-see": clip("see-tap-see"),
            "hat-tap-hat": clip("hat-tap-hat"),
            "word-see": clip("word-see"),
            "word-hat": clip("word-hat"),
        },
        "pools": CONGRATS_POOL,
        "chains": {
            "prompt-1": [{"clip": "intro"}, {"clip": "p1"}],
            "idle-see": [{"clip": "see-tap-see"}],
            "idle-hat": [{"clip": "hat-tap-hat"}],
            "try-again": [{"clip": "try-again"}],
            "correct-1": [{"clip": "sfx"}, {"pool": "congrats"}, {"clip": "p1"}, {"clip": "p2"}],
            "correct-2": [{"clip": "sfx"}, {"pool": "congrats"}, {"clip": "p1"}, {"clip": "p2"}],
            "tickets": [{"pulse": ["ticket-1"]}, {"clip": "word-see"}, {"clip": "whoosh"},
                        {"pulse": ["ticket-2"]}, {"clip": "word-hat"}, {"clip": "whoosh"}],
        },
        "activities": {
            "sight-words": {
                "idleSeconds": Raw("4.0"),
                "taps": "interrupt",
                "steps": [
                    {"prompt": "prompt-1", "answer": "see",
                     "idle": {"chain": "idle-see", "pulse": ["tile-see"]},
                     "correct": "correct-1",
                     "wrong": ["try-again", {"chain": "idle-see", "pulse": ["tile-see"]}]},
                    {"answer": "hat",
                     "idle": {"chain": "idle-hat", "pulse": ["tile-hat"]},
                     "correct": "correct-2",
                     "wrong": ["try-again", {"chain": "idle-hat", "pulse": ["tile-hat"]}]},
                ],
                "final": "tickets",
            }
        },
    }
    write_json("Timings/lessons/homer-sight-words.json", lesson)


def narration(rel, text, rate=11025):
    """A narration clip for the app sample lessons: espeak-ng at 11.025 kHz mono (resampled to the
    lesson rate when it loads), trimmed; small, so that Audio/ stays small."""
    raw = os.path.join(TMP, "narration.wav")
    run(["espeak-ng", *VOICE, "-w", raw, text])
    run([*SOX, raw, "-r", str(rate), "-b", "16", "-c", "1", out_path(rel), "rate", "-v", *TRIM])
    report(rel)


def narration_samples(text, rate=11025):
    """What narration() writes, as samples instead of a file."""
    tmp = os.path.join(TMP, "narration-part.wav")
    raw = os.path.join(TMP, "narration.wav")
    run(["espeak-ng", *VOICE, "-w", raw, text])
    run([*SOX, raw, "-r", str(rate), "-b", "16", "-c", "1", tmp, "rate", "-v", *TRIM])
    return read_wav(tmp)[2]


def make_app_lessons():
    """Sample lessons for every app of the product documents (shared/seeds), at 48 kHz."""
    aud = "../../Audio/lessons"
    apps = "Audio/lessons/apps"

    def lesson(clips, chains, activities=None, pools=None, sprites=None):
        out = {"sampleRate": 48000, "channels": 2, "clips": clips}
        if sprites:
            out["sprites"] = sprites
        if pools:
            out["pools"] = pools
        out["chains"] = chains
        if activities:
            out["activities"] = activities
        return out

    def say(name, text):
        narration(f"{apps}/{name}.wav", text)
        return {"file": f"{aud}/apps/{name}.wav"}

    # Learn with Homer: the hat shop (music under a first-use or return-use welcome, tap sounds)
    rel = f"{apps}/hat-shop-music.wav"
    run([*SOX, "-n", "-r", "11025", "-c", "1", "-b", "16", out_path(rel), "synth", "6",
         "sine", "262", "sine", "330", "remix", "-", "tremolo", "2", "40", "vol", "0.25", "fade", "0.2", "6", "0.5"])
    report(rel)
    # The tap sounds as one howler.js sprite, the way a web build ships them (a WebM listed
    # first for browsers, the WAV Narrator decodes after it).
    parts = []
    for effects in (["synth", "0.5", "sine", "700-500", "fade", "0.02", "0.5", "0.2", "vol", "0.5"],
                    ["synth", "0.6", "sine", "400-120", "fade", "0.01", "0.6", "0.3", "vol", "0.5"]):
        tmp = os.path.join(TMP, "sfx-part.wav")
        run([*SOX, "-n", "-r", "11025", "-c", "1", "-b", "16", tmp, *effects])
        parts.append(read_wav(tmp)[2])
    hats_at = frames_at(750, 1000, 11025)
    assert len(parts[0]) <= hats_at
    write_wav(f"{apps}/hat-shop-sfx.wav", parts[0] + [0] * (hats_at - len(parts[0])) + parts[1], rate=11025)
    write_json(f"{apps}/hat-shop-sfx.json", {"src": ["hat-shop-sfx.webm", "hat-shop-sfx.wav"],
                                              "sprite": {"meow": [0, 500], "hats": [750, 600]}})
    write_json("Timings/lessons/homer-hat-shop.json", lesson(
        {"music": {"file": f"{aud}/apps/hat-shop-music.wav", "bus": "music"},
         "welcome-first": say("welcome-first", "Welcome to the hat shop! Put on your thinking cap. "
                              "Find a grownup to help you get set up, then tap the mirror."),
         "welcome-return": say("welcome-return", "Welcome back! Have you been here before? If so, tap your picture. "
                               "If not, tap an empty picture to get started!"),
         },
        {"welcome-first": [{"silence": Raw("0.5")}, {"clip": "welcome-first"}, {"pulse": ["mirror"]}],
         "welcome-return": [{"silence": Raw("0.5")}, {"clip": "welcome-return"}, {"pulse": ["portraits"]}],
         "meow": [{"clip": "sfx.meow"}], "hats": [{"clip": "sfx.hats"}]},
        # The music under the whole activity, looped over 1-5 s: whole cycles of both tones
        # (262 and 330 Hz) and of the 2 Hz tremolo, so the seam is continuous.
        {"hat-shop": {"intro": {"first-use": "welcome-first", "return-use": "welcome-return"},
                      "sounds": {"cat": "meow", "hats": "hats"}, "polyphony": 2,
                      "music": {"clip": "music", "loop": {"start": 1, "end": 5}}}},
        sprites={"sfx": {"map": f"{aud}/apps/hat-shop-sfx.json"}}))

    # Learn with Homer: the main-menu popup, each line pulsing its icon as it is said. The
    # three lines are one file: as regions of it with pulses in the chain, or whole with the
    # pulses as its cue markers (the way an author marks them in Audacity).
    lines = [("icon-read", "Tap Read to read a book."), ("icon-games", "Tap Games to play a game."),
             ("icon-library", "Tap Library to find more books.")]
    menu, starts = [], []
    for _, text in lines:
        starts.append(len(menu))
        menu += narration_samples(text)
    menu_rel = f"{apps}/menu.wav"
    write_wav(menu_rel, menu, rate=11025)
    add_markers(menu_rel, [(start, icon) for start, (icon, _) in zip(starts, lines)])
    # A region's seconds give the same frame as the marker: round(seconds x 48000).
    for start in starts:
        assert round(float(sec(start, 11025)) * RATE) == frames_at(start, 11025)
    write_json("Timings/fixtures/menu.truth.json", {
        "rate": RATE, "frames": frames_at(len(menu), 11025),
        "pulses": [[icon, frames_at(start, 11025)] for start, (icon, _) in zip(starts, lines)]})
    menu_file = f"{aud}/apps/menu.wav"
    write_json("Timings/lessons/homer-main-menu.json", lesson(
        {"read": {"file": menu_file, "end": Raw(sec(starts[1], 11025))},
         "games": {"file": menu_file, "start": Raw(sec(starts[1], 11025)), "end": Raw(sec(starts[2], 11025))},
         "library": {"file": menu_file, "start": Raw(sec(starts[2], 11025))},
         "menu": {"file": menu_file, "markers": "pulses"}},
        {"popup": [{"pulse": ["icon-read"]}, {"clip": "read"}, {"pulse": ["icon-games"]}, {"clip": "games"},
                   {"pulse": ["icon-library"]}, {"clip": "library"}],
         "popup-markers": [{"clip": "menu"}]},
        {"main-menu-popup": {"intro": "popup"}, "main-menu-markers": {"intro": "popup-markers"}}))

    # Picture Dictionary: the word popup (word, sound, definition read word by word, sound:
    # one file), with replay and close as taps
    write_json("Timings/lessons/picture-dictionary.json", lesson(
        {"apple": {"file": f"{aud}/dictionary/apple.wav", "timings": "dictionary/apple.txt",
                   "transcript": "Apple. A round fruit that grows on trees."}},
        {"popup": [{"clip": "apple"}]},
        {"word-popup": {"intro": "popup"}}))

    # Animal Island: auto-played popups with a speaker button (replay), Mr. Goose's welcome
    write_json("Timings/lessons/animal-island.json", lesson(
        {"screen-time": say("screen-time", "You have played for a long time. Time for a break!"),
         "change-avatar": say("change-avatar", "Tap an animal to change your avatar."),
         "no-wifi": say("no-wifi", "Oops! There is no internet. Ask a grownup for help."),
         "goose": say("goose-welcome", "Hello! I am Mister Goose. Welcome to Animal Island!")},
        {"screen-time": [{"clip": "screen-time"}], "change-avatar": [{"clip": "change-avatar"}],
         "no-wifi": [{"clip": "no-wifi"}], "goose-welcome": [{"clip": "goose"}, {"pulse": ["main-screen"]}]},
        {"screen-time-popup": {"intro": "screen-time"}, "change-avatar-popup": {"intro": "change-avatar"},
         "no-wifi-popup": {"intro": "no-wifi"}, "goose-welcome": {"intro": "goose-welcome"}}))

    # iBC's letter tracing: letter names (announced at priority text: a new one interrupts the
    # last), instructions, the info button
    write_json("Timings/lessons/ibcs.json", lesson(
        {"a": say("letter-a", "A."), "b": say("letter-b", "B."), "c": say("letter-c", "C."),
         "trace": say("trace", "Trace the letter with your finger."),
         "info": say("info", "This is where you practice letters. Swipe to see the next letter.")},
        {"letter-a": [{"clip": "a"}, {"clip": "trace"}], "letter-b": [{"clip": "b"}, {"clip": "trace"}],
         "letter-c": [{"clip": "c"}, {"clip": "trace"}], "info": [{"clip": "info"}]}))

    # Learn with Homer: the discover matching and sequencing templates. A wrong answer says
    # "Try again" and the image animates back when that audio ends (feedbackEnd); a right one
    # says a congratulation and the photo's explanation; after the last, the final audio, then
    # the page advances. (8 kHz narration: a sample, and Audio/ stays under 5 MB.)
    def say8(name, text):
        narration(f"{apps}/{name}.wav", text, rate=8000)
        return {"file": f"{aud}/apps/{name}.wav"}
    photos = ["a frog on a log", "a bird in a nest", "a fish in a pond", "a bee on a flower"]
    clips = {"match-intro": say8("match-intro", "Match each picture to its word."),
             "order-intro": say8("order-intro", "Put the pictures in order."),
             "try-again": {"file": f"{aud}/homer/try-again.wav"},
             "ga": {"file": f"{aud}/congrats/great-job.wav"}, "gb": {"file": f"{aud}/congrats/well-done.wav"},
             "gc": {"file": f"{aud}/congrats/awesome.wav"},
             "all-matched": say8("all-matched", "You matched them all!"),
             "all-ordered": say8("all-ordered", "You put them all in order!")}
    chains = {"match-intro": [{"clip": "match-intro"}], "order-intro": [{"clip": "order-intro"}],
              "try-again": [{"clip": "try-again"}], "all-matched": [{"clip": "all-matched"}],
              "all-ordered": [{"clip": "all-ordered"}]}
    for k, photo in enumerate(photos, 1):
        clips[f"photo-{k}"] = say8(f"photo-{k}", f"This is {photo}.")
        chains[f"right-{k}"] = [{"pool": "congrats"}, {"clip": f"photo-{k}"}]
    write_json("Timings/lessons/homer-discover.json", lesson(
        clips, chains,
        {"matching": {"steps": [dict({"prompt": "match-intro"} if k == 1 else {}, answer=f"photo-{k}",
                                     correct=f"right-{k}", wrong=["try-again"]) for k in range(1, 5)],
                      "final": "all-matched"},
         "sequencing": {"steps": [dict({"prompt": "order-intro"} if k == 1 else {}, answer=f"card-{k}",
                                       correct=f"right-{k}", wrong=["try-again"]) for k in range(1, 4)],
                        "final": "all-ordered"}},
        pools=CONGRATS_POOL))

    # K-1 Math: lesson intro, a hint, coin names and values as they are placed (priority
    # message: they queue), the recap
    write_json("Timings/lessons/math.json", lesson(
        {"intro": say("math-intro", "Let's count coins! Drag each coin to the bank."),
         "hint": say("math-hint", "Hint: count the dimes first, then the nickels."),
         "penny": say("penny", "A penny. One cent."), "nickel": say("nickel", "A nickel. Five cents."),
         "dime": say("dime", "A dime. Ten cents."),
         "recap": say("math-recap", "You counted sixteen cents. Great counting!"),
         "yay": {"file": f"{aud}/sfx/correct.wav", "bus": "sfx"}},
        {"intro": [{"clip": "intro"}], "hint": [{"clip": "hint"}], "penny": [{"clip": "penny"}],
         "nickel": [{"clip": "nickel"}], "dime": [{"clip": "dime"}], "recap": [{"clip": "yay"}, {"clip": "recap"}]}))


def main():
    global TMP
    os.chdir(ROOT)
    with tempfile.TemporaryDirectory(prefix="narrator-fixtures-") as tmp:
        TMP = tmp
        sentence, sentence_words = make_sentence()
        make_timing_samples(sentence_words, len(sentence))
        make_formats()
        make_impulses()
        make_markers()
        make_lesson()
        make_sight_words_activity()
        make_app_lessons()


if __name__ == "__main__":
    main()
