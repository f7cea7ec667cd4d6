"""The example agent's loop against a real toold, replaying a recorded conversation."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "clients", "python", "tests"))

import agent  # noqa: E402
import toold  # noqa: E402
from harness import AsyncTestCase, Toold  # noqa: E402

TASK = "How many lines has notes.txt? Then clean up."


def seed(workspace: str) -> None:
    with open(os.path.join(workspace, "notes.txt"), "w") as f:
        f.write("alpha\nbeta\ngamma\n")
    os.mkdir(os.path.join(workspace, "docs"))
    with open(os.path.join(workspace, "docs", "todo.txt"), "w") as f:
        f.write("write the agent\n")


class ReplayTest(AsyncTestCase):

    async def run_replay(self, **client_kw):
        provider = agent.ReplayProvider(os.path.join(HERE, "replay"))
        asked = []
        approver = agent.command_approver(["wc", "ls"])

        def on_approval(req):
            asked.append(req)
            return approver(req)

        trace = []
        async with toold.Client(**client_kw) as client:
            answer = await agent.run_agent(client, TASK, provider, on_approval=on_approval, trace=trace)
            rendered = (await client.list_tools(format="openai")).rendered
        return answer, provider, asked, trace, rendered

    def check(self, d, answer, provider, asked, trace, rendered):
        self.assertTrue(answer.startswith("notes.txt has 3 lines."), answer)
        self.assertEqual(len(provider.requests), 4)
        # Every turn sent the rendered tools and the whole conversation so far.
        for req in provider.requests:
            self.assertEqual(req["tools"], rendered)
        by_id = {t["id"]: t for t in trace}
        self.assertEqual(len(by_id), 7)

        # Turn 1: three calls at once; "2" for an integer was coerced.
        t1 = [t for t in trace if t["turn"] == 1]
        self.assertEqual(len(t1), 3)
        self.assertLess(max(t["start"] for t in t1), min(t["end"] for t in t1), "turn 1's calls did not overlap")
        read = by_id["call_pQ3s8Vd1XfKc2LwN0bYt7RaE"]["result"]
        self.assertTrue(read.success, read)
        self.assertEqual([(c.field, c.to) for c in read.coercions], [("/limit", "2")])
        self.assertIn("alpha", read.text)
        self.assertNotIn("gamma", read.text)
        glob = by_id["call_Hn6YwT0uJ5mZ9qAe3KsV1cDx"]["result"]
        self.assertIn("docs/todo.txt", glob.text)

        # Turn 2: wc ran unasked (AUTO runs a harmless command in the sandbox); curl | bash denied by policy.
        wc = by_id["call_Wc4TfG1hJ8kL2mN5pQ7rS9tU"]["result"]
        self.assertEqual(wc.exit_code, 0)
        self.assertIn("3 notes.txt", wc.text)
        curl = by_id["call_Cu8VxB3nM6qW1eR4tY7uI0oP"]["result"]
        self.assertEqual(curl.error.code, "DENIED")
        self.assertEqual(curl.error.rule, "builtin:download-into-interpreter")

        # Turn 3: a failing command is a result; the delete was refused by the handler.
        ls = by_id["call_Ls2Dk5Fj8Gh1Jk4Lz7Xc0Vb3"]["result"]
        self.assertTrue(ls.success)
        self.assertNotEqual(ls.exit_code, 0)
        self.assertIn("missing-dir", ls.text)
        rm = by_id["call_Dp9Qw2Er5Ty8Ui1Op4As7Df0"]["result"]
        self.assertEqual(rm.error.code, "REJECTED_BY_USER")
        self.assertTrue(os.path.exists(os.path.join(d.workspace, "notes.txt")))
        # Only the delete asked: wc and ls ran in the sandbox without asking.
        self.assertEqual(sorted(r.command for r in asked if r.command), [])
        self.assertEqual([r.name for r in asked if not r.command], ["file_operations"])
        self.assertEqual(len(asked), 1)

        # What went back to the model: one role=tool message per call, by id, with the result text.
        last = provider.requests[-1]["messages"]
        tool_msgs = {m["tool_call_id"]: m["content"] for m in last if m["role"] == "tool"}
        self.assertEqual(set(tool_msgs), set(by_id))
        for cid, t in by_id.items():
            self.assertEqual(tool_msgs[cid], t["result"].text)
        self.assertIn("download", tool_msgs["call_Cu8VxB3nM6qW1eR4tY7uI0oP"])
        assistants = [m for m in last if m["role"] == "assistant"]
        self.assertEqual([len(m["tool_calls"]) for m in assistants], [3, 2, 2])

    async def test_unix_socket(self):
        d = Toold(mode="auto")
        self.addCleanup(d.stop)
        seed(d.workspace)
        self.check(d, *await self.run_replay(socket=d.socket))

    async def test_tcp_with_token(self):
        d = Toold(mode="auto", tcp=True, token="agent-token")
        self.addCleanup(d.stop)
        seed(d.workspace)
        self.check(d, *await self.run_replay(address=d.address, token="agent-token"))

    def test_command_line(self):
        d = Toold(mode="auto")
        self.addCleanup(d.stop)
        seed(d.workspace)
        env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
        out = subprocess.run(
            [sys.executable, os.path.join(HERE, "agent.py"), TASK, "--socket", d.socket,
             "--replay", os.path.join(HERE, "replay"), "--allow-commands", "wc,ls"],
            stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120, env=env,
        )
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertTrue(out.stdout.startswith("notes.txt has 3 lines."), out.stdout)
        # Without a key and without --replay it says what to set.
        out = subprocess.run([sys.executable, os.path.join(HERE, "agent.py"), TASK, "--socket", d.socket],
                             stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60, env=env)
        self.assertEqual(out.returncode, 2)
        self.assertIn("OPENAI_API_KEY", out.stderr)


if __name__ == "__main__":
    unittest.main()
