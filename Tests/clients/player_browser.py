#!/usr/bin/env python3
"""Drives a page with <narrator-player> (docs/component.md) in headless Chromium over the
DevTools protocol, as a host app would see it.

Usage:
  player_browser.py URL_OR_FILE OUT_DIR [--serve] [--record TYPES] [--tap NAME:EXPRESSION]
                    [--shot NAME:EXPRESSION] [--axe NAME:EXPRESSION] [--until EXPRESSION]
                    [--size WxH] [--reduced-motion] [--timeout S]
  player_browser.py URL OUT_DIR --layout WxH [--layout WxH …]

With --serve, URL_OR_FILE is an HTML file served from a server of this script's own (another
origin than the daemon's, as an app's page is) and opened from there.

A listener the host page gets before it loads (capture listeners on `document` for each of
--record's comma-separated event types) records every event the element dispatches, in order,
with its `detail`, when the listener ran (`at`, the page's performance.now() in ms) and what the
element showed once it had (the word lit, the tiles pulsing with their animation and outline,
the tiles marked wrong or right, its state): "heard". Every message the page sends on a
WebSocket ("sent", each with its `at`) and every console.warn ("warnings") are recorded too.
Each --tap, in order, clicks with the mouse at its centre the tile named NAME once the page
expression holds (P is the element, R its shadow root, heard the events recorded); each --shot saves OUT_DIR/NAME.png, the element's box, the
first time its expression holds, with the boxes (in the shot's pixels) of the lit word, of every
tile (its name and whether it pulses, is wrong or right) and of the end panel, and the count of
pixels of each theme colour in each box and in the whole shot ("colors"); each --axe runs
axe-core (bundled by the axe-selenium-python package) on the page when its expression holds and
keeps its violations. Each --call EXPRESSION::CODE runs CODE in the page (the host app calling
the element's methods), in order, once its expression holds. --until ends the watch (default: the element's state is ended).
It prints {"heard", "sent", "warnings", "shots", "axe", "final", "timedOut", "pending"}.

With --layout it opens URL in windows of each size and prints, for each, the boxes of the menu's
Start button, of the element, its play button, tiles and words once its state is ready or
playing, the page's scroll width and the menu's options.
"""

import argparse
import asyncio
import base64
import http.server
import importlib.util
import json
import os
import shutil
import socketserver
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from read_along_browser import DevTools, decode_png, headless_chromium, new_tab  # noqa: E402

import websockets  # noqa: E402

# The default theme's colours (narrator-player.js), as the screenshots show them.
COLORS = {
    "highlight": (0xff, 0xd2, 0x3f),
    "pulse": (0x1c, 0x64, 0xd8),
    "correct": (0x1e, 0x7b, 0x34),
    "wrong": (0xb8, 0x36, 0x0b),
    "end": (0x6a, 0x2f, 0xd0),
}

SHOWN = r"""
(() => {
  const P = document.querySelector("narrator-player");
  if (!P || !P.shadowRoot) return null;
  const R = P.shadowRoot;
  return {
    state: P.view.state, current: P.view.current, step: P.view.step,
    pulsing: [...R.querySelectorAll(".tile.pulsing")].map((t) => {
      const style = getComputedStyle(t);
      return { target: t.dataset.target, animation: style.animationName, outline: style.outlineStyle };
    }),
    wrong: [...R.querySelectorAll(".tile.wrong")].map((t) => t.dataset.target),
    correct: [...R.querySelectorAll(".tile.correct")].map((t) => t.dataset.target),
    tiles: [...R.querySelectorAll(".tile")].map((t) => t.dataset.target),
    pictures: [...R.querySelectorAll(".tile")].filter((t) => t.querySelector("img")).map((t) => {
      const image = t.querySelector("img");
      return { target: t.dataset.target, alt: image.alt, loaded: image.complete && image.naturalWidth > 0 };
    }),
  };
})()
"""

HOOK = r"""
(() => {
  window.__heard = [];
  // What the page sends on any WebSocket, and its console warnings: seen from outside the element.
  window.__sent = [];
  window.__warnings = [];
  const send = WebSocket.prototype.send;
  WebSocket.prototype.send = function (data) {
    try { window.__sent.push({ at: performance.now(), message: JSON.parse(data) }); } catch (e) { window.__sent.push({ at: performance.now(), raw: String(data) }); }
    return send.call(this, data);
  };
  const warn = console.warn;
  console.warn = function (...args) { window.__warnings.push(args.map(String).join(" ")); return warn.apply(this, args); };
  for (const type of %s) {
    document.addEventListener(type, (event) => {
      if (!event.target || event.target.localName !== "narrator-player") return;
      window.__heard.push({ type: event.type, at: performance.now(), detail: event.detail, shown: %s });
    }, true);
  }
})();
"""

BOXES = r"""
(() => {
  const P = document.querySelector("narrator-player");
  const R = P.shadowRoot;
  const box = (e) => { const r = e.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; };
  const lit = R.querySelector(".word.heard");
  const end = R.querySelector(".end");
  return {
    player: box(P), lit: lit ? box(lit) : null, litText: lit ? lit.textContent : null,
    end: end && getComputedStyle(end).display !== "none" ? box(end) : null,
    tiles: [...R.querySelectorAll(".tile")].map((t) => ({ name: t.dataset.target, box: box(t), pulsing: t.classList.contains("pulsing"),
      wrong: t.classList.contains("wrong"), correct: t.classList.contains("correct"),
      picture: t.querySelector("img") ? t.querySelector("img").alt : null })),
    words: [...R.querySelectorAll(".word")].map((w) => ({ key: w.dataset.key, box: box(w) })),
  };
})()
"""


def color_counts(png, boxes):
    """For the whole shot and for each named box [x0, y0, x1, y1] (shot pixels): how many pixels
    are each theme colour (within 10 of each channel)."""
    width, height, rows, channels = decode_png(png)
    named = {name: [int(max(0, b[0])), int(max(0, b[1])), int(min(width, b[2])), int(min(height, b[3]))] for name, b in boxes.items() if b}
    counts = {name: {c: 0 for c in COLORS} for name in ["all"] + list(named)}
    for y, row in enumerate(rows):
        for x in range(width):
            pixel = (row[x * channels], row[x * channels + 1], row[x * channels + 2])
            for color, (r, g, b) in COLORS.items():
                if abs(pixel[0] - r) <= 10 and abs(pixel[1] - g) <= 10 and abs(pixel[2] - b) <= 10:
                    counts["all"][color] += 1
                    for name, (x0, y0, x1, y1) in named.items():
                        if x0 <= x < x1 and y0 <= y < y1:
                            counts[name][color] += 1
                    break
    return counts


def axe_source():
    spec = importlib.util.find_spec("axe_selenium_python")
    if spec is None:
        raise RuntimeError("axe-selenium-python is not installed (Makefile PIP_PACKAGES)")
    path = os.path.join(os.path.dirname(spec.origin), "node_modules", "axe-core", "axe.min.js")
    with open(path, encoding="utf-8") as file:
        return file.read()


class Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def serve_folder(folder):
    """Serves `folder` on a free port of 127.0.0.1 with a plain static server; the server and
    its base URL (ending in /)."""
    handler = lambda *a, **k: Quiet(*a, directory=folder, **k)  # noqa: E731
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, "http://127.0.0.1:%d/" % server.server_address[1]


def serve(path):
    """Serves `path`'s folder on a free port of 127.0.0.1 (the app's own origin); its URL."""
    folder, name = os.path.split(os.path.abspath(path))
    server, base = serve_folder(folder)
    return server, base + name


async def click_at(tools, x, y):
    for kind in ("mouseMoved", "mousePressed", "mouseReleased"):
        await tools.call("Input.dispatchMouseEvent", type=kind, x=x, y=y, button="left", clickCount=1)


async def shoot(tools, out_dir, name):
    """The element's box as a PNG, with what it showed just before and just after: retaken (up
    to 5 times) until both agree, so that the boxes measured are those of the pixels."""
    for _ in range(5):
        shown = await tools.evaluate(SHOWN)
        boxes = await tools.evaluate(BOXES)
        player = boxes["player"]
        clip = {"x": max(0, player[0]), "y": max(0, player[1]), "width": player[2] - player[0], "height": player[3] - player[1], "scale": 1}
        png = base64.b64decode((await tools.call("Page.captureScreenshot", format="png", clip=clip))["data"])
        after = await tools.evaluate(SHOWN)
        if after == shown:
            break
    path = os.path.join(out_dir, name + ".png")
    with open(path, "wb") as file:
        file.write(png)

    def local(b):
        return None if b is None else [b[0] - clip["x"], b[1] - clip["y"], b[2] - clip["x"], b[3] - clip["y"]]
    for tile in boxes["tiles"]:
        tile["box"] = local(tile["box"])
    for word in boxes["words"]:
        word["box"] = local(word["box"])
    return {"file": path, "bytes": len(png), "lit": local(boxes["lit"]), "litText": boxes["litText"], "end": local(boxes["end"]),
            "tiles": boxes["tiles"], "words": boxes["words"], "shown": shown, "steady": after == shown}


def analyse(shot):
    """The theme colours' pixel counts in the shot and in each of its boxes (after the watch:
    decoding is slow)."""
    def grown(box, by):
        return None if box is None else [box[0] - by, box[1] - by, box[2] + by, box[3] + by]
    # "litRing": the lit word with its highlight ring; "ring:NAME": a tile with its pulse's
    # shadow, outline and growth.
    named = {"lit": shot["lit"], "litRing": grown(shot["lit"], 8), "end": shot["end"]}
    for tile in shot["tiles"]:
        named["tile:" + tile["name"]] = tile["box"]
        named["ring:" + tile["name"]] = grown(tile["box"], 24)
    with open(shot["file"], "rb") as file:
        shot["colors"] = color_counts(file.read(), named)


async def watch(url, out_dir, devtools_url, args):
    record = [t for t in args.record.split(",") if t]
    hook = HOOK % (json.dumps(record), SHOWN.strip())
    width, height = (int(v) for v in args.size.split("x"))
    async with websockets.connect(devtools_url, max_size=1 << 26) as socket:
        tools = await new_tab(socket, width, height, args.reduced_motion, hook)
        await tools.call("Page.navigate", url=url)
        await tools.wait_for("(() => { const P = document.querySelector('narrator-player'); return !!(P && P.view); })()", args.timeout)
        taps = [tuple(t.split(":", 1)) for t in args.tap]  # the same tile may be tapped again, later
        shots = [tuple(t.split(":", 1)) for t in args.shot]
        axes = [tuple(t.split(":", 1)) for t in args.axe]
        calls = [tuple(t.split("::", 1)) for t in args.call]
        taken, checked, tapped = {}, {}, []
        prelude = "const P = document.querySelector('narrator-player'); const R = P.shadowRoot; const heard = window.__heard;"
        holds = lambda e: tools.evaluate("(() => { %s return !!(%s); })()" % (prelude, e))  # noqa: E731
        done = args.until or "P.view.state === 'ended'"
        deadline = time.monotonic() + args.timeout * 3
        while time.monotonic() < deadline:
            for name, expression in list(taps)[:1]:  # in order
                if await holds(expression):
                    centre = await tools.evaluate(
                        "(() => { const t = [...document.querySelector('narrator-player').shadowRoot.querySelectorAll('button.tile')]"
                        ".find(b => b.dataset.target === %s); if (!t) return null; const r = t.getBoundingClientRect();"
                        " return [r.left + r.width / 2, r.top + r.height / 2]; })()" % json.dumps(name))
                    if centre is None:
                        raise RuntimeError("no tile %s to tap" % name)
                    await click_at(tools, centre[0], centre[1])
                    tapped.append(name)
                    taps.remove((name, expression))
            for expression, code in list(calls)[:1]:  # in order
                if await holds(expression):
                    await tools.evaluate("(() => { %s %s; })()" % (prelude, code))
                    calls.remove((expression, code))
            for name, expression in list(shots):
                if await holds(expression):
                    taken[name] = await shoot(tools, out_dir, name)
                    shots.remove((name, expression))
            for name, expression in list(axes):
                if await holds(expression):
                    await tools.evaluate(axe_source())
                    checked[name] = await tools.evaluate(
                        "axe.run(document).then(r => r.violations.map(v => ({id: v.id, impact: v.impact, help: v.help,"
                        " nodes: v.nodes.map(n => n.target.join(' '))})))")
                    axes.remove((name, expression))
            if not taps and not shots and not axes and not calls and await holds(done):
                break
            await asyncio.sleep(0.01)
        timed_out = time.monotonic() >= deadline
        for shot in taken.values():
            analyse(shot)
        heard = await tools.evaluate("window.__heard")
        sent = await tools.evaluate("window.__sent")
        warnings = await tools.evaluate("window.__warnings")
        final = await tools.evaluate(
            "(() => { const P = document.querySelector('narrator-player'); return {view: {state: P.view.state, error: P.view.error,"
            " taps: P.view.taps, pulses: P.view.pulses, log: P.view.log}, shown: %s,"
            " caption: document.getElementById('caption') ? document.getElementById('caption').textContent : null,"
            " status: document.getElementById('status') ? document.getElementById('status').textContent : null,"
            " speed: P.speed, volume: P.volume, muted: P.muted,"
            " hostPictures: [...document.querySelectorAll('[data-pulsed]')].map(e => e.id)}; })()" % SHOWN.strip())
    return {"heard": heard, "sent": sent, "warnings": warnings, "shots": taken, "axe": checked, "final": final, "tapped": tapped, "timedOut": timed_out,
            "pending": {"taps": taps, "shots": shots, "axe": axes, "calls": calls}}


async def layout(url, devtools_url, args):
    results = []
    async with websockets.connect(devtools_url, max_size=1 << 26) as socket:
        for size in args.layout:
            width, height = (int(v) for v in size.split("x"))
            tools = await new_tab(socket, width, height, False, hook="")
            await tools.call("Page.navigate", url=url)
            await tools.wait_for("(() => { const P = document.querySelector('narrator-player');"
                                 " return !!(P && P.view && ['ready', 'playing', 'ended'].includes(P.view.state)); })()", args.timeout)
            shown = await tools.evaluate(
                "(() => { const box = (e) => { const r = e.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; };"
                " const P = document.querySelector('narrator-player'); const R = P.shadowRoot;"
                " return {width: innerWidth, height: innerHeight, start: box(document.getElementById('start')), player: box(P),"
                " toggle: box(R.querySelector('.toggle')), tiles: [...R.querySelectorAll('.tile')].map(box),"
                " words: [...R.querySelectorAll('.word')].map(box), scrollWidth: document.documentElement.scrollWidth,"
                " options: [...document.getElementById('program').options].map(o => o.text)}; })()")
            shown["size"] = size
            results.append(shown)
    return {"layouts": results}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("url")
    parser.add_argument("out_dir")
    parser.add_argument("--chromium", default=shutil.which("chromium") or "chromium")
    parser.add_argument("--timeout", type=float, default=30)
    parser.add_argument("--serve", action="store_true")
    parser.add_argument("--record", default="")
    parser.add_argument("--tap", action="append", default=[])
    parser.add_argument("--shot", action="append", default=[])
    parser.add_argument("--axe", action="append", default=[])
    parser.add_argument("--call", action="append", default=[], help="EXPRESSION::CODE")
    parser.add_argument("--until", default=None)
    parser.add_argument("--size", default="800x600")
    parser.add_argument("--reduced-motion", action="store_true")
    parser.add_argument("--layout", action="append", default=[])
    args = parser.parse_args()
    os.makedirs(args.out_dir, exist_ok=True)
    server = None
    url = args.url
    if args.serve:
        server, url = serve(args.url)
    try:
        with headless_chromium(args.chromium, args.timeout) as devtools_url:
            if devtools_url is None:
                sys.stderr.write("player_browser: chromium did not start\n")
                return 1
            if args.layout:
                result = asyncio.run(layout(url, devtools_url, args))
            else:
                result = asyncio.run(watch(url, args.out_dir, devtools_url, args))
    finally:
        if server:
            server.shutdown()
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
