#!/usr/bin/env python3
"""Read the test PulseAudio server's pipe-sink FIFO; save the bytes and when each read landed.

Usage:
  scripts/fifo-recorder.py [--chunk N] [--frame-bytes N] [--keep-backlog] [--pipe-size N]
                           [--ready FILE] [--open-timeout S] FIFO OUT.raw OUT.times.tsv

What it writes:
  OUT.raw        every byte read from FIFO, in order (the sink's format: s16le, interleaved)
  OUT.times.tsv  one line per read(2) that returned data: "bytes_so_far<TAB>monotonic_ns",
                 bytes_so_far counting all bytes read up to and including that read, and
                 monotonic_ns the CLOCK_MONOTONIC time (time.monotonic_ns) just after the read.
                 Both files are flushed after every read, so a test may read them live.
  --ready FILE   created (empty) once the FIFO is open and its backlog dropped, removed again
                 when the recorder ends: start playing only after it exists. Remove any stale
                 one before starting the recorder, or wait for a fresh name.

The byte at offset b therefore reached the FIFO at or before the time on the first line whose
bytes_so_far > b. With module-pipe-sink use_system_clock_for_timing=yes the sink renders in real
time (silence when no stream plays) and writes each block at most one block (~21 ms, less while
a low-latency stream plays) ahead of its real-time slot, so the byte offset is an audible clock
too: offset / (rate * channels * 2) = seconds since the first recorded byte's slot.

Someone MUST read the FIFO from before the first stream plays until it ends. The sink keeps
real-time pace without a reader, but once the pipe is full (64 KiB, ~341 ms at 48 kHz stereo
s16) it throws away what it renders: nothing played while nobody reads is ever seen. What a
late reader finds waiting in the pipe is stale (rendered up to that long ago, usually the
silence from right after the server started), so by default this recorder drops that backlog,
rounded up to whole frames (--frame-bytes, default 4 = s16 stereo), before it records; the
count dropped goes to stderr. --keep-backlog records it instead (all stamped with one time).
The pipe keeps its 64 KiB unless --pipe-size says otherwise: that is the slack that lets this
reader stall (a loaded CI machine) for up to ~341 ms without the sink dropping audio; it does
not delay anything while the reader keeps up.

It stops on EOF (the server exited or unloaded the sink) or on SIGTERM/SIGINT, and exits 0.
Chunk: each read asks for at most --chunk bytes (default 4096: the sink writes blocks of at most
PIPE_BUF = 4096 bytes, so usually one line per block the sink wrote).
"""

import argparse
import fcntl
import os
import signal
import sys
import time

F_SETPIPE_SZ = getattr(fcntl, "F_SETPIPE_SZ", 1031)


class Stop(Exception):
    pass


def _stop(signum, frame):
    raise Stop()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("fifo")
    ap.add_argument("raw")
    ap.add_argument("times")
    ap.add_argument("--chunk", type=int, default=4096)
    ap.add_argument("--frame-bytes", type=int, default=4)
    ap.add_argument("--keep-backlog", action="store_true")
    ap.add_argument("--pipe-size", type=int, default=0,
                    help="F_SETPIPE_SZ on the FIFO after the backlog is gone (0: leave as is)")
    ap.add_argument("--ready", default=None)
    ap.add_argument("--open-timeout", type=float, default=10.0,
                    help="give up if no writer has the FIFO open within this many seconds")
    a = ap.parse_args()

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)

    # open(O_RDONLY) on a FIFO blocks until a writer opens it; the pipe sink keeps it open
    # O_RDWR from the moment it loads, so this returns at once while the server runs.
    signal.signal(signal.SIGALRM, lambda s, f: (_ for _ in ()).throw(TimeoutError()))
    signal.setitimer(signal.ITIMER_REAL, a.open_timeout)
    try:
        fd = os.open(a.fifo, os.O_RDONLY)
    except TimeoutError:
        print(f"fifo-recorder: nobody opened {a.fifo} for writing within {a.open_timeout} s",
              file=sys.stderr)
        return 2
    except Stop:
        return 0
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)

    if not a.keep_backlog:
        # Whatever waits in the pipe now was rendered before we came. The sink writes whole
        # frames, in writes of at most PIPE_BUF (atomic), so a pipe drained to EAGAIN and
        # topped up to a frame boundary leaves the stream frame-aligned.
        dropped = 0
        os.set_blocking(fd, False)
        try:
            while True:
                try:
                    b = os.read(fd, 65536)
                except BlockingIOError:
                    break
                if not b:
                    break
                dropped += len(b)
        finally:
            os.set_blocking(fd, True)
        while dropped % a.frame_bytes:
            b = os.read(fd, a.frame_bytes - dropped % a.frame_bytes)
            if not b:
                break
            dropped += len(b)
        print(f"fifo-recorder: dropped {dropped} stale bytes waiting in the FIFO", file=sys.stderr)

    if a.pipe_size > 0:
        try:
            fcntl.fcntl(fd, F_SETPIPE_SZ, a.pipe_size)
        except OSError as e:  # EBUSY if the pipe holds more than that right now
            print(f"fifo-recorder: F_SETPIPE_SZ {a.pipe_size}: {e}", file=sys.stderr)

    total = 0
    with open(a.raw, "wb", buffering=0) as raw, open(a.times, "w", buffering=1) as tsv:
        if a.ready:
            open(a.ready, "w").close()
        try:
            while True:
                b = os.read(fd, a.chunk)
                t = time.monotonic_ns()
                if not b:
                    break
                raw.write(b)
                total += len(b)
                tsv.write(f"{total}\t{t}\n")
        except Stop:
            pass
    os.close(fd)
    if a.ready:
        try:
            os.unlink(a.ready)
        except FileNotFoundError:
            pass
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Stop:  # TERM/INT before the read loop
        sys.exit(0)
