#!/usr/bin/env python3
"""An agent loop: an OpenAI-compatible Chat Completions model, tools run by toold.

    python3 agent.py "How many lines has notes.txt?"

renders toold's tools with ListTools(format=OPENAI), sends them with the
conversation to $OPENAI_BASE_URL/chat/completions (default
https://api.openai.com/v1, key $OPENAI_API_KEY, model $OPENAI_MODEL),
executes every tool call of the answer through toold (concurrently when the
model sent several), appends a ``role: tool`` message per call, and loops
until the model answers in text.

``--replay DIR`` reads the provider's responses from DIR/turn-N.json instead
of calling the API (CI does this); ``--record DIR`` saves live responses in
that layout. Approvals: on a terminal you are asked; otherwise commands
whose first word is in --allow-commands are approved once and everything
else is denied with a reason the model sees.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shlex
import sys
import time
import urllib.request
from typing import Any, Awaitable, Callable, Dict, List, Optional

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "clients", "python"))

import toold  # noqa: E402

Complete = Callable[[Dict[str, Any]], Awaitable[Dict[str, Any]]]

SYSTEM = (
    "You are a coding agent working in a repository through tools. "
    "Use the tools to find facts; answer briefly when you are done."
)


def http_provider(base_url: str, api_key: str, record: Optional[str] = None) -> Complete:
    """POSTs to {base_url}/chat/completions; returns the decoded response."""
    turn = 0

    def post(body: Dict[str, Any]) -> Dict[str, Any]:
        req = urllib.request.Request(
            base_url.rstrip("/") + "/chat/completions",
            data=json.dumps(body).encode(),
            headers={"Authorization": f"Bearer {api_key}", "Content-Type": "application/json"},
        )
        with urllib.request.urlopen(req, timeout=300) as resp:
            return json.load(resp)

    async def complete(body: Dict[str, Any]) -> Dict[str, Any]:
        nonlocal turn
        turn += 1
        resp = await asyncio.to_thread(post, body)
        if record:
            os.makedirs(record, exist_ok=True)
            with open(os.path.join(record, f"turn-{turn}.json"), "w") as f:
                json.dump(resp, f, indent=2)
        return resp

    return complete


class ReplayProvider:
    """Answers turn N with DIR/turn-N.json, the provider's exact response body.

    ``requests`` keeps every request body it was given, so a test can check
    what the loop sent back to the model.
    """

    def __init__(self, directory: str) -> None:
        self.directory = directory
        self.requests: List[Dict[str, Any]] = []

    async def __call__(self, body: Dict[str, Any]) -> Dict[str, Any]:
        self.requests.append(json.loads(json.dumps(body)))
        path = os.path.join(self.directory, f"turn-{len(self.requests)}.json")
        if not os.path.exists(path):
            raise RuntimeError(f"the recorded conversation has no {os.path.basename(path)}")
        with open(path) as f:
            return json.load(f)


def command_approver(allowed: List[str]):
    """An approval handler: asks on a terminal, else approves allowlisted commands once."""

    def on_approval(req: toold.ApprovalRequest):
        what = req.command or req.summary
        if sys.stdin.isatty():
            print(f"\napproval needed ({req.risk.lower()} risk): {what}\n  reason: {req.reason}", file=sys.stderr)
            answer = input("[y] once  [n] deny > ").strip().lower()
            return True if answer == "y" else toold.Decision.deny("the user said no")
        words = shlex.split(req.command) if req.command else []
        if words and words[0] in allowed:
            return True
        return toold.Decision.deny(f"not approved: only {', '.join(allowed) or 'no'} commands run unattended")

    return on_approval


async def run_agent(
    client: toold.Client,
    task: str,
    complete: Complete,
    *,
    model: str = "gpt-4.1",
    on_approval=None,
    max_turns: int = 12,
    trace: Optional[List[Dict[str, Any]]] = None,
) -> str:
    """Runs the loop until the model answers in text; returns the answer.

    ``trace``, when given, receives one entry per tool call: turn, id, name,
    the Result, and the monotonic start and end of the call.
    """
    tools = (await client.list_tools(format="openai")).rendered
    messages: List[Dict[str, Any]] = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": task},
    ]
    async with client.session(on_approval=on_approval) as session:
        for turn in range(1, max_turns + 1):
            resp = await complete({"model": model, "messages": messages, "tools": tools})
            msg = resp["choices"][0]["message"]
            messages.append({k: v for k, v in msg.items() if v is not None})
            calls = msg.get("tool_calls") or []
            if not calls:
                return msg.get("content") or ""

            async def run(tc):
                start = time.monotonic()
                # The model's argument text goes to toold verbatim; toold
                # coerces and validates it against the schema.
                r = await session.call(tc["function"]["name"], tc["function"]["arguments"], call_id=tc["id"])
                if trace is not None:
                    trace.append({"turn": turn, "id": tc["id"], "name": tc["function"]["name"], "result": r,
                                  "start": start, "end": time.monotonic()})
                return r

            results = await asyncio.gather(*(run(tc) for tc in calls))
            for tc, r in zip(calls, results):
                messages.append({"role": "tool", "tool_call_id": tc["id"], "content": r.text})
    raise RuntimeError(f"no answer after {max_turns} turns")


async def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("task")
    ap.add_argument("--socket", help="toold's unix socket (default $TOOLD_SOCKET or ./toold.sock)")
    ap.add_argument("--address", help="toold's TCP address host:port")
    ap.add_argument("--token", help="bearer token (default $TOOLD_TOKEN)")
    ap.add_argument("--model", default=os.environ.get("OPENAI_MODEL", "gpt-4.1"))
    ap.add_argument("--replay", metavar="DIR", help="read responses from DIR/turn-N.json instead of the API")
    ap.add_argument("--record", metavar="DIR", help="save live responses to DIR/turn-N.json")
    ap.add_argument("--allow-commands", default="", help="comma-separated commands approved without a terminal")
    a = ap.parse_args()
    if a.replay:
        complete: Complete = ReplayProvider(a.replay)
    else:
        key = os.environ.get("OPENAI_API_KEY")
        if not key:
            print("set OPENAI_API_KEY (and OPENAI_BASE_URL for another endpoint), or use --replay DIR", file=sys.stderr)
            return 2
        complete = http_provider(os.environ.get("OPENAI_BASE_URL", "https://api.openai.com/v1"), key, a.record)
    allowed = [c for c in a.allow_commands.split(",") if c]
    async with toold.Client(socket=a.socket, address=a.address, token=a.token) as client:
        answer = await run_agent(client, a.task, complete, model=a.model, on_approval=command_approver(allowed))
    print(answer)
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
