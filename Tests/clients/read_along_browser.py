#!/usr/bin/env python3
"""Drives the read-along page in headless Chromium over the DevTools protocol and takes
screenshots while the definition plays.

Usage:
  read_along_browser.py PAGE_URL OUT_DIR [--chromium PATH] [--timeout S] [--controls]

What it does:
  1. opens PAGE_URL (the daemon's page, with its #token=) and waits for the popup to play;
  2. screenshots the popup again and again until it has ended, noting for each the
     CLOCK_MONOTONIC nanoseconds just before it was asked for and just after it came back;
  3. clicks Replay (a new play), waits 1.2 s into it, clicks Close, and screenshots the page.

It prints one JSON object: "words" (each word's key and its box on the page, in CSS pixels,
which the screenshots match one to one), "shots" (each: file, t0, t1, "red" the bounding box of the red pixels or null,
"current" the word the page said was highlighted after the shot), "replayed" and
"closed" (what the page reported after those clicks, and the last screenshot's red box and
whether the popup was still drawn). Screenshots are saved as OUT_DIR/shot-NN.png.

With --controls it uses the page's controls instead: once the second word is heard it clicks
Pause; once paused, it waits 0.5 s and clicks the last word (said on its own, then paused
again); then Play; then it moves the music slider to 0.25 and picks 0.75x in the speed menu.
It prints "said" (the word clicked), "states" (the page's state after each step), "log" (the
playback's events as the page saw them, type@frame), "replies" (each control request's terminal
event), "speedReply" (the speed request's), "pausedRed"
(the red box in a screenshot while paused) and "sayRed" (while the word was being said).

With --scenario it watches one program play: a hook installed before the page loads records,
after the page has handled each event of a playback, the event and what the page shows then
("snapshots": the word highlighted, the sentence, the tiles pulsing and their animation and
outline, the clips laid out, the words shown, the transcripts shown and whether each is
highlighted). --tap ANSWER:TYPE clicks the answer tile once
an event of that type has come; --shot NAME:EXPRESSION saves OUT_DIR/NAME.png the first time
the page expression holds (with its red box and the snapshot count then); --until EXPRESSION
ends the watch (default: the playback has ended); --reduced-motion emulates
prefers-reduced-motion: reduce; --keyboard makes --tap focus the tile and press Enter. It prints {"snapshots", "shots", "final"}.

With --menu it opens PAGE_URL (no program in its address) in a 1200 x 800 window and prints what
the page shows once its library is listed: state, status, whether it asked to play, the menu's
options, and the boxes of the menu and of Start.

With --every it opens the page for every program of the library (the menu's listing), one
after the other, waits until it plays (or fails) and its first clip with words is laid out
when it has one, and prints, for each, what the page showed: "state", "error", "clips" (the
clipStart events heard), "blocks" (the clips laid out), "words", "bookWords" (the words of the
schedule the page knows) and "listed" (the program's listing).
"""

import argparse
import asyncio
import base64
import contextlib
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import urllib.parse
import zlib

import websockets


def decode_png(data):
    """(width, height, rows of RGBA/RGB bytes, bytes per pixel) of an 8-bit, non-interlaced PNG."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    offset = 8
    idat = b""
    while offset < len(data):
        length, kind = struct.unpack(">I4s", data[offset:offset + 8])
        chunk = data[offset + 8:offset + 8 + length]
        if kind == b"IHDR":
            width, height, depth, color, _, _, interlace = struct.unpack(">IIBBBBB", chunk)
            assert depth == 8 and interlace == 0 and color in (2, 6), "unsupported PNG"
            channels = 4 if color == 6 else 3
        elif kind == b"IDAT":
            idat += chunk
        offset += 12 + length
    raw = zlib.decompress(idat)
    stride = width * channels
    rows = []
    previous = bytearray(stride)
    position = 0
    for _ in range(height):
        kind = raw[position]
        line = bytearray(raw[position + 1:position + 1 + stride])
        position += 1 + stride
        if kind == 1:
            for i in range(channels, stride):
                line[i] = (line[i] + line[i - channels]) & 255
        elif kind == 2:
            for i in range(stride):
                line[i] = (line[i] + previous[i]) & 255
        elif kind == 3:
            for i in range(stride):
                left = line[i - channels] if i >= channels else 0
                line[i] = (line[i] + ((left + previous[i]) >> 1)) & 255
        elif kind == 4:
            for i in range(stride):
                a = line[i - channels] if i >= channels else 0
                b = previous[i]
                c = previous[i - channels] if i >= channels else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(line)
        previous = line
    return width, height, rows, channels


def red_box(png):
    """Bounding box [x0, y0, x1, y1] of the highlight red (#e00000, anti-aliased) pixels, or None."""
    width, height, rows, channels = decode_png(png)
    box = None
    for y, row in enumerate(rows):
        for x in range(width):
            r, g, b = row[x * channels], row[x * channels + 1], row[x * channels + 2]
            if r > 170 and g < 90 and b < 90 and r - g > 120:
                if box is None:
                    box = [x, y, x + 1, y + 1]
                else:
                    box = [min(box[0], x), min(box[1], y), max(box[2], x + 1), max(box[3], y + 1)]
    return box


def page_box(box, clip):
    """A box in a clipped screenshot, in page pixels."""
    if box is None:
        return None
    return [box[0] + clip["x"], box[1] + clip["y"], box[2] + clip["x"], box[3] + clip["y"]]


class DevTools:
    def __init__(self, socket):
        self.socket = socket
        self.next_id = 0
        self.session = None

    async def call(self, method, session=True, **params):
        self.next_id += 1
        message = {"id": self.next_id, "method": method, "params": params}
        if session and self.session:
            message["sessionId"] = self.session
        await self.socket.send(json.dumps(message))
        while True:
            reply = json.loads(await self.socket.recv())
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise RuntimeError("%s: %s" % (method, reply["error"]))
                return reply["result"]

    async def evaluate(self, expression):
        result = await self.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        return result["result"].get("value")

    async def wait_for(self, expression, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if await self.evaluate(expression):
                return True
            await asyncio.sleep(0.01)
        raise TimeoutError("waited %.1f s for %s" % (timeout, expression))


async def open_playing_page(socket, url, timeout):
    """A new tab at 800×480 on `url`, once its popup plays."""
    tools = DevTools(socket)
    target = await tools.call("Target.createTarget", session=False, url="about:blank")
    attached = await tools.call("Target.attachToTarget", session=False, targetId=target["targetId"], flatten=True)
    tools.session = attached["sessionId"]
    await tools.call("Page.enable")
    await tools.call("Emulation.setDeviceMetricsOverride", width=800, height=480, deviceScaleFactor=1, mobile=False)
    await tools.call("Page.navigate", url=url)
    await tools.wait_for("window.readAlong && window.readAlong.state === 'playing'", timeout)
    return tools


async def drive(url, out_dir, devtools_url, timeout):
    async with websockets.connect(devtools_url, max_size=1 << 26) as socket:
        tools = await open_playing_page(socket, url, timeout)
        # A clip's text is laid out when its clipStart is heard, just after `start`.
        await tools.wait_for("document.querySelectorAll('.word').length > 0", timeout)
        words = await tools.evaluate(
            "[...document.querySelectorAll('.word')].map(s => { const r = s.getBoundingClientRect();"
            " return {key: s.dataset.key, text: s.textContent, box: [r.left, r.top, r.right, r.bottom]}; })")
        # Just the popup's text (its words and a margin round them): less to decode.
        left = min(w["box"][0] for w in words) - 20
        top = min(w["box"][1] for w in words) - 20
        clip = {"x": max(0, left), "y": max(0, top), "scale": 1,
                "width": max(w["box"][2] for w in words) + 20 - max(0, left),
                "height": max(w["box"][3] for w in words) + 20 - max(0, top)}
        captured = []
        while True:
            t0 = time.monotonic_ns()
            shot = await tools.call("Page.captureScreenshot", format="png", clip=clip)
            t1 = time.monotonic_ns()
            state = await tools.evaluate("[window.readAlong.state, window.readAlong.current]")
            captured.append((t0, t1, base64.b64decode(shot["data"]), state))
            if state[0] != "playing" or len(captured) > 400:
                break
        await tools.evaluate("document.getElementById('replay').click()")
        await tools.wait_for("window.readAlong.state === 'playing'", timeout)
        replayed = await tools.evaluate("window.readAlong.state")
        await asyncio.sleep(1.2)
        await tools.evaluate("document.getElementById('close').click()")
        await tools.wait_for("window.readAlong.state === 'closed'", timeout)
        closed_state = await tools.evaluate(
            "[window.readAlong.state, getComputedStyle(document.getElementById('popup')).display]")
        closed_shot = base64.b64decode((await tools.call("Page.captureScreenshot", format="png", clip=clip))["data"])

    shots = []
    for number, (t0, t1, png, state) in enumerate(captured):
        path = os.path.join(out_dir, "shot-%02d.png" % number)
        with open(path, "wb") as file:
            file.write(png)
        shots.append({"file": path, "t0": t0, "t1": t1, "red": page_box(red_box(png), clip), "state": state[0], "current": state[1]})
    path = os.path.join(out_dir, "closed.png")
    with open(path, "wb") as file:
        file.write(closed_shot)
    return {
        "words": words,
        "shots": shots,
        "replayed": replayed,
        "closed": {"state": closed_state[0], "display": closed_state[1], "red": page_box(red_box(closed_shot), clip), "file": path},
    }


async def drive_controls(url, out_dir, devtools_url, timeout):
    async with websockets.connect(devtools_url, max_size=1 << 26) as socket:
        tools = await open_playing_page(socket, url, timeout)
        states = []
        await tools.wait_for("window.readAlong.log.filter(e => e.startsWith('word@')).length >= 2", timeout)
        await tools.evaluate("document.getElementById('pause').click()")
        await tools.wait_for("window.readAlong.state === 'paused'", timeout)
        states.append(await tools.evaluate("window.readAlong.state"))
        await asyncio.sleep(0.5)
        paused_shot = base64.b64decode((await tools.call("Page.captureScreenshot", format="png"))["data"])
        said = await tools.evaluate("(() => { const all = document.querySelectorAll('.word'); const s = all[all.length - 1]; s.click(); return s.dataset.key; })()")
        await tools.wait_for("window.readAlong.current === %s" % json.dumps(said), timeout)
        say_shot = base64.b64decode((await tools.call("Page.captureScreenshot", format="png"))["data"])
        await tools.wait_for("window.readAlong.log.filter(e => e.startsWith('paused')).length >= 2", timeout)
        states.append(await tools.evaluate("window.readAlong.state"))
        await tools.evaluate("document.getElementById('pause').click()")
        await tools.wait_for("window.readAlong.state === 'playing'", timeout)
        states.append(await tools.evaluate("window.readAlong.state"))
        await tools.evaluate("(() => { const v = document.getElementById('volume'); v.value = '0.25'; v.dispatchEvent(new Event('change')); })()")
        await tools.wait_for("window.readAlong.volumeRequest && window.readAlong.replies[window.readAlong.volumeRequest]", timeout)
        await tools.evaluate("(() => { const s = document.getElementById('speed'); s.value = '0.75'; s.dispatchEvent(new Event('change')); })()")
        await tools.wait_for("window.readAlong.speedRequest && window.readAlong.replies[window.readAlong.speedRequest]", timeout)
        speed_reply = await tools.evaluate("window.readAlong.replies[window.readAlong.speedRequest]")
        await tools.wait_for("window.readAlong.state === 'ended'", timeout * 2)
        states.append(await tools.evaluate("window.readAlong.state"))
        log = await tools.evaluate("window.readAlong.log")
        replies = await tools.evaluate("window.readAlong.replies")
    for name, png in (("paused.png", paused_shot), ("say.png", say_shot)):
        with open(os.path.join(out_dir, name), "wb") as file:
            file.write(png)
    return {"said": said, "states": states, "log": log, "replies": replies, "speedReply": speed_reply,
            "pausedRed": red_box(paused_shot), "sayRed": red_box(say_shot)}


HOOK = r"""
(() => {
  window.__snapshots = [];
  const Native = window.WebSocket;
  function snapshot(event) {
    if (!window.readAlong || event.id === "library" || /^(sheet|book)[0-9]+$/.test(String(event.id))) return;
    const text = document.getElementById("text");
    const pulsing = [...document.querySelectorAll(".tile.pulsing")].map((t) => {
      const style = getComputedStyle(t);
      return { target: t.dataset.target, animation: style.animationName, outline: style.outlineStyle };
    });
    window.__snapshots.push({
      event: { id: event.id, type: event.type, clip: event.clip, index: event.index, text: event.text,
               target: event.target, frame: event.frame, answer: event.answer, result: event.result },
      playing: window.readAlong.playing, state: window.readAlong.state, current: window.readAlong.current,
      sentence: window.readAlong.sentence, now: document.getElementById("now").textContent,
      pulsing, blocks: [...text.children].map((c) => c.dataset.clip),
      words: [...text.querySelectorAll(".word")].map((w) => w.dataset.key),
      heard: [...text.querySelectorAll(".word.heard")].map((w) => w.dataset.key),
      transcripts: [...text.querySelectorAll(".transcript")].map((t) => ({
        clip: t.parentElement.dataset.clip, text: t.textContent, reading: t.classList.contains("reading") })),
    });
  }
  window.WebSocket = function (url, protocols) {
    const socket = new Native(url, protocols);
    let handler = null;
    socket.addEventListener("message", (message) => {
      if (handler) handler.call(socket, message);
      try { snapshot(JSON.parse(message.data)); } catch (e) { window.__hookError = String(e); }
    });
    Object.defineProperty(socket, "onmessage", { set(h) { handler = h; }, get() { return handler; } });
    return socket;
  };
})();
"""


async def new_tab(socket, width=800, height=480, reduced_motion=False, hook=HOOK):
    """A new tab of its own size and media, with `hook` (this page's HOOK by default; none when
    empty) run before each document loads."""
    tools = DevTools(socket)
    target = await tools.call("Target.createTarget", session=False, url="about:blank")
    attached = await tools.call("Target.attachToTarget", session=False, targetId=target["targetId"], flatten=True)
    tools.session = attached["sessionId"]
    await tools.call("Page.enable")
    await tools.call("Emulation.setDeviceMetricsOverride", width=width, height=height, deviceScaleFactor=1, mobile=False)
    if reduced_motion:
        await tools.call("Emulation.setEmulatedMedia", features=[{"name": "prefers-reduced-motion", "value": "reduce"}])
    if hook:
        await tools.call("Page.addScriptToEvaluateOnNewDocument", source=hook)
    return tools


async def press_enter(tools):
    for kind in ("keyDown", "keyUp"):
        await tools.call("Input.dispatchKeyEvent", type=kind, key="Enter", code="Enter", windowsVirtualKeyCode=13,
                         nativeVirtualKeyCode=13, **({"text": "\r"} if kind == "keyDown" else {}))


async def drive_scenario(url, out_dir, devtools_url, timeout, taps, shots, until, reduced_motion, keyboard=False):
    async with websockets.connect(devtools_url, max_size=1 << 26) as socket:
        tools = await new_tab(socket, reduced_motion=reduced_motion)
        await tools.call("Page.navigate", url=url)
        await tools.wait_for("window.readAlong && window.readAlong.playing !== null", timeout)
        pending_taps = list(taps)
        pending_shots = list(shots)
        taken = {}
        done = until or "window.readAlong.playing === null && ['ended', 'closed', 'error'].includes(window.readAlong.state)"
        deadline = time.monotonic() + timeout * 3
        while time.monotonic() < deadline:
            for answer, kind in list(pending_taps):
                seen = await tools.evaluate("window.__snapshots.some(s => s.event.type === %s)" % json.dumps(kind))
                if seen:
                    # With the keyboard: the tile is focused and Enter pressed, as a real key.
                    action = "t.focus(); return document.activeElement === t;" if keyboard else "t.click(); return true;"
                    clicked = await tools.evaluate(
                        "(() => { const t = [...document.querySelectorAll('button.tile')].find(b => b.dataset.target === %s);"
                        " if (!t) return false; %s })()" % (json.dumps(answer), action))
                    if clicked and keyboard:
                        await press_enter(tools)
                    if not clicked:
                        raise RuntimeError("no answer tile %s" % answer)
                    pending_taps.remove((answer, kind))
            for name, expression in list(pending_shots):
                if await tools.evaluate("!!(%s)" % expression):
                    count = await tools.evaluate("window.__snapshots.length")
                    png = base64.b64decode((await tools.call("Page.captureScreenshot", format="png"))["data"])
                    after = await tools.evaluate("[window.readAlong.current, [...document.querySelectorAll('.tile.pulsing')].map(t => t.dataset.target)]")
                    path = os.path.join(out_dir, name + ".png")
                    with open(path, "wb") as file:
                        file.write(png)
                    taken[name] = {"file": path, "snapshots": count, "red": red_box(png), "current": after[0], "pulsing": after[1]}
                    pending_shots.remove((name, expression))
            if not pending_taps and not pending_shots and await tools.evaluate("!!(%s)" % done):
                break
            await asyncio.sleep(0.01)
        timed_out = time.monotonic() >= deadline
        snapshots = await tools.evaluate("window.__snapshots")
        final = await tools.evaluate(
            "({state: readAlong.state, error: readAlong.error, log: readAlong.log, taps: readAlong.taps, pulses: readAlong.pulses,"
            " clips: readAlong.clipsStarted, replies: readAlong.replies, hookError: window.__hookError || null,"
            " tiles: [...document.querySelectorAll('.tile')].map(t => ({name: t.dataset.target, button: t.tagName === 'BUTTON',"
            " label: t.getAttribute('aria-label'), pulses: Number(t.dataset.pulses)})),"
            " words: [...document.querySelectorAll('.word')].map(w => ({key: w.dataset.key, tag: w.tagName, label: w.getAttribute('aria-label')})),"
            " live: document.getElementById('now').getAttribute('aria-live')})")
    return {"snapshots": snapshots, "shots": taken, "final": final, "timedOut": timed_out,
            "pending": {"taps": pending_taps, "shots": pending_shots}}


async def drive_every(url, out_dir, devtools_url, timeout):
    base = url.split("#")[0].split("?")[0]
    token = url.split("#", 1)[1] if "#" in url else ""
    results = []
    async with websockets.connect(devtools_url, max_size=1 << 26) as socket:
        tools = await new_tab(socket)
        await tools.call("Page.navigate", url=url)
        # With no program in its address the page opens on its menu, playing nothing.
        await tools.wait_for("window.readAlong && ['choosing', 'error'].includes(window.readAlong.state)", timeout)
        library = await tools.evaluate("window.readAlong.library")
        for program in library:
            if "problem" in program:
                results.append({"listed": program, "state": "unreadable"})
                continue
            kind = "chain" if "chain" in program else "activity"
            address = "%s?lesson=%s&%s=%s#%s" % (base, urllib.parse.quote(program["lesson"]), kind, urllib.parse.quote(program[kind]), token)
            await tools.call("Page.navigate", url=address)
            await tools.wait_for("window.readAlong && window.readAlong.program !== null && window.readAlong.program.lesson === %s" % json.dumps(program["lesson"]), timeout)
            # Playing (or over, or failed); and, when its schedule has words, its first clip
            # with words laid out (or the playback over).
            await tools.wait_for(
                "(() => { const r = window.readAlong; if (r.state === 'error') return true;"
                " if (!['playing', 'paused', 'ended', 'closed'].includes(r.state)) return false;"
                " const hasWords = [...book.values()].some(c => c.words.size > 0);"
                " return !hasWords || r.playing === null || document.querySelectorAll('#text .word').length > 0; })()", timeout * 2)
            shown = await tools.evaluate(
                "({state: readAlong.state, error: readAlong.error, clips: readAlong.clipsStarted, program: readAlong.program,"
                " blocks: [...document.getElementById('text').children].map(c => c.dataset.clip),"
                " words: document.querySelectorAll('#text .word').length,"
                " bookWords: [...book.values()].reduce((n, c) => n + c.words.size, 0),"
                " status: document.getElementById('status').textContent})")
            shown["listed"] = program
            results.append(shown)
        await tools.call("Page.navigate", url="about:blank")
    return {"programs": results}


async def drive_menu(url, devtools_url, timeout):
    """Opens the page with no program in its address in a 1200 x 800 window and reports what it
    shows once its library is listed: its state and status, whether it asked to play anything,
    the menu's options, and the boxes of the menu and of Start."""
    async with websockets.connect(devtools_url, max_size=1 << 26) as socket:
        tools = await new_tab(socket, width=1200, height=800)
        await tools.call("Page.navigate", url=url)
        await tools.wait_for("window.readAlong && ['choosing', 'error'].includes(window.readAlong.state)", timeout)
        await asyncio.sleep(0.5)
        shown = await tools.evaluate(
            "(() => { const box = (e) => { const r = e.getBoundingClientRect(); return {left: r.left, right: r.right, top: r.top, bottom: r.bottom}; };"
            " return {state: readAlong.state, status: document.getElementById('status').textContent,"
            " program: readAlong.program, playing: readAlong.playing, menuValue: document.getElementById('program').value,"
            " options: [...document.getElementById('program').options].map(o => ({text: o.text, disabled: o.disabled})),"
            " menu: box(document.getElementById('program')), start: box(document.getElementById('start')),"
            " width: window.innerWidth, height: window.innerHeight}; })()")
        await tools.call("Page.navigate", url="about:blank")
        return shown


@contextlib.contextmanager
def headless_chromium(chromium, timeout, flags=()):
    """Headless Chromium with a fresh profile, yielding its DevTools WebSocket URL (None when it
    did not start within `timeout` s); stopped and its profile removed afterwards. One place for
    every browser driver of the tests."""
    profile = tempfile.mkdtemp(prefix="narrator-chromium-")
    browser = subprocess.Popen(
        [chromium, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-extensions",
         "--remote-debugging-port=0", "--user-data-dir=" + profile] + list(flags) + ["about:blank"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        devtools_url = None
        deadline = time.monotonic() + timeout
        while devtools_url is None and time.monotonic() < deadline:
            line = browser.stderr.readline()
            if not line:
                break
            found = re.search(r"DevTools listening on (ws://\S+)", line)
            if found:
                devtools_url = found.group(1)
        yield devtools_url
    finally:
        browser.terminate()
        try:
            browser.wait(timeout=5)
        except subprocess.TimeoutExpired:
            browser.kill()
        shutil.rmtree(profile, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("url")
    parser.add_argument("out_dir")
    parser.add_argument("--chromium", default=shutil.which("chromium") or "chromium")
    parser.add_argument("--timeout", type=float, default=20)
    parser.add_argument("--controls", action="store_true")
    parser.add_argument("--scenario", action="store_true")
    parser.add_argument("--every", action="store_true")
    parser.add_argument("--menu", action="store_true")
    parser.add_argument("--tap", action="append", default=[], help="ANSWER:EVENT_TYPE (--scenario)")
    parser.add_argument("--shot", action="append", default=[], help="NAME:EXPRESSION (--scenario)")
    parser.add_argument("--until", default=None)
    parser.add_argument("--reduced-motion", action="store_true")
    parser.add_argument("--keyboard", action="store_true", help="--tap focuses the tile and presses Enter")
    args = parser.parse_args()
    os.makedirs(args.out_dir, exist_ok=True)
    with headless_chromium(args.chromium, args.timeout) as devtools_url:
        if devtools_url is None:
            sys.stderr.write("read_along_browser: chromium did not start\n")
            return 1
        if args.scenario:
            taps = [tuple(t.rsplit(":", 1)) for t in args.tap]
            shots = [tuple(t.split(":", 1)) for t in args.shot]
            result = asyncio.run(drive_scenario(args.url, args.out_dir, devtools_url, args.timeout, taps, shots, args.until, args.reduced_motion, args.keyboard))
        elif args.menu:
            result = asyncio.run(drive_menu(args.url, devtools_url, args.timeout))
        elif args.every:
            result = asyncio.run(drive_every(args.url, args.out_dir, devtools_url, args.timeout))
        else:
            run = drive_controls if args.controls else drive
            result = asyncio.run(run(args.url, args.out_dir, devtools_url, args.timeout))
        print(json.dumps(result))
        return 0

if __name__ == "__main__":
    sys.exit(main())
