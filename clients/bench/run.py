"""Measures a no-op call's round trip (think: Start, Executing, End) from the
Go, Python and TypeScript clients against the same toold, alternating the
three in rounds so they see the same noise; prints a markdown table with
each client's median p50/p99 and its ratio to Go's.

    make bench-clients        (or: python3 clients/bench/run.py --rounds 3 -n 2000)
"""

import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python", "tests"))

from harness import REPO, Toold  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("-n", type=int, default=2000)
    a = ap.parse_args()
    gobin = os.path.join(REPO, "bin", "goroundtrip")
    subprocess.run(["go", "build", "-o", gobin, "./clients/bench/goroundtrip"], cwd=REPO, check=True)
    d = Toold(mode="auto")
    try:
        args = ["--socket", d.socket, "-n", str(a.n)]
        cmds = {
            "Go (grpc-go, generated stubs)": [gobin, "-socket", d.socket, "-n", str(a.n)],
            "Python (toold, grpc.aio)": [sys.executable, os.path.join(HERE, "roundtrip.py")] + args,
            "TypeScript (@toold/client, connect-node)": ["node", os.path.join(HERE, "roundtrip.mjs")] + args,
        }
        res = {k: [] for k in cmds}
        for _ in range(a.rounds):
            for k, cmd in cmds.items():
                out = subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=600)
                res[k].append(json.loads(out.stdout.strip().splitlines()[-1]))
    finally:
        d.stop()
    go = statistics.median(r["p50_us"] for r in res["Go (grpc-go, generated stubs)"])
    print(f"think round trip, one stream, {a.n} sequential calls x {a.rounds} alternating rounds (median of rounds)\n")
    print("| client | p50 | p99 | p50 vs Go |")
    print("|---|---|---|---|")
    for k, rs in res.items():
        p50 = statistics.median(r["p50_us"] for r in rs)
        p99 = statistics.median(r["p99_us"] for r in rs)
        print(f"| {k} | {p50:.0f} µs | {p99:.0f} µs | {p50 / go:.2f}× |")


if __name__ == "__main__":
    main()
