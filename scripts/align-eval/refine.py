"""Refinement prototypes on a first stage's word intervals (seconds).

Energy as narrator's BoundaryRefinement: mean square of 1 ms blocks of the pre-emphasised
signal (x[n] - 0.97 x[n-1]), smoothed over 10 ms, in dB. Threshold from the clip: the higher
of (speech level - DROP dB) and (floor + RISE dB), speech level = 90th percentile of the
10 ms levels, floor = 10th percentile.

`run(name, wav, first)`; name is a '+'-joined list of steps applied in order:
  pause[L]   move a boundary onto a real pause: a quiet run (>= 20 ms) that overlaps a
             silence the first stage put between the two words (a gap >= 30 ms), or any quiet
             run >= L ms (default 150: longer than any stop closure) within 40 ms of the
             boundary; the earlier word ends where the run begins, the later starts where it
             ends. A boundary the first stage made a join, with no such long run, never moves.
  bias[N]    shift every join boundary by N ms (PocketSphinx's frame boundaries are early).
  edges      clip edges: the first start / last end moves to the onset / offset of speech,
             found as the first / last sound segment near the first stage's edge that is
             speech, not a click (< 30 ms) or a breath (its level 20 dB or more under the
             clip's speech level, or aperiodic).
  closure[C] a word that starts with a stop (p t k b d g ch jh) after a pause starts C ms
             before the burst (the end of the quiet run), not at the pause's end.
"""
import re
import numpy as np
import soundfile as sf

DROP, RISE = 45.0, 10.0
STOPS = {"P", "T", "K", "B", "D", "G", "CH", "JH"}


class Env:
    def __init__(self, wav):
        x, sr = sf.read(wav, dtype="float64")
        if x.ndim > 1:
            x = x.mean(axis=1)
        self.sr = sr
        self.x = x
        y = np.append(x[0], x[1:] - 0.97 * x[:-1])
        b = sr // 1000
        n = len(y) // b
        ms = (y[:n * b].reshape(n, b) ** 2).mean(axis=1)
        k = np.ones(10) / 10
        sm = np.convolve(ms, k, mode="same")
        self.db = 10 * np.log10(sm + 1e-12)
        self.raw = 10 * np.log10(ms + 1e-12)
        self.speech = np.percentile(self.db, 90)
        self.floor = np.percentile(self.db, 10)
        self.thr = max(self.speech - DROP, self.floor + RISE)
        self.quiet = self.db < self.thr
        self.n = n

    def runs(self, quiet=True, min_ms=1):
        q = self.quiet if quiet else ~self.quiet
        out, i = [], 0
        while i < self.n:
            if q[i]:
                j = i
                while j < self.n and q[j]:
                    j += 1
                if j - i >= min_ms:
                    out.append((i, j))
                i = j
            else:
                i += 1
        return out

    def sharpen(self, a, b):
        """Edges of a quiet run [a, b) found to the millisecond on the unsmoothed blocks:
        the run grows while the raw 1 ms level stays under the threshold (at most 10 ms,
        the smoothing's spread)."""
        for _ in range(10):
            if a > 0 and self.raw[a - 1] < self.thr:
                a -= 1
            else:
                break
        for _ in range(10):
            if b < self.n and self.raw[b] < self.thr:
                b += 1
            else:
                break
        return a, b

    def periodicity(self, a, b):
        """Largest normalised autocorrelation at 2.5-12.5 ms lags over [a, b) ms."""
        seg = self.x[int(a * self.sr / 1000):int(b * self.sr / 1000)]
        if len(seg) < self.sr // 40:
            return 0.0
        seg = seg - seg.mean()
        best = 0.0
        w = self.sr // 25
        for s in range(0, len(seg) - 2 * w, w // 2):
            f = seg[s:s + 2 * w]
            e = np.dot(f[:w], f[:w])
            if e <= 0:
                continue
            lo, hi = int(self.sr * 0.0025), int(self.sr * 0.0125)
            c = [np.dot(f[:w], f[l:l + w]) / np.sqrt(e * np.dot(f[l:l + w], f[l:l + w]) + 1e-12)
                 for l in range(lo, hi)]
            best = max(best, max(c))
        return best


def _is_join(first, i):
    return first[i + 1]["start"] - first[i]["end"] < 0.020


def step_pause(env, words, L=150, S=30, deep=False):
    runs = env.runs(True, 20)
    used = set()
    for i in range(len(words) - 1):
        a, b = words[i]["end"] * 1000, words[i + 1]["start"] * 1000
        ps_gap = b - a >= S
        lo, hi = a - 40, b + 40
        best = None
        for r in runs:
            if r in used or r[1] <= lo or r[0] >= hi:
                continue
            length = r[1] - r[0]
            is_deep = deep and length >= 25 and env.db[r[0]:r[1]].max() < env.floor + 6 \
                and env.speech - env.floor > 50
            if length >= L or is_deep or (ps_gap and min(r[1], b) - max(r[0], a) > 0):
                # prefer the run nearest the stage's boundary centre
                c = (a + b) / 2
                d = 0 if r[0] <= c <= r[1] else min(abs(r[0] - c), abs(r[1] - c))
                if best is None or d < best[0]:
                    best = (d, r)
        if best:
            r = best[1]
            used.add(r)
            r = env.sharpen(*r)
            # never across a neighbour's interior: keep the words' order
            s0 = max(r[0], words[i]["start"] * 1000 + 20)
            e1 = min(r[1], words[i + 1]["end"] * 1000 - 20)
            if s0 < e1:
                words[i]["end"] = s0 / 1000
                words[i + 1]["start"] = e1 / 1000
                words[i + 1]["_after_pause"] = True
    return words


def step_deep(env, words):
    """pause, and also a quiet run >= 25 ms at the clip's floor (within 6 dB of it, in a clip
    whose floor is more than 50 dB under its speech: a digital or studio silence)."""
    return step_pause(env, words, deep=True)


def step_bias(env, words, n=5):
    for i in range(len(words) - 1):
        if abs(words[i + 1]["start"] - words[i]["end"]) < 1e-6 or words[i + 1]["start"] - words[i]["end"] < 0.015:
            if not words[i + 1].get("_after_pause"):
                t = words[i + 1]["start"] + n / 1000
                words[i]["end"] = t if words[i]["end"] >= words[i + 1]["start"] - 1e-6 else words[i]["end"] + n / 1000
                words[i + 1]["start"] = t
    return words


def _speechlike(env, a, b):
    if b - a < 30:
        return False
    peak = env.db[a:b].max()
    if peak < env.speech - 20:
        return False
    return True


def step_edges(env, words, back=150, fwd=60):
    """The first start moves to the onset of the first speech-like sound segment that ends
    after the stage's start (less 20 ms); the last end to the offset of the last one that
    begins before the stage's end (plus 20 ms). A move toward the word's inside is at most
    `fwd` ms (a soft onset or a nasal tail under the threshold stays the word's), outward
    at most `back` ms."""
    segs = env.runs(False, 1)
    merged = []
    for s in segs:  # sound segments split by less than 20 ms are one
        if merged and s[0] - merged[-1][1] < 20:
            merged[-1] = (merged[-1][0], s[1])
        else:
            merged.append(s)
    speech = [(a, b) for a, b in merged if _speechlike(env, a, b)]
    s0 = words[0]["start"] * 1000
    cand = [(a, b) for a, b in speech if b > s0 - 20]
    if cand:
        a = cand[0][0]
        if a > 0:
            a = env.sharpen(a - 1, a)[1] if env.raw[a - 1] < env.thr else a
        a = min(max(a, s0 - back), s0 + fwd, words[0]["end"] * 1000 - 20)
        words[0]["start"] = a / 1000
        words[0]["_after_pause"] = True
    e0 = words[-1]["end"] * 1000
    cand = [(a, b) for a, b in speech if a < e0 + 20]
    if cand:
        b = cand[-1][1]
        b = max(min(b, e0 + back), e0 - fwd, words[-1]["start"] * 1000 + 20)
        words[-1]["end"] = b / 1000
    return words


def step_closure(env, words, C=0):
    for w in words:
        if w.get("_after_pause") and w.get("phones") and w["phones"][0]["name"] in STOPS:
            w["start"] = max(0.0, w["start"] - C / 1000)
    return words


def run(name, wav, first):
    env = Env(wav)
    words = [dict(w) for w in first]
    for step in name.split("+"):
        m = re.match(r"([a-z]+)(-?\d*)$", step)
        op, num = m.group(1), m.group(2)
        f = {"pause": step_pause, "deep": step_deep, "bias": step_bias, "edges": step_edges, "closure": step_closure}[op]
        words = f(env, words, int(num)) if num else f(env, words)
    return words
