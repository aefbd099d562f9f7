#!/usr/bin/env python3
"""Compare time stretchers for speech: Sonic, SoundTouch and Rubber Band.

Re-makes the figures of docs/time-stretch.md. Each library is called through ctypes on its
shared library (libsonic0, libsoundtouch1 (its C "Dll" API), librubberband2); a library that
is not installed is skipped with a note. Rubber Band is GPL: it is measured here for reference
only, nothing of Narrator links it.

Every library runs as a real-time caller would run it: interleaved float frames fed in blocks
of BLOCK frames, what is ready taken after each block, then a flush. Measured at 0.5, 0.75,
1.5 and 2.0x:

  onset   word-onset accuracy on the fixtures' speech (Audio/lessons/**.wav with the word
          timings in Timings/lessons/**). Onsets are found in the audio by an energy envelope
          (RMS over 5 ms ending at each sample), not by the code under test: for each timed
          word, the envelope's dip within 40 ms before to 20 ms after the timed start, and the
          onset where the envelope first rises 15 dB above the dip (words with no dip of 25 dB
          are left out). The same detector, with the same level, then looks for the onset in the
          stretched audio around onset/speed; the error is the detected onset
          minus onset/speed (ms). Mean, spread (max - min: what no constant latency
          correction removes) and max |error| over the words.
  sine    a 440 Hz sine (3 s, -6 dBFS) stretched, its frequency measured by interpolated zero
          crossings over the middle of the output; and its purity: the residual after a
          least-squares sine fit in 10 ms windows (median and worst window, dB below the tone),
          where splices show as phase jumps or amplitude dips.
  flat    speech spectral flatness (geometric / arithmetic mean of the power spectrum, 1024-point
          frames over voiced frames), stretched minus original: buzz or noise added shows as a
          rise.
  cpu     process CPU time per second of input speech (all the fixture clips concatenated,
          RUNS runs, the best and the median), including the ctypes call overhead, which is the
          same for all three.

  render  Narrator's own path, when a narrator binary is there (NARRATOR=path, or .build/debug or
          .build/release): the fixture clips in one chain, 0.3 s apart, rendered with
          `render --speed S --cues`; per word, the onset found in the stretched render (the
          detector above, at the level of the speed-1 render) minus where the speed-1 onset
          should be, round(onset1 / S); and the cue sheet's word frame minus round(cue1 / S),
          which must be 0 (the map is the line).

Usage: scripts/compare-stretchers.py [--runs N] [--block FRAMES]
Needs python3 with numpy.
"""

import argparse
import ctypes
import ctypes.util
import glob
import json
import os
import statistics
import subprocess
import tempfile
import sys
import time

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SPEEDS = [0.5, 0.75, 1.5, 2.0]
FLOAT_P = ctypes.POINTER(ctypes.c_float)


def load(names):
    for name in names:
        try:
            return ctypes.CDLL(name)
        except OSError:
            continue
    return None


def ptr(array):
    return array.ctypes.data_as(FLOAT_P)


class Sonic:
    name = "Sonic 0.2.0 (Apache-2.0)"

    def __init__(self, lib):
        self.lib = lib
        lib.sonicCreateStream.restype = ctypes.c_void_p
        lib.sonicCreateStream.argtypes = [ctypes.c_int, ctypes.c_int]
        lib.sonicDestroyStream.argtypes = [ctypes.c_void_p]
        lib.sonicSetSpeed.argtypes = [ctypes.c_void_p, ctypes.c_float]
        lib.sonicWriteFloatToStream.argtypes = [ctypes.c_void_p, FLOAT_P, ctypes.c_int]
        lib.sonicReadFloatFromStream.argtypes = [ctypes.c_void_p, FLOAT_P, ctypes.c_int]
        lib.sonicFlushStream.argtypes = [ctypes.c_void_p]

    def run(self, x, rate, channels, speed, block):
        lib = self.lib
        s = lib.sonicCreateStream(rate, channels)
        lib.sonicSetSpeed(s, speed)
        out = []
        buf = np.zeros(8 * block * channels + 65536, dtype=np.float32)

        def drain():
            while True:
                n = lib.sonicReadFloatFromStream(s, ptr(buf), len(buf) // channels)
                if n <= 0:
                    break
                out.append(buf[: n * channels].copy())

        frames = len(x) // channels
        for start in range(0, frames, block):
            chunk = np.ascontiguousarray(x[start * channels:min(frames, start + block) * channels])
            lib.sonicWriteFloatToStream(s, ptr(chunk), len(chunk) // channels)
            drain()
        lib.sonicFlushStream(s)
        drain()
        lib.sonicDestroyStream(s)
        return np.concatenate(out) if out else np.zeros(0, dtype=np.float32)


class SoundTouch:
    name = "SoundTouch 2.3.2 (LGPL-2.1)"

    def __init__(self, lib):
        self.lib = lib
        lib.soundtouch_createInstance.restype = ctypes.c_void_p
        for f in ["soundtouch_destroyInstance", "soundtouch_flush"]:
            getattr(lib, f).argtypes = [ctypes.c_void_p]
        lib.soundtouch_setTempo.argtypes = [ctypes.c_void_p, ctypes.c_float]
        lib.soundtouch_setChannels.argtypes = [ctypes.c_void_p, ctypes.c_uint]
        lib.soundtouch_setSampleRate.argtypes = [ctypes.c_void_p, ctypes.c_uint]
        lib.soundtouch_putSamples.argtypes = [ctypes.c_void_p, FLOAT_P, ctypes.c_uint]
        lib.soundtouch_receiveSamples.argtypes = [ctypes.c_void_p, FLOAT_P, ctypes.c_uint]
        lib.soundtouch_receiveSamples.restype = ctypes.c_uint

    def run(self, x, rate, channels, speed, block):
        lib = self.lib
        h = lib.soundtouch_createInstance()
        lib.soundtouch_setChannels(h, channels)
        lib.soundtouch_setSampleRate(h, rate)
        lib.soundtouch_setTempo(h, speed)
        out = []
        buf = np.zeros(8 * block * channels + 65536, dtype=np.float32)

        def drain():
            while True:
                n = lib.soundtouch_receiveSamples(h, ptr(buf), len(buf) // channels)
                if n <= 0:
                    break
                out.append(buf[: n * channels].copy())

        frames = len(x) // channels
        for start in range(0, frames, block):
            chunk = np.ascontiguousarray(x[start * channels:min(frames, start + block) * channels])
            lib.soundtouch_putSamples(h, ptr(chunk), len(chunk) // channels)
            drain()
        lib.soundtouch_flush(h)
        drain()
        lib.soundtouch_destroyInstance(h)
        y = np.concatenate(out) if out else np.zeros(0, dtype=np.float32)
        # flush() pads with silence past the nominal length; keep the nominal length.
        return y[: int(round(frames / speed)) * channels]


class RubberBand:
    name = "Rubber Band 3.1.2 (GPL-2+), reference only"
    OPTION_REALTIME = 0x00000001
    OPTION_ENGINE_FINER = 0x20000000
    OPTION_CHANNELS_TOGETHER = 0x10000000

    def __init__(self, lib):
        self.lib = lib
        lib.rubberband_new.restype = ctypes.c_void_p
        lib.rubberband_new.argtypes = [ctypes.c_uint, ctypes.c_uint, ctypes.c_int, ctypes.c_double, ctypes.c_double]
        lib.rubberband_delete.argtypes = [ctypes.c_void_p]
        lib.rubberband_get_start_delay.argtypes = [ctypes.c_void_p]
        lib.rubberband_get_start_delay.restype = ctypes.c_uint
        lib.rubberband_get_preferred_start_pad.argtypes = [ctypes.c_void_p]
        lib.rubberband_get_preferred_start_pad.restype = ctypes.c_uint
        lib.rubberband_process.argtypes = [ctypes.c_void_p, ctypes.POINTER(FLOAT_P), ctypes.c_uint, ctypes.c_int]
        lib.rubberband_available.argtypes = [ctypes.c_void_p]
        lib.rubberband_available.restype = ctypes.c_int
        lib.rubberband_retrieve.argtypes = [ctypes.c_void_p, ctypes.POINTER(FLOAT_P), ctypes.c_uint]
        lib.rubberband_retrieve.restype = ctypes.c_uint

    def run(self, x, rate, channels, speed, block):
        lib = self.lib
        # Real-time mode (what a live engine would use), the R3 "finer" engine.
        h = lib.rubberband_new(rate, channels, self.OPTION_REALTIME | self.OPTION_ENGINE_FINER, 1.0 / speed, 1.0)
        # The documented compensation: feed the preferred pad of silence first, then trim the
        # start delay from the output.
        pad = lib.rubberband_get_preferred_start_pad(h)
        delay = lib.rubberband_get_start_delay(h)
        x = np.concatenate([np.zeros(pad * channels, dtype=np.float32), x])
        frames = len(x) // channels
        planar = [np.ascontiguousarray(x[c::channels]) for c in range(channels)]
        outbufs = [np.zeros(65536, dtype=np.float32) for _ in range(channels)]
        outp = (FLOAT_P * channels)(*[ptr(b) for b in outbufs])
        out = [[] for _ in range(channels)]

        def drain():
            while True:
                n = lib.rubberband_available(h)
                if n <= 0:
                    break
                got = lib.rubberband_retrieve(h, outp, min(n, 65536))
                for c in range(channels):
                    out[c].append(outbufs[c][:got].copy())

        for start in range(0, frames, block):
            end = min(frames, start + block)
            chunks = [np.ascontiguousarray(p[start:end]) for p in planar]
            inp = (FLOAT_P * channels)(*[ptr(c) for c in chunks])
            lib.rubberband_process(h, inp, end - start, 1 if end == frames else 0)
            drain()
        drain()
        lib.rubberband_delete(h)
        planes = [np.concatenate(o) if o else np.zeros(0, dtype=np.float32) for o in out]
        n = min(len(p) for p in planes)
        y = np.empty(n * channels, dtype=np.float32)
        for c in range(channels):
            y[c::channels] = planes[c][:n]
        # The documented start delay: output frames before the input's first frame.
        return y[delay * channels:(delay + int(round((frames - pad) / speed))) * channels]


def read_wav(path):
    """16-bit PCM WAV (plain or WAVE_FORMAT_EXTENSIBLE, as narrator writes it)."""
    data = open(path, "rb").read()
    assert data[:4] == b"RIFF" and data[8:12] == b"WAVE", path
    at, fmt, samples = 12, None, None
    while at + 8 <= len(data):
        kind, size = data[at:at + 4], int.from_bytes(data[at + 4:at + 8], "little")
        body = data[at + 8:at + 8 + size]
        if kind == b"fmt ":
            fmt = (int.from_bytes(body[2:4], "little"), int.from_bytes(body[4:8], "little"),
                   int.from_bytes(body[14:16], "little"))
        elif kind == b"data":
            samples = body
        at += 8 + size + (size & 1)
    channels, rate, bits = fmt
    assert bits == 16, path
    return np.frombuffer(samples, dtype="<i2").astype(np.float32) / 32768.0, rate, channels


def read_words(path):
    words = []
    if path.endswith(".json"):
        for w in json.load(open(path))["words"]:
            words.append(float(w["start"]))
    else:
        for line in open(path):
            parts = line.split("\t")
            if len(parts) >= 3:
                words.append(float(parts[0]))
    return words


def fixtures():
    out = []
    for timing in sorted(glob.glob(os.path.join(REPO, "Timings/lessons/*/*"))):
        if timing.endswith(".region.json"):
            continue
        rel = os.path.relpath(timing, os.path.join(REPO, "Timings/lessons"))
        wav = os.path.join(REPO, "Audio/lessons", os.path.splitext(rel)[0] + ".wav")
        if os.path.exists(wav):
            out.append((rel, wav, read_words(timing)))
    return out


def envelope_db(mono, rate):
    win = max(1, int(0.005 * rate))
    c = np.concatenate([[0.0], np.cumsum(mono.astype(np.float64) ** 2)])
    # RMS of the 5 ms ending at each sample (causal, so the onset is not pulled early).
    e = np.empty(len(mono))
    idx = np.arange(len(mono))
    lo = np.maximum(0, idx - win + 1)
    e[:] = (c[idx + 1] - c[lo]) / (idx + 1 - lo)
    return 10 * np.log10(e + 1e-20)


def dip_onset(env, rate, centre, level=None):
    """The onset after the envelope's dip near centre: the dip is the minimum within
    [centre - 40 ms, centre + 20 ms]; the onset is the first sample after it where the envelope
    reaches level (by default the dip + 15 dB). None when there is no clear dip and rise."""
    a, b = max(0, int(centre - 0.04 * rate)), min(len(env), int(centre + 0.02 * rate))
    if a >= b:
        return None, None
    m = a + int(np.argmin(env[a:b]))
    if level is None:
        level = env[m] + 15
        if env[m:m + int(0.1 * rate)].max() < env[m] + 25:
            return None, None
    if env[m] > level - 6:
        return None, None
    above = np.nonzero(env[m:m + int(0.1 * rate)] >= level)[0]
    return (None, None) if len(above) == 0 else (m + int(above[0]), level)


def measure_onsets(stretcher, clips, speed, block):
    errors = []
    for rel, wav, starts in clips:
        x, rate, channels = read_wav(wav)
        mono = x[::channels]
        env = envelope_db(mono, rate)
        y = stretcher.run(x, rate, channels, speed, block)
        envy = envelope_db(y[::channels], rate)
        for start in starts:
            o, level = dip_onset(env, rate, start * rate)
            if o is None:
                continue
            expected = o / speed
            found, _ = dip_onset(envy, rate, expected, level)
            if found is None:
                errors.append(float("nan"))
            else:
                errors.append((found - expected) / rate * 1000)
    return errors


def sine(rate, seconds=3.0, freq=440.0):
    t = np.arange(int(seconds * rate)) / rate
    return (0.5 * np.sin(2 * np.pi * freq * t)).astype(np.float32)


def zero_crossing_frequency(y, rate):
    mid = y[len(y) // 5: len(y) * 4 // 5].astype(np.float64)
    s = np.signbit(mid)
    k = np.nonzero(~s[1:] & s[:-1])[0]  # upward crossings between k and k+1
    pos = k + mid[k] / (mid[k] - mid[k + 1])
    if len(pos) < 2:
        return float("nan")
    return (len(pos) - 1) / ((pos[-1] - pos[0]) / rate)


def sine_residual(y, rate, freq):
    """Per 10 ms window: residual energy after a least-squares fit of a sine at freq, dB."""
    n = int(0.01 * rate)
    t = np.arange(n) / rate
    basis = np.stack([np.sin(2 * np.pi * freq * t), np.cos(2 * np.pi * freq * t), np.ones(n)], axis=1)
    out = []
    for a in range(len(y) // 10, len(y) * 9 // 10 - n, n):
        w = y[a:a + n].astype(np.float64)
        coef, *_ = np.linalg.lstsq(basis, w, rcond=None)
        r = w - basis @ coef
        out.append(10 * np.log10((r ** 2).sum() / max((w ** 2).sum(), 1e-20) + 1e-20))
    return float(np.median(out)), float(np.max(out))


def flatness(mono, rate):
    n = 1024
    win = np.hanning(n)
    vals = []
    env_peak = None
    frames = [mono[a:a + n] for a in range(0, len(mono) - n, n // 2)]
    energies = [float((f.astype(np.float64) ** 2).mean()) for f in frames]
    if not energies:
        return float("nan")
    env_peak = max(energies)
    for f, e in zip(frames, energies):
        if e < env_peak * 1e-2:  # voiced, loud frames only
            continue
        p = np.abs(np.fft.rfft(f * win)) ** 2 + 1e-12
        vals.append(np.exp(np.mean(np.log(p))) / np.mean(p))
    return float(np.mean(vals)) if vals else float("nan")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--block", type=int, default=1024)
    args = ap.parse_args()

    stretchers = []
    for cls, names in [
        (Sonic, ["libsonic.so.0", "libsonic.so"]),
        (SoundTouch, ["libSoundTouchDll.so.1", "libSoundTouchDll.so"]),
        (RubberBand, ["librubberband.so.2", "librubberband.so"]),
    ]:
        lib = load(names)
        if lib is None:
            print(f"skipped: {cls.name} (not installed)")
        else:
            stretchers.append(cls(lib))
    clips = fixtures()
    total_words = sum(len(c[2]) for c in clips)
    speech = np.concatenate([read_wav(w)[0] for _, w, _ in clips])
    rate = read_wav(clips[0][1])[1]
    print(f"fixtures: {len(clips)} clips, {total_words} timed words, {len(speech) / rate:.2f} s of speech at {rate} Hz")
    print(f"block {args.block} frames, {args.runs} CPU runs; machine: {os.uname().machine}, {os.cpu_count()} CPUs")
    base_flat = flatness(speech, rate)
    print(f"original speech spectral flatness {base_flat:.4f}")
    print()
    print("library | speed | onsets (n) | mean err ms | spread ms | max |err| ms | 440 Hz measured | dev % | "
          "sine residual median/worst dB | flatness delta | CPU ms per s (best/median)")
    for st in stretchers:
        for speed in SPEEDS:
            errs = measure_onsets(st, clips, speed, args.block)
            found = [e for e in errs if not np.isnan(e)]
            missed = len(errs) - len(found)
            tone = sine(48000)
            ty = st.run(tone, 48000, 1, speed, args.block)
            f = zero_crossing_frequency(ty, 48000)
            rmed, rworst = sine_residual(ty, 48000, f)
            y = st.run(speech, rate, 1, speed, args.block)
            dflat = flatness(y, rate) - base_flat
            times = []
            for _ in range(args.runs):
                t0 = time.process_time()
                st.run(speech, rate, 1, speed, args.block)
                times.append((time.process_time() - t0) / (len(speech) / rate) * 1000)
            print(
                f"{st.name} | {speed} | {len(found)}" + (f" ({missed} not found)" if missed else "") +
                f" | {np.mean(found):+.2f} | {np.max(found) - np.min(found):.2f} | {np.max(np.abs(found)):.2f} | "
                f"{f:.2f} Hz | {(f / 440 - 1) * 100:+.3f} | {rmed:.1f} / {rworst:.1f} | {dflat:+.4f} | "
                f"{min(times):.2f} / {statistics.median(times):.2f}",
                flush=True)
    render_check(clips)


def render_check(clips):
    narrator = os.environ.get("NARRATOR")
    if not narrator:
        for build in ["release", "debug"]:
            candidate = os.path.join(REPO, ".build", build, "narrator")
            if os.path.exists(candidate):
                narrator = candidate
                break
    if not narrator:
        print("skipped: render --speed (no narrator binary; swift build, or NARRATOR=path)")
        return
    print()
    print(f"render --speed through {os.path.relpath(narrator, REPO)} (mono chain of the fixture clips):")
    print("speed | words | onset error mean / max |ms| | cue sheet off the line (frames)")
    with tempfile.TemporaryDirectory() as tmp:
        lesson = {"sampleRate": 48000, "channels": 1, "clips": {}, "chains": {"all": []}}
        for k, (rel, wav, _) in enumerate(clips):
            timing = os.path.join(REPO, "Timings/lessons", rel)
            lesson["clips"][f"c{k}"] = {"file": wav, "timings": timing}
            lesson["chains"]["all"] += [{"clip": f"c{k}"}, {"silence": 0.3}]
        path = os.path.join(tmp, "lesson.json")
        json.dump(lesson, open(path, "w"))

        def render(speed):
            out, cues = os.path.join(tmp, f"{speed}.wav"), os.path.join(tmp, f"{speed}.json")
            subprocess.run([narrator, "render", path, "--chain", "all", "-o", out, "--cues", cues, "--speed", str(speed)],
                           check=True)
            x, rate, _ = read_wav(out)
            words = [c["frame"] for c in json.load(open(cues))["cues"] if c["type"] == "word"]
            return x, rate, words

        x1, rate, words1 = render(1)
        env1 = envelope_db(x1, rate)
        for speed in SPEEDS:
            y, _, words = render(speed)
            envy = envelope_db(y, rate)
            errors = []
            for w in words1:
                o, level = dip_onset(env1, rate, w)
                if o is None:
                    continue
                found, _ = dip_onset(envy, rate, o / speed, level)
                if found is not None:
                    errors.append((found - o / speed) / rate * 1000)
            off = max(abs(c - int(w / speed + 0.5)) for c, w in zip(words, words1))
            print(f"{speed} | {len(errors)} of {len(words1)} | {np.mean(errors):+.2f} / {np.max(np.abs(errors)):.2f} | {off}",
                  flush=True)


if __name__ == "__main__":
    sys.exit(main())
