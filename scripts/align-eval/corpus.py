#!/usr/bin/env python3
"""Builds the real-speech set for the alignment benchmark from public repositories.

Nothing here is committed audio: each source is read at bench time from a bare git
directory (the search tool's `fetch` leaves one under /work/.mirror/OWNER+NAME/repo, or
`git clone --bare` of the same repository), converted to 16 kHz mono 16-bit WAV in the
output directory, with a JSON file of the hand-placed word boundaries beside it:

    {"source": ..., "licence": ..., "speaker": ..., "language": "eng",
     "words": [{"text": "mary", "start": 0.315, "end": 0.676}, ...]}

A gap between two words (or an interval marked as a pause) is a pause in the reference.

usage: corpus.py OUTDIR [--mirrors DIR]   (DIR holds OWNER+NAME/repo git dirs)
"""
import argparse, json, os, subprocess, sys, tempfile

try:
    import tgt
except ImportError:
    sys.exit("corpus.py needs the `tgt` TextGrid reader: pip install tgt")

# Each source: repository, licence, and a list of (wav path, TextGrid path, tier, speaker).
# Word tiers hold the words; intervals whose text is empty, '*' or a silence label are pauses.
SOURCES = [
    {
        "name": "emuR-ae",
        "repo": "IPS-LMU/emuR",
        "licence": "GPL-2.0-or-later (emuR package; the 'ae' demo database ships inside it)",
        "about": "ANDOSL Australian English read sentences, one male speaker (msajc), "
                 "segmented and labelled by phoneticians (emuR's demo database 'ae')",
        "items": [(f"inst/extdata/rawDemoData/wavFiles/{u}.wav",
                   f"inst/extdata/rawDemoData/annotationFiles/{u}.TextGrid", "Text", "msajc")
                  for u in ["msajc003", "msajc010", "msajc012", "msajc015", "msajc022",
                            "msajc023", "msajc057"]],
    },
    {
        "name": "praatio",
        "repo": "timmahrt/praatIO",
        "licence": "MIT (praatIO; example recordings in its examples/files)",
        "about": "two read sentences by two American English speakers, word tiers "
                 "made in Praat by the author (provenance of the boundaries not stated)",
        "items": [("examples/files/bobby.wav", "examples/files/bobby_words.TextGrid", "word", "bobby"),
                  ("examples/files/mary.wav", "examples/files/mary.TextGrid", "word", "mary")],
    },
    {
        "name": "parselmouth-nws",
        "repo": "YannickJadoul/Parselmouth",
        "licence": "GPL-3.0 (Parselmouth; tests/data)",
        "about": "'The north wind and the sun' (first phrase), one speaker, hand-placed "
                 "phoneme tier; words grouped from its phonemes here",
        "items": [("tests/data/the_north_wind_and_the_sun.wav",
                   "tests/data/the_north_wind_and_the_sun.TextGrid", "phonemes", "nws")],
        # the phoneme tier's phonemes grouped into words ("and the" said [ənə])
        "group": [("the", 2), ("north", 3), ("wind", 4), ("and", 2), ("the", 1), ("sun", 3)],
    },
]

PAUSE_LABELS = {"", "*", "sil", "sp", "SIL", "<sil>", "#", "pau", "H"}


def git_show(gitdir, path):
    return subprocess.run(["git", "--git-dir", gitdir, "show", "HEAD:" + path],
                          check=True, capture_output=True).stdout


def find_gitdir(mirrors, repo):
    cand = [os.path.join(mirrors, repo.replace("/", "+"), "repo"),
            os.path.join(mirrors, repo.replace("/", "+")),
            os.path.join(mirrors, repo.split("/")[1] + ".git")]
    for c in cand:
        if os.path.isdir(c):
            return c
    return None


def words_from_tier(tier, group=None):
    out = []
    if group is None:
        for iv in tier.intervals:
            t = iv.text.strip()
            if t in PAUSE_LABELS:
                continue
            out.append({"text": t.lower(), "start": round(iv.start_time, 5), "end": round(iv.end_time, 5)})
        return out
    phones = [iv for iv in tier.intervals if iv.text.strip() not in PAUSE_LABELS]
    k = 0
    for text, n in group:
        seg = phones[k:k + n]
        k += n
        out.append({"text": text, "start": round(seg[0].start_time, 5), "end": round(seg[-1].end_time, 5)})
    assert k == len(phones), "phoneme grouping does not cover the tier"
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("outdir")
    ap.add_argument("--mirrors", default=os.environ.get("ALIGN_MIRRORS", "/work/.mirror"))
    a = ap.parse_args()
    os.makedirs(a.outdir, exist_ok=True)
    n = 0
    for src in SOURCES:
        gitdir = find_gitdir(a.mirrors, src["repo"])
        if gitdir is None:
            print(f"corpus: {src['repo']} not found under {a.mirrors}: skipped", file=sys.stderr)
            continue
        for wav, grid, tiername, speaker in src["items"]:
            base = f"{src['name']}-{os.path.splitext(os.path.basename(wav))[0]}"
            with tempfile.TemporaryDirectory() as td:
                raw = os.path.join(td, "in.wav")
                open(raw, "wb").write(git_show(gitdir, wav))
                tgp = os.path.join(td, "in.TextGrid")
                open(tgp, "wb").write(git_show(gitdir, grid))
                try:
                    tg = tgt.io.read_textgrid(tgp, encoding="utf-8")
                except Exception:
                    tg = tgt.io.read_textgrid(tgp, encoding="utf-16")
                words = words_from_tier(tg.get_tier_by_name(tiername), src.get("group"))
                out = os.path.join(a.outdir, base + ".wav")
                subprocess.run(["sox", raw, "-r", "16000", "-c", "1", "-b", "16", out, "remix", "1"],
                               check=True)
            meta = {"source": src["repo"], "licence": src["licence"], "about": src["about"],
                    "speaker": speaker, "language": "eng", "kind": "human", "words": words}
            json.dump(meta, open(os.path.join(a.outdir, base + ".json"), "w"), indent=1)
            n += 1
    print(f"corpus: {n} recordings in {a.outdir}", file=sys.stderr)


if __name__ == "__main__":
    main()
