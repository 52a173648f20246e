"""The live-event clients of bench_chaos.py, in a process of their own (not a benchmark).

    python -m bench.chaos.ws_clients --urls ws://127.0.0.1:8801/ws/events/ --clients 4 \
        --token KEY

Each client opens `/ws/events/` with `Authorization: Token KEY` and records the id of every
event it receives. When its connection drops (the web process was killed, Redis went away)
it reconnects with back-off, as `static/js/live.js` does, and resumes as docs/events.md
says: `{"action": "resume", "last_event_id": ..., "seen": [...]}`. It prints `READY <n>`
once every client has its first `hello`; a line `DONE` on stdin ends the run after
`--grace` seconds, and one JSON line comes out: per client, the newest event id of its
first hello (what it may expect from), the ids it received, its reconnects and resyncs, and
any frame that broke the protocol (an event before the hello...): the client says so and
reconnects, as a browser would, rather than stop listening.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import Any

import websockets


class Client:
    def __init__(self, url: str, token: str) -> None:
        self.url, self.token = url, token
        self.start_id: int | None = None
        self.ids: set[int] = set()
        self.newest = 0
        self.recent: list[int] = []
        self.reconnects = 0
        self.resyncs = 0
        self.errors: list[str] = []  # connections lost (expected while processes die)
        self.protocol_errors: list[str] = []  # frames not as docs/events.md says
        self.hello = asyncio.Event()

    def note(self, event_id: int) -> None:
        self.ids.add(event_id)
        self.newest = max(self.newest, event_id)
        self.recent = [*self.recent[-199:], event_id]

    async def run(self, stop: asyncio.Event) -> None:
        delay = 0.3
        while not stop.is_set():
            try:
                async with websockets.connect(
                    self.url,
                    additional_headers={"Authorization": f"Token {self.token}"},
                    open_timeout=10,
                    ping_interval=None,
                    max_queue=None,
                ) as ws:
                    hello = json.loads(await asyncio.wait_for(ws.recv(), timeout=10))
                    if hello.get("type") != "hello":
                        raise RuntimeError(f"expected hello, got {hello!r}")
                    if self.start_id is None:
                        self.start_id = int(hello["newest_event_id"] or 0)
                        self.newest = self.start_id
                    else:
                        await ws.send(
                            json.dumps(
                                {"action": "resume", "last_event_id": self.newest,
                                 "seen": self.recent}
                            )
                        )  # fmt: skip
                    self.hello.set()
                    delay = 0.3
                    await self._read(ws, stop)
            except (TimeoutError, OSError, websockets.WebSocketException) as exc:
                if len(self.errors) < 5:
                    self.errors.append(f"{type(exc).__name__}: {exc}"[:200])
            except Exception as exc:  # the server broke the protocol: say so, carry on
                if len(self.protocol_errors) < 5:
                    self.protocol_errors.append(f"{type(exc).__name__}: {exc}"[:300])
            if stop.is_set():
                return
            self.reconnects += 1
            await asyncio.sleep(delay)
            delay = min(2.0, delay * 2)

    async def _read(self, ws: Any, stop: asyncio.Event) -> None:
        while not stop.is_set():
            try:
                raw = await asyncio.wait_for(ws.recv(), timeout=0.5)
            except TimeoutError:
                continue
            message = json.loads(raw)
            kind = message.get("type")
            if kind == "event":
                self.note(int(message["id"]))
            elif kind == "resync":
                self.resyncs += 1


async def main(args: argparse.Namespace) -> None:
    urls = args.urls.split(",")
    clients = [Client(urls[i % len(urls)], args.token) for i in range(args.clients)]
    stop = asyncio.Event()
    tasks = [asyncio.create_task(c.run(stop)) for c in clients]
    await asyncio.wait_for(asyncio.gather(*(c.hello.wait() for c in clients)), timeout=60)
    print(f"READY {len(clients)}", flush=True)
    loop = asyncio.get_running_loop()
    while True:
        line = await loop.run_in_executor(None, sys.stdin.readline)
        if not line or line.strip() == "DONE":
            break
    await asyncio.sleep(args.grace)
    stop.set()
    await asyncio.gather(*tasks, return_exceptions=True)
    result = [
        {
            "url": c.url,
            "start_id": c.start_id,
            "ids": sorted(c.ids),
            "reconnects": c.reconnects,
            "resyncs": c.resyncs,
            "errors": c.errors,
            "protocol_errors": c.protocol_errors,
        }
        for c in clients
    ]
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--urls", required=True)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--token", required=True)
    parser.add_argument("--grace", type=float, default=3.0, help="seconds to wait after DONE")
    asyncio.run(main(parser.parse_args()))
