"""Round trip of a no-op call (think) with the Python client; prints p50/p99 as JSON."""

import argparse
import asyncio
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))

import toold  # noqa: E402


async def main(socket: str, n: int, warm: int) -> None:
    async with toold.Client(socket=socket) as client:
        async with client.session() as s:
            lat = []
            for i in range(warm + n):
                start = time.perf_counter()
                r = await s.call("think", '{"thought":"x"}')
                if not r.success:
                    raise SystemExit(f"call failed: {r.error}")
                if i >= warm:
                    lat.append(time.perf_counter() - start)
    lat.sort()
    print(json.dumps({"p50_us": lat[len(lat) // 2] * 1e6, "p99_us": lat[len(lat) * 99 // 100] * 1e6, "n": len(lat)}))


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--socket", default="./toold.sock")
    ap.add_argument("-n", type=int, default=2000)
    ap.add_argument("--warmup", type=int, default=200)
    a = ap.parse_args()
    asyncio.run(main(a.socket, a.n, a.warmup))
