#!/usr/bin/env python3
"""Synthetic recordings unlike synth.py's: other voices, rates, texts and files as other tools
write them, every word boundary exact (the same method: each word synthesized alone, cut to its
sound at -50 dBFS, laid end to end with digital silences of 30-120 ms; 250 ms lead-in, 400 ms
at the end). Voices: espeak-ng en-gb at 120 words a minute, espeak-ng en-us+f3 at 250,
flite's kal (8 kHz diphones) and rms, festival's kal_diphone when `text2wave` is installed.
Files at 22.05 and 44.1 kHz in turn, in three variants:
  clean   16-bit WAV;
  dither  16-bit WAV with TPDF dither (a floor of about -96 dBFS instead of digital silence);
  mp3     encoded by lame at 128 kb/s and decoded by sox (the decoder's delay measured by
          cross-correlation with the clean file and removed, so the boundaries stay exact);
  pad20   the clean file over a bed 20 dB under the voice (RMS of the words) unlike synth.py's
          piano: sustained detuned sawtooth chords through a low-pass, changing every 1.5-3 s,
          a plucked bass line (Karplus-Strong) on every beat at 96 bpm and a soft hi-hat;
  piano20 the clean file over a piano bed 20 dB under, unlike synth.py's: a minor key over three
          octaves, 1-4 notes at a time every 0.2-1.2 s, a held pedal (slower decay), 8 slightly
          inharmonic partials, a hammer's noise at each onset;
  hum30   the clean file over mains hum (50 Hz and harmonics) and pink noise 30 dB under.

usage: heldout.py OUTDIR   (writes OUTDIR/clean, dither, mp3, pad20, hum30)
"""
import json, os, subprocess, sys, tempfile, shutil
import numpy as np, soundfile as sf
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from synth import cut_to_sound  # noqa: E402
TEXTS = ["My grandmother baked warm bread and cookies for the whole village on Sunday",
         "Can you find the yellow duck hiding behind the big green tree",
         "Eight tiny frogs jumped into the pond and splashed the sleepy turtle"]
def espeak(v, s): return lambda w, out: ["espeak-ng", "-v", v, "-s", str(s), "-w", out, w]
VOICES = {"espeak-gb120": espeak("en-gb", 120), "espeak-f3-250": espeak("en-us+f3", 250),
          "flite-kal8k": lambda w, out: ["flite", "-voice", "kal", "-t", w, "-o", out],
          "flite-rms": lambda w, out: ["flite", "-voice", "rms", "-t", w, "-o", out]}
if shutil.which("text2wave"):
    VOICES["festival"] = lambda w, out: ["sh", "-c", f"echo '{w}' | text2wave -o {out}"]
VARIANTS = ("clean", "dither", "mp3", "piano20", "pad20", "hum30")


def pad_bed(n, rate, rng):
    """Chords of detuned saws through a one-pole low-pass, a plucked bass, a hi-hat."""
    t = np.arange(n) / rate
    bed = np.zeros(n)
    pos = 0
    while pos < n:
        length = min(n - pos, int(rng.uniform(1.5, 3.0) * rate))
        root = rng.choice([45, 48, 50, 53])
        seg = np.arange(length) / rate
        env = np.minimum(1, seg / 0.3) * np.minimum(1, (length / rate - seg) / 0.3 + 0.05)
        for interval in (0, 4, 7, 12):
            f = 440 * 2 ** ((root + interval - 69) / 12)
            for detune in (-0.004, 0.004):
                bed[pos:pos + length] += env * (2 * ((seg * f * (1 + detune)) % 1) - 1)
        pos += length
    y = np.zeros(n)
    a = np.exp(-2 * np.pi * 1200 / rate)
    acc = 0.0
    for i in range(n):
        acc = (1 - a) * bed[i] + a * acc
        y[i] = acc
    beat = int(rate * 60 / 96)
    for start in range(0, n, beat):
        f = 440 * 2 ** ((rng.choice([33, 36, 38, 41]) - 69) / 12)
        period = int(rate / f)
        ring = rng.uniform(-1, 1, period)
        pluck = np.zeros(min(n - start, int(0.6 * rate)))
        for i in range(len(pluck)):
            pluck[i] = ring[i % period]
            ring[i % period] = 0.996 * 0.5 * (ring[i % period] + ring[(i + 1) % period])
        y[start:start + len(pluck)] += 0.8 * pluck
        hat = rng.normal(0, 1, min(n - start - beat // 2, int(0.04 * rate))) if start + beat // 2 < n else np.zeros(0)
        hat = np.diff(hat, prepend=0) * np.exp(-np.arange(len(hat)) / (0.01 * rate))
        y[start + beat // 2:start + beat // 2 + len(hat)] += 0.3 * hat
    return y


def piano_bed(n, rate, rng):
    bed = np.zeros(n)
    pos = 0
    notes = [45, 48, 52, 55, 57, 59, 60, 62, 64, 67, 69, 72, 74, 76]
    while pos < n:
        step = int(rng.uniform(0.2, 1.2) * rate)
        for midi in rng.choice(notes, size=int(rng.integers(1, 5)), replace=False):
            f = 440 * 2 ** ((midi - 69) / 12)
            seg = np.arange(min(int(2.5 * rate), n - pos)) / rate
            env = np.exp(-seg * 1.5) * (1 - np.exp(-seg * 400))
            tone = sum(np.sin(2 * np.pi * f * k * np.sqrt(1 + 0.0004 * k * k) * seg) / k for k in range(1, 9) if f * k < rate / 2)
            hammer = rng.normal(0, 0.3, len(seg)) * np.exp(-seg / 0.004)
            bed[pos:pos + len(seg)] += env * tone + hammer
        pos += step
    return bed


def hum_bed(n, rate, rng):
    t = np.arange(n) / rate
    hum = sum(0.5 ** k * np.sin(2 * np.pi * 50 * (k + 1) * t + rng.uniform(0, 6.3)) for k in range(6))
    white = rng.normal(0, 1, n)
    pink = np.zeros(n)
    b = [0.0, 0.0, 0.0]
    for i in range(n):  # Paul Kellet's economy pink filter
        b[0] = 0.99765 * b[0] + white[i] * 0.0990460
        b[1] = 0.96300 * b[1] + white[i] * 0.2965164
        b[2] = 0.57000 * b[2] + white[i] * 1.0526913
        pink[i] = b[0] + b[1] + b[2] + white[i] * 0.1848
    pink *= np.sqrt(np.mean(hum ** 2)) / np.sqrt(np.mean(pink ** 2))
    return hum + pink


def under(y, words, rate, bed, decibels):
    voiced = np.concatenate([y[int(w["start"] * rate):int(w["end"] * rate)] for w in words])
    bed = bed * np.sqrt(np.mean(voiced ** 2)) * 10 ** (-decibels / 20) / np.sqrt(np.mean(bed ** 2))
    z = y + bed
    return z / max(1.0, np.max(np.abs(z)) / 0.9)


if len(sys.argv) != 2:
    sys.exit(__doc__)
out = sys.argv[1]; rng = np.random.default_rng(7); bed_rng = np.random.default_rng(11)
for sub in VARIANTS: os.makedirs(os.path.join(out, sub), exist_ok=True)
with tempfile.TemporaryDirectory() as td:
    for vi, (voice, cmd) in enumerate(VOICES.items()):
        RATE = [22050, 44100][vi % 2]
        for ti, text in enumerate(TEXTS):
            pieces, words, t = [np.zeros(int(0.25 * RATE))], [], 0.25
            for w in text.split():
                raw = os.path.join(td, "w.wav"); w16 = os.path.join(td, "w16.wav")
                subprocess.run(cmd(w, raw), check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                subprocess.run(["sox", raw, "-r", str(RATE), "-c", "1", "-b", "32", "-e", "float", w16], check=True)
                x, _ = sf.read(w16, dtype="float64")
                x = cut_to_sound(x)
                words.append({"text": w.lower(), "start": round(t, 6), "end": round(t + len(x) / RATE, 6)})
                pieces.append(x); t += len(x) / RATE
                gap = int(rng.uniform(0.030, 0.120) * RATE); pieces.append(np.zeros(gap)); t += gap / RATE
            pieces[-1] = np.zeros(int(0.40 * RATE))
            y = np.concatenate(pieces); y = y / np.max(np.abs(y)) * 0.5
            base = f"{voice}-{ti + 1}"
            meta = {"source": voice, "speaker": voice, "language": "eng", "kind": "synthetic", "words": words}
            sf.write(os.path.join(out, "clean", base + ".wav"), y, RATE, subtype="PCM_16")
            d = y + (rng.uniform(-0.5, 0.5, len(y)) + rng.uniform(-0.5, 0.5, len(y))) / 32768
            sf.write(os.path.join(out, "dither", base + ".wav"), d, RATE, subtype="PCM_16")
            tmpw = os.path.join(td, "m.wav"); tmpm = os.path.join(td, "m.mp3")
            sf.write(tmpw, y, RATE, subtype="PCM_16")
            subprocess.run(["lame", "--quiet", "-b", "128", tmpw, tmpm], check=True)
            decoded = os.path.join(td, "d.wav")
            subprocess.run(["sox", tmpm, "-b", "16", decoded], check=True)
            z, _ = sf.read(decoded)
            lag = int(np.argmax(np.correlate(z[:RATE * 2], y[:RATE * 2 - 4000], "valid")))
            z = z[lag:lag + len(y)]
            z = np.concatenate([z, np.zeros(len(y) - len(z))])
            sf.write(os.path.join(out, "mp3", base + ".wav"), z, RATE, subtype="PCM_16")
            sf.write(os.path.join(out, "piano20", base + ".wav"), under(y, words, RATE, piano_bed(len(y), RATE, bed_rng), 20), RATE, subtype="PCM_16")
            sf.write(os.path.join(out, "pad20", base + ".wav"), under(y, words, RATE, pad_bed(len(y), RATE, bed_rng), 20), RATE, subtype="PCM_16")
            sf.write(os.path.join(out, "hum30", base + ".wav"), under(y, words, RATE, hum_bed(len(y), RATE, bed_rng), 30), RATE, subtype="PCM_16")
            for sub in VARIANTS:
                json.dump(meta, open(os.path.join(out, sub, base + ".json"), "w"))
print(f"heldout: {len(VOICES) * len(TEXTS) * len(VARIANTS)} recordings in {out} ({', '.join(VOICES)})", file=sys.stderr)
