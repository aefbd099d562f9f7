#!/usr/bin/env python3
"""A client of `narrator serve`, over WebSocket (the `websockets` package) or the Unix socket.

Usage:
  narrator_client.py run (--ws URL --token T | --unix PATH) [--retry S] [--expect-restart]
                         REQUEST_JSON ...
      Sends each request (verbatim: garbage too), prints every event it gets as a JSON line with "received" (its
      CLOCK_MONOTONIC nanoseconds on arrival) added, and exits 0 once every request has had
      its terminal event (finished, stopped or error; one each, whatever was sent). --retry S: keep trying to connect for S
      seconds. --expect-restart: if the connection closes before that, reconnect (for up to
      --retry seconds from the first close) and send again the requests that had no terminal
      event; lines {"client": "closed"} and {"client": "reconnected"} mark each attempt.
      --when MATCH DELAY_MS REQUEST (repeatable): once, DELAY_MS after the first event whose
      members match MATCH (key=value pairs joined by commas, e.g. type=word,text=can; values
      compared as text), send REQUEST; a line {"client": "sent", "request": …} with its
      CLOCK_MONOTONIC "sent" time marks it. Each such request also awaits its terminal event.
  narrator_client.py load (--ws URL --token T | --unix PATH) --clients N [--first K] [--ready FILE]
      Opens N connections, each subscribed to the next playback; prints every event
      each receives (with "client", numbered from K, and "received") until each has had its
      terminal event. Over WebSocket it uses the websockets package; with --fast (always on the
      Unix socket) it reads raw sockets in one selector loop instead (for WebSocket: its own
      handshake and frame reader), so that the client's own work does not show as lateness.
      Several processes spread a large load over the cores.
      --ready FILE is created once all N are subscribed.

Exit status: 0 when done; 1 when the daemon could not be reached or closed the connection
early (a line {"client": "closed"} is printed first).
"""

import argparse
import asyncio
import base64
import json
import os
import socket
import struct
import sys
import time

import websockets

TERMINAL = {"finished", "stopped", "error"}  # docs/events.md


def emit(event, **extra):
    event = dict(event)
    event.update(extra)
    sys.stdout.write(json.dumps(event, sort_keys=True) + "\n")
    sys.stdout.flush()


class UnixTransport:
    def __init__(self, path):
        self.path = path

    async def connect(self):
        self.reader, self.writer = await asyncio.open_unix_connection(self.path, limit=1 << 20)

    async def send(self, text):
        self.writer.write(text.encode() + b"\n")
        await self.writer.drain()

    async def receive(self):
        line = await self.reader.readline()
        if not line:
            raise ConnectionError("closed")
        return line

    async def close(self):
        self.writer.close()


class WebSocketTransport:
    def __init__(self, url, token):
        self.url = url + "?token=" + token

    async def connect(self):
        self.socket = await websockets.connect(self.url, max_size=1 << 22)

    async def send(self, text):
        await self.socket.send(text)

    async def receive(self):
        try:
            return await self.socket.recv()
        except websockets.ConnectionClosed as closed:
            raise ConnectionError("closed") from closed

    async def close(self):
        await self.socket.close()


async def connect(transport, retry):
    deadline = time.monotonic() + retry
    while True:
        try:
            await transport.connect()
            return
        except (OSError, websockets.InvalidHandshake, websockets.InvalidURI):
            if time.monotonic() >= deadline:
                raise
            await asyncio.sleep(0.05)


def request_id(text):
    """The id of a request as the daemon will echo it, or None (it will answer with id null)."""
    try:
        request = json.loads(text)
        return json.dumps(request.get("id")) if isinstance(request, dict) else None
    except ValueError:
        return None


def matches(event, match):
    for pair in match.split(","):
        key, _, value = pair.partition("=")
        if key not in event or str(event[key]) != value:
            return False
    return True


async def run(args, transport):
    # Each request, even one that is not JSON, gets exactly one terminal event.
    requests = list(args.requests)
    outstanding = len(requests) + len(args.when)
    triggers = [{"match": m, "delay": float(d) / 1000, "request": r, "fired": False} for m, d, r in args.when]

    async def fire(trigger):
        await asyncio.sleep(trigger["delay"])
        emit({"client": "sent", "request": trigger["request"]}, sent=time.monotonic_ns())
        await transport.send(trigger["request"])

    pending = {request_id(text): text for text in requests if request_id(text) not in (None, "null")}
    await connect(transport, args.retry)
    for text in requests:
        await transport.send(text)
    restart_deadline = None
    while outstanding > 0:
        try:
            message = await transport.receive()
        except ConnectionError:
            emit({"client": "closed"}, received=time.monotonic_ns())
            if not args.expect_restart:
                return 1
            # A connection made while the old daemon was dying can be closed at once: keep
            # trying until the retry window from the first close has passed.
            if restart_deadline is None:
                restart_deadline = time.monotonic() + args.retry
            remaining = restart_deadline - time.monotonic()
            if remaining <= 0:
                return 1
            await asyncio.sleep(0.05)
            await connect(transport, remaining)
            emit({"client": "reconnected"}, received=time.monotonic_ns())
            outstanding = len(pending)
            for text in pending.values():
                await transport.send(text)
            continue
        received = time.monotonic_ns()
        event = json.loads(message)
        emit(event, received=received)
        for trigger in triggers:
            if not trigger["fired"] and matches(event, trigger["match"]):
                trigger["fired"] = True
                asyncio.ensure_future(fire(trigger))
        if event.get("type") in TERMINAL:
            outstanding -= 1
            pending.pop(json.dumps(event.get("id")), None)
    await transport.close()
    return 0


TERMINAL_MARKS = (b'"type":"finished"', b'"type":"stopped"', b'"type":"error"')


def open_raw(args, number):
    """A connection for the load, subscribed to the next playback: the Unix socket, or a
    WebSocket opened by hand (the handshake, then frames read straight off the socket), so that
    each read costs the client next to nothing and the figure measures the daemon."""
    subscribe = b'{"id": "s%d", "op": "subscribe", "playback": "next"}' % number
    if args.unix:
        sock = socket.socket(socket.AF_UNIX)
        sock.connect(args.unix)
        sock.sendall(subscribe + b"\n")
        return sock
    host, port = args.ws.split("//", 1)[1].split("/", 1)[0].rsplit(":", 1)
    sock = socket.create_connection((host, int(port)))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    key = base64.b64encode(os.urandom(16))
    sock.sendall(b"GET /ws?token=%s HTTP/1.1\r\nHost: %s:%s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                 b"Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n\r\n"
                 % (args.token.encode(), host.encode(), port.encode(), key))
    response = b""
    while b"\r\n\r\n" not in response:
        chunk = sock.recv(4096)
        if not chunk:
            raise ConnectionError("closed during the handshake")
        response += chunk
    if not response.startswith(b"HTTP/1.1 101"):
        raise ConnectionError(response.split(b"\r\n", 1)[0].decode())
    mask = os.urandom(4)
    masked = bytes(byte ^ mask[i % 4] for i, byte in enumerate(subscribe))
    header = bytes([0x81, 0x80 | len(masked)]) if len(masked) < 126 else bytes([0x81, 0xFE]) + struct.pack(">H", len(masked))
    sock.sendall(header + mask + masked)
    return sock


def ws_messages(stream):
    """Text messages from a server's (unmasked) frame stream, and what is left: a frame not
    complete yet."""
    messages = []
    position = 0
    while True:
        start = position
        if position + 2 > len(stream):
            return messages, stream[start:]
        opcode, length = stream[position] & 0x0F, stream[position + 1] & 0x7F
        position += 2
        if length >= 126:
            size = 2 if length == 126 else 8
            if position + size > len(stream):
                return messages, stream[start:]
            length = int.from_bytes(stream[position:position + size], "big")
            position += size
        if position + length > len(stream):
            return messages, stream[start:]
        if opcode == 1:
            messages.append(stream[position:position + length])
        position += length


def load_fast(args):
    import selectors
    selector = selectors.DefaultSelector()
    clients = []
    for number in range(args.first, args.first + args.clients):
        sock = open_raw(args, number)
        sock.setblocking(False)
        state = {"number": number, "socket": sock, "reads": []}
        clients.append(state)
        selector.register(sock, selectors.EVENT_READ, state)
    time.sleep(0.3)
    if args.ready:
        open(args.ready, "w").close()
    open_clients = len(clients)
    while open_clients:
        ready = selector.select(timeout=60)
        if not ready:
            break
        for key, _ in ready:
            state = key.data
            data = state["socket"].recv(1 << 16)
            received = time.monotonic_ns()
            state["reads"].append((received, data))
            if not data or any(mark in data for mark in TERMINAL_MARKS):
                selector.unregister(state["socket"])
                state["socket"].close()
                open_clients -= 1
    for state in clients:
        # Each event is stamped with the time of the read that completed it.
        stream = b""
        for received, data in state["reads"]:
            stream += data
            if args.unix:
                *lines, stream = stream.split(b"\n")
            else:
                lines, stream = ws_messages(stream)
            for line in lines:
                emit(json.loads(line), client=state["number"], received=received)
    return 0


async def load(args):
    subscribed = 0
    everyone = asyncio.Event()

    async def client(number):
        nonlocal subscribed
        transport = UnixTransport(args.unix) if args.unix else WebSocketTransport(args.ws, args.token)
        await connect(transport, args.retry)
        await transport.send(json.dumps({"id": "s%d" % number, "op": "subscribe", "playback": "next"}))
        subscribed += 1
        if subscribed == args.clients:
            everyone.set()
        events = []
        while True:
            message = await transport.receive()
            received = time.monotonic_ns()
            events.append((received, message))
            if json.loads(message).get("type") in TERMINAL:
                break
        await transport.close()
        return number, events

    tasks = [asyncio.create_task(client(args.first + n)) for n in range(args.clients)]
    await everyone.wait()
    # The subscribe requests are on their way; give the daemon a moment to register them.
    await asyncio.sleep(0.3)
    if args.ready:
        open(args.ready, "w").close()
    for number, events in await asyncio.gather(*tasks):
        for received, message in events:
            emit(json.loads(message), client=number, received=received)
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    run_parser = commands.add_parser("run")
    run_parser.add_argument("--ws")
    run_parser.add_argument("--unix")
    run_parser.add_argument("--token", default="")
    run_parser.add_argument("--retry", type=float, default=0)
    run_parser.add_argument("--expect-restart", action="store_true")
    run_parser.add_argument("--when", nargs=3, action="append", default=[], metavar=("MATCH", "DELAY_MS", "REQUEST"))
    run_parser.add_argument("requests", nargs="+")
    load_parser = commands.add_parser("load")
    load_parser.add_argument("--ws")
    load_parser.add_argument("--unix")
    load_parser.add_argument("--token", default="")
    load_parser.add_argument("--clients", type=int, default=50)
    load_parser.add_argument("--first", type=int, default=0)
    load_parser.add_argument("--fast", action="store_true")
    load_parser.add_argument("--retry", type=float, default=5)
    load_parser.add_argument("--ready")
    args = parser.parse_args()
    try:
        if args.command == "load":
            return load_fast(args) if args.unix or args.fast else asyncio.run(load(args))
        transport = UnixTransport(args.unix) if args.unix else WebSocketTransport(args.ws, args.token)
        return asyncio.run(run(args, transport))
    except (OSError, websockets.InvalidHandshake, ConnectionError) as error:
        sys.stderr.write("narrator_client: %s\n" % error)
        return 1


if __name__ == "__main__":
    sys.exit(main())
