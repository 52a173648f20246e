"""The websocket clients of bench_fanout.py, in their own process (not a benchmark itself).

    python bench/fanout_clients.py --urls ws://127.0.0.1:8801/ws/events/,... \
        --clients 1000 --cookie sessionid=... --origin http://127.0.0.1:8801

Opens `--clients` connections to `/ws/events/`, spread round-robin over the URLs, each
with the session cookie and an allowed Origin, and waits for each one's `hello`. Then it
prints `READY <n>` and records, per connection, when each live event arrives. Events
whose payload carries `bench_t0` (the time the benchmark wrote it, same machine, same
clock) are measured. A line `DONE` on stdin ends the run: one JSON line comes out with,
per measured event id, how many connections received it and the arrival delays.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections import defaultdict
from typing import Any

import websockets


async def connect(url: str, cookie: str, origin: str) -> Any:
    ws = await websockets.connect(
        url,
        additional_headers={"Cookie": cookie},
        origin=origin,  # type: ignore[arg-type]
        max_queue=None,
        open_timeout=120,
        ping_interval=None,
    )
    hello = json.loads(await asyncio.wait_for(ws.recv(), timeout=120))
    if hello.get("type") != "hello":
        raise RuntimeError(f"expected hello, got {hello!r}")
    return ws


async def main(args: argparse.Namespace) -> None:
    urls = args.urls.split(",")
    arrivals: dict[int, list[float]] = defaultdict(list)
    sent_at: dict[int, float] = {}
    errors: list[str] = []

    sockets: list[Any] = []
    for start in range(0, args.clients, args.batch):
        batch = range(start, min(args.clients, start + args.batch))
        sockets += await asyncio.gather(
            *(connect(urls[i % len(urls)], args.cookie, args.origin) for i in batch)
        )

    received: list[tuple[float, str]] = []

    async def read(ws: Any) -> None:
        # Only the arrival time and the frame here: parsing waits until the run is over, so
        # that the clients' own work does not delay the arrivals they measure.
        try:
            async for raw in ws:
                received.append((time.time(), raw))
        except websockets.ConnectionClosed as exc:
            errors.append(f"closed: {exc}")

    readers = [asyncio.create_task(read(ws)) for ws in sockets]
    print(f"READY {len(sockets)}", flush=True)
    loop = asyncio.get_running_loop()
    while True:
        line = await loop.run_in_executor(None, sys.stdin.readline)
        if not line or line.strip() == "DONE":
            break
    await asyncio.sleep(args.grace)
    for task in readers:
        task.cancel()
    await asyncio.gather(*(ws.close() for ws in sockets), return_exceptions=True)
    for now, raw in received:
        message = json.loads(raw)
        if message.get("type") != "event":
            continue
        t0 = (message.get("payload") or {}).get("bench_t0")
        if t0 is None:
            continue
        arrivals[message["id"]].append(now)
        sent_at[message["id"]] = float(t0)
    result = {
        "clients": len(sockets),
        "events": {
            str(event_id): {
                "received": len(times),
                "delays_ms": [round((t - sent_at[event_id]) * 1000, 3) for t in times],
            }
            for event_id, times in arrivals.items()
        },
        "errors": errors[:10],
    }
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--urls", required=True)
    parser.add_argument("--clients", type=int, default=1000)
    parser.add_argument("--cookie", required=True)
    parser.add_argument("--origin", required=True)
    parser.add_argument("--batch", type=int, default=100, help="connections opened at once")
    parser.add_argument("--grace", type=float, default=2.0, help="seconds to wait after DONE")
    asyncio.run(main(parser.parse_args()))
