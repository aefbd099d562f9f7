#!/usr/bin/env python3
"""Runs a page of a `narrator pack --web` folder in headless Chromium and prints what one of its
functions returns, as JSON.

Usage:
  wasm_browser.py FOLDER PAGE EXPRESSION [--ready EXPRESSION] [--chromium PATH] [--timeout S]

FOLDER is served on a free port of 127.0.0.1 (a static server: nothing of Narrator's runs);
PAGE (relative to FOLDER) is opened in a new tab with autoplay allowed (a live AudioContext
starts without a gesture) and, once `window.ready` is true (or the --ready expression), EXPRESSION (a promise, such as
`run()`) is awaited in it; its value is printed. Console errors and exceptions of the page are
printed to stderr, and a page that throws makes the exit status 1.
"""

import argparse
import asyncio
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from player_browser import serve_folder  # noqa: E402
from read_along_browser import headless_chromium, new_tab  # noqa: E402

import websockets  # noqa: E402


async def evaluate(url, expression, devtools_url, timeout, ready):
    async with websockets.connect(devtools_url, max_size=None) as socket:
        tools = await new_tab(socket, hook="")
        await tools.call("Runtime.enable")
        await tools.call("Page.navigate", url=url)
        try:
            await tools.wait_for(ready, timeout)
        except TimeoutError:
            raise RuntimeError("%s: never %s (a module that failed to load?)" % (url, ready))
        result = await asyncio.wait_for(
            tools.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True), timeout)
        if "exceptionDetails" in result:
            details = result["exceptionDetails"]
            raise RuntimeError("the page threw: %s" % details.get("exception", {}).get("description", details.get("text")))
        return result["result"].get("value")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("folder")
    parser.add_argument("page")
    parser.add_argument("expression")
    parser.add_argument("--ready", default="window.ready === true")
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    parser.add_argument("--timeout", type=float, default=60)
    args = parser.parse_args()
    server, base = serve_folder(os.path.abspath(args.folder))
    url = base + args.page
    try:
        flags = ["--autoplay-policy=no-user-gesture-required"]
        with headless_chromium(args.chromium, args.timeout, flags) as devtools_url:
            if devtools_url is None:
                print("chromium did not start", file=sys.stderr)
                return 1
            value = asyncio.run(evaluate(url, args.expression, devtools_url, args.timeout, args.ready))
    finally:
        server.shutdown()
    print(json.dumps(value))
    return 0


if __name__ == "__main__":
    sys.exit(main())
