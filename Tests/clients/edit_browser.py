#!/usr/bin/env python3
"""Drives the `narrator edit` page in headless Chromium over the DevTools protocol.

Usage:
  edit_browser.py PAGE_URL [--drag WORD:EDGE:PIXELS] [--key WORD:EDGE:KEY] [--play WORD] [--range A:B]
                  [--reduced-motion] [--no-audio] [--frozen-audio-clock] [--chromium PATH] [--timeout S]

What it does, in this order:
  1. opens PAGE_URL at 1200×600 and waits until the page is ready;
  2. --drag: presses the mouse on the centre of the handle of word WORD's EDGE (start or end),
     moves it PIXELS to the right (negative: left) in two steps and releases it;
  3. --key: focuses a handle and presses KEY (ArrowLeft, ArrowRight, Shift+ArrowRight…);
  4. clicks Save and waits for the page to say it saved;
  5. --play: clicks word WORD, and samples the page every 10 ms until playback ends, noting
     which word element has the class "playing";
  6. --range: clicks word A, Shift+clicks word B, and samples likewise.

It prints one JSON object: "canvas" (the waveform's left and width in CSS pixels), "grab" (the
handle's frame before the drag and the pixels pressed and released at), "handles" (the
frames the dragged and keyed handles showed after), "saved" (the page's state and status),
"play" and "range" (each: the samples, [ms since the click, index of the word element with
class "playing" or null, the page's clock, how many words have the class, the playhead's CSS
display], and the page's log). --reduced-motion emulates prefers-reduced-motion: reduce;
--no-audio starts Chromium with --disable-audio-output; --frozen-audio-clock keeps the page's
AudioContext.currentTime at 0 (an audio output that never starts).
"""

import argparse
import asyncio
import json
import os
import shutil
import sys
import time

import websockets

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from read_along_browser import DevTools, headless_chromium  # noqa: E402


def handle_selector(word, edge):
    return '.handle[data-index="%d"][data-edge="%s"]' % (word, edge)


async def box(tools, selector):
    return await tools.evaluate(
        "(() => { const r = document.querySelector(%s).getBoundingClientRect();"
        " return [r.left, r.top, r.width, r.height]; })()" % json.dumps(selector))


async def mouse(tools, kind, x, y, modifiers=0, buttons=1):
    await tools.call("Input.dispatchMouseEvent", type=kind, x=x, y=y, button="left", buttons=buttons,
                     clickCount=1, modifiers=modifiers)


async def click(tools, selector, modifiers=0):
    left, top, width, height = await box(tools, selector)
    x, y = round(left + width / 2), round(top + height / 2)
    await mouse(tools, "mousePressed", x, y, modifiers)
    await mouse(tools, "mouseReleased", x, y, modifiers, buttons=0)


async def sample_playback(tools, timeout):
    """Samples until the page has played and stopped."""
    await tools.wait_for("window.editor.state === 'playing'", timeout)
    start = time.monotonic()
    samples = []
    while time.monotonic() - start < timeout:
        state = await tools.evaluate(
            "(() => { const p = document.querySelector('.word.playing');"
            " return [window.editor.state, p ? Number(p.dataset.index) : null, window.editor.clock,"
            " document.querySelectorAll('.word.playing').length,"
            " getComputedStyle(document.getElementById('playhead')).display]; })()")
        samples.append([round((time.monotonic() - start) * 1000, 1), state[1], state[2], state[3], state[4]])
        if state[0] != "playing":
            break
        await asyncio.sleep(0.01)
    return samples


async def drive(args, devtools_url):
    result = {}
    async with websockets.connect(devtools_url, max_size=1 << 26) as socket:
        tools = DevTools(socket)
        target = await tools.call("Target.createTarget", session=False, url="about:blank")
        attached = await tools.call("Target.attachToTarget", session=False, targetId=target["targetId"], flatten=True)
        tools.session = attached["sessionId"]
        await tools.call("Page.enable")
        await tools.call("Emulation.setDeviceMetricsOverride", width=1200, height=600, deviceScaleFactor=1, mobile=False)
        if args.frozen_audio_clock:
            # What a machine whose audio output never starts shows the page: an audio clock
            # that stays where it was.
            await tools.call("Page.addScriptToEvaluateOnNewDocument", source=(
                "Object.defineProperty(BaseAudioContext.prototype, 'currentTime', {get() { return 0; }});"))
        if args.reduced_motion:
            await tools.call("Emulation.setEmulatedMedia", features=[{"name": "prefers-reduced-motion", "value": "reduce"}])
        await tools.call("Page.navigate", url=args.url)
        await tools.wait_for("window.editor && window.editor.state === 'ready'", args.timeout)
        canvas = await box(tools, "#wave")
        result["canvas"] = {"left": canvas[0], "width": canvas[2]}

        if args.drag:
            word, edge, pixels = args.drag.split(":")
            selector = handle_selector(int(word), edge)
            before = int(await tools.evaluate("document.querySelector(%s).getAttribute('aria-valuenow')" % json.dumps(selector)))
            left, top, width, height = await box(tools, selector)
            x, y = round(left + width / 2), round(top + height / 2)
            to = x + int(pixels)
            await mouse(tools, "mousePressed", x, y)
            await mouse(tools, "mouseMoved", (x + to) // 2, y)
            await mouse(tools, "mouseMoved", to, y)
            await mouse(tools, "mouseReleased", to, y, buttons=0)
            after = int(await tools.evaluate("document.querySelector(%s).getAttribute('aria-valuenow')" % json.dumps(selector)))
            result["grab"] = {"frame": before, "pressed": x, "released": to, "after": after}

        if args.key:
            word, edge, key = args.key.split(":")
            selector = handle_selector(int(word), edge)
            shift = key.startswith("Shift+")
            name = key.split("+")[-1]
            before = int(await tools.evaluate("document.querySelector(%s).getAttribute('aria-valuenow')" % json.dumps(selector)))
            await tools.evaluate("document.querySelector(%s).focus()" % json.dumps(selector))
            for kind in ("keyDown", "keyUp"):
                await tools.call("Input.dispatchKeyEvent", type=kind, key=name, code=name, modifiers=8 if shift else 0,
                                 windowsVirtualKeyCode={"ArrowLeft": 37, "ArrowRight": 39}[name])
            after = int(await tools.evaluate("document.querySelector(%s).getAttribute('aria-valuenow')" % json.dumps(selector)))
            label = await tools.evaluate("document.querySelector(%s).getAttribute('aria-label')" % json.dumps(selector))
            result["key"] = {"before": before, "after": after, "label": label}

        await tools.evaluate("document.getElementById('save').click()")
        await tools.wait_for("window.editor.state === 'saved' || window.editor.state === 'error'", args.timeout)
        result["saved"] = await tools.evaluate("[window.editor.state, document.getElementById('status').textContent]")

        if args.play is not None:
            await click(tools, '.word[data-index="%d"]' % args.play)
            result["play"] = {"samples": await sample_playback(tools, args.timeout),
                              "log": await tools.evaluate("window.editor.log")}
        if args.range:
            first, last = (int(n) for n in args.range.split(":"))
            await click(tools, '.word[data-index="%d"]' % first)
            await tools.wait_for("window.editor.state === 'playing'", args.timeout)
            await tools.evaluate("window.editor.log = []")
            await click(tools, '.word[data-index="%d"]' % last, modifiers=8)
            result["range"] = {"samples": await sample_playback(tools, args.timeout),
                               "log": await tools.evaluate("window.editor.log")}
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("url")
    parser.add_argument("--drag")
    parser.add_argument("--key")
    parser.add_argument("--play", type=int)
    parser.add_argument("--range")
    parser.add_argument("--reduced-motion", action="store_true", help="emulate prefers-reduced-motion: reduce")
    parser.add_argument("--no-audio", action="store_true", help="start Chromium with --disable-audio-output")
    parser.add_argument("--frozen-audio-clock", action="store_true", help="the page's AudioContext.currentTime stays 0")
    parser.add_argument("--chromium", default=shutil.which("chromium") or "chromium")
    parser.add_argument("--timeout", type=float, default=20)
    args = parser.parse_args()
    flags = ["--autoplay-policy=no-user-gesture-required"] + (["--disable-audio-output"] if args.no_audio else [])
    with headless_chromium(args.chromium, args.timeout, flags) as devtools_url:
        if devtools_url is None:
            sys.stderr.write("edit_browser: chromium did not start\n")
            return 1
        print(json.dumps(asyncio.run(drive(args, devtools_url))))
        return 0

if __name__ == "__main__":
    sys.exit(main())
