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
          cross-correlation with the clean file and removed, so the boundaries stay exact).

usage: heldout.py OUTDIR   (writes OUTDIR/clean, OUTDIR/dither, OUTDIR/mp3)
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
if len(sys.argv) != 2:
    sys.exit(__doc__)
out = sys.argv[1]; rng = np.random.default_rng(7)
for sub in ("clean", "dither", "mp3"): os.makedirs(os.path.join(out, sub), exist_ok=True)
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
            for sub in ("clean", "dither", "mp3"):
                json.dump(meta, open(os.path.join(out, sub, base + ".json"), "w"))
print(f"heldout: {len(VOICES) * len(TEXTS) * 3} recordings in {out} ({', '.join(VOICES)})", file=sys.stderr)
