"""The Python client against a real toold on a temp socket (and TCP with a token)."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import toold  # noqa: E402
from harness import AsyncTestCase, Toold, async_wait_for, host_pid, kill_if_alive, pid_alive, read_text, sleep_arg  # noqa: E402


class ClientTest(AsyncTestCase):
    """Calls on one toold in AUTO mode (writes and commands ask)."""

    @classmethod
    def setUpClass(cls):
        cls.d = Toold(mode="auto")

    @classmethod
    def tearDownClass(cls):
        cls.d.stop()

    async def asyncSetUp(self):
        self.approvals = []
        self.answer = True
        self.client = toold.Client(socket=self.d.socket)

    async def asyncTearDown(self):
        await self.client.close()
        # Nothing of the client outlives close(): no reader, no handler task.
        left = [t for t in asyncio.all_tasks() if t is not asyncio.current_task() and not t.done()]
        self.assertEqual(left, [])

    def on_approval(self, req):
        self.approvals.append(req)
        return self.answer

    async def test_list_tools(self):
        tl = await self.client.list_tools()
        self.assertIn("think", tl.names)
        self.assertIn("file_operations", tl.names)
        self.assertEqual(tl.rendered, [])
        for fmt, key in (("openai", "function"), ("anthropic", "input_schema"), ("gemini", "parametersJsonSchema"), ("mcp", "inputSchema")):
            with self.subTest(fmt=fmt):
                r = (await self.client.list_tools(format=fmt)).rendered
                self.assertEqual(len(r), len(tl.tools))
                self.assertIn(key, r[0])
        with self.assertRaises(ValueError):
            await self.client.list_tools(format="cohere")

    async def test_dialect(self):
        # Claude Code's tools by their names, run by toold's.
        tl = await self.client.list_tools(dialect="claude-code", format="anthropic")
        self.assertEqual(tl.dialect, "claude-code")
        self.assertIn("claude-code", tl.dialect_version)
        self.assertIn("Bash", tl.names)
        self.assertIn("Read", tl.names)
        self.assertIn("Agent", [u.name for u in tl.unavailable])
        self.assertIn("file_path", json.dumps(tl.rendered))
        with open(os.path.join(self.d.workspace, "claude.txt"), "w") as f:
            f.write("one\ntwo\n")
        async with self.client.session(dialect="claude-code", on_approval=self.on_approval) as s:
            r = await s.call("Read", {"file_path": os.path.join(self.d.workspace, "claude.txt"), "offset": 2})
            self.assertTrue(r.success, r)
            self.assertIn("2\ttwo", r.text)
            r = await s.call("Bash", {"command": "echo hi; exit 3", "description": "Say hi", "timeout": 60000})
            self.assertTrue(r.success, r)
            self.assertEqual(r.text, "Exit code 3\nhi")
        async with self.client.session(dialect="codex", on_approval=self.on_approval) as s:
            r = await s.call("shell", {"command": ["bash", "-lc", "echo cx"], "timeout_ms": 10000})
            self.assertEqual(json.loads(r.text)["output"], "cx\n")
        with self.assertRaises(toold.StreamError) as cm:
            await self.client.list_tools(dialect="cursor")
        self.assertIn('unknown dialect "cursor"', str(cm.exception))

    async def test_call_and_welcome(self):
        async with self.client.session(conversation_id="py-conv-1") as s:
            self.assertEqual(s.conversation_id, "py-conv-1")
            self.assertEqual(s.approval_mode, "AUTO")
            self.assertEqual(os.path.realpath(s.workspace), os.path.realpath(self.d.workspace))
            self.assertTrue(s.server_version)
            r = await s.call("think", {"thought": "plan: read the Makefile"})
            self.assertTrue(r.success, r)
            self.assertIn("plan: read the Makefile", r.text)
            self.assertIsNone(r.error)
            self.assertIsNone(r.exit_code)

    async def test_watch(self):
        os.makedirs(os.path.join(self.d.workspace, "watched"), exist_ok=True)
        with open(os.path.join(self.d.workspace, ".gitignore"), "w") as f:
            f.write("*.tmp\n")
        async with self.client.session(on_approval=self.on_approval) as s:
            gen = s.watch("watched", coalesce=0.02)
            first = await asyncio.wait_for(gen.__anext__(), 20)
            self.assertTrue(first.started)
            self.assertEqual(first.path, "watched")
            for name in ("scratch.tmp", "new.txt"):
                with open(os.path.join(self.d.workspace, "watched", name), "w") as f:
                    f.write("x")
            seen = []
            while not any(c.path == "watched/new.txt" and c.kind == "created" for c in seen):
                batch = await asyncio.wait_for(gen.__anext__(), 20)
                seen.extend(batch.changes)
            self.assertFalse(any(c.path.endswith(".tmp") for c in seen), seen)
            await gen.aclose()
            # Outside the workspace: refused.
            with self.assertRaises(toold.StreamError) as cm:
                async for _ in s.watch("/etc"):
                    pass
            self.assertIn("PERMISSION_DENIED", str(cm.exception))

    async def test_coercion(self):
        with open(os.path.join(self.d.workspace, "lines.txt"), "w") as f:
            f.write("".join(f"line {i}\n" for i in range(1, 11)))
        async with self.client.session() as s:
            # The model sent limit as a string; the schema says integer.
            r = await s.call("read_file", '{"path": "lines.txt", "limit": "3"}')
        self.assertTrue(r.success, r)
        self.assertIn("line 3", r.text)
        self.assertNotIn("line 4\n", r.text)
        self.assertEqual([(c.field, c.from_, c.to) for c in r.coercions], [("/limit", '"3"', "3")])

    async def test_errors(self):
        async with self.client.session() as s:
            r = await s.call("raed_file", {"path": "x"})
            self.assertFalse(r.success)
            self.assertEqual(r.error.code, "TOOL_NOT_FOUND")
            self.assertIn("read_file", r.error.suggestions)
            self.assertIn("read_file", r.text)  # the model sees the message
            with self.assertRaises(toold.ToolNotFoundError) as cm:
                r.raise_for_error()
            self.assertIn("read_file", cm.exception.suggestions)
            with self.assertRaises(toold.InvalidArgumentsError) as cm:
                await s.call("read_file", {"path": "x", "limit": "many"}, check=True)
            self.assertEqual(cm.exception.field, "/limit")
            with self.assertRaises(toold.ExecutionFailedError):
                await s.call("read_file", {"path": "missing.txt"}, check=True)
            # Every family is a ToolCallError.
            with self.assertRaises(toold.ToolCallError):
                await s.call("nope", check=True)

    async def test_approve_once_and_deny(self):
        path = os.path.join(self.d.workspace, "approved.txt")
        s = self.client.session(on_approval=self.on_approval)
        r = await s.call("write_file", {"path": "approved.txt", "content": "yes\n"})
        self.assertTrue(r.success, r)
        self.assertEqual(len(self.approvals), 1)
        req = self.approvals[0]
        self.assertEqual(req.name, "write_file")
        self.assertEqual(req.risk, "MEDIUM")
        self.assertTrue(any(w.endswith("approved.txt") for w in req.writes), req.writes)
        self.assertEqual(req.scopes[0].kind, "ONCE")
        with open(path) as f:
            self.assertEqual(f.read(), "yes\n")
        # Once means once: the next write asks again, and this time we deny.
        self.answer = toold.Decision.deny("not in this demo")
        r = await s.call("write_file", {"path": "denied.txt", "content": "no\n"})
        self.assertEqual(len(self.approvals), 2)
        self.assertEqual(r.error.code, "REJECTED_BY_USER")
        self.assertIn("not in this demo", r.error.message)
        self.assertFalse(os.path.exists(os.path.join(self.d.workspace, "denied.txt")))
        with self.assertRaises(toold.DeniedError):
            r.raise_for_error()
        await s.close()

    async def test_outside_sandbox_is_its_own_kind(self):
        # The model asks to run one command outside toold's sandbox: the
        # request is its own kind, shows the exact command, and runs nothing
        # unless approved (here denied; the canary outside the workspace is
        # not written).
        import tempfile

        outside = tempfile.mkdtemp()
        canary = os.path.join(outside, "canary")
        self.answer = toold.Decision.deny("not outside")
        async with self.client.session(on_approval=self.on_approval) as s:
            r = await s.call("run_command", {"command": f"echo x > {canary}", "outside_sandbox": True, "env": {"A": "1"}})
        self.assertEqual(r.error.code, "REJECTED_BY_USER", r)
        req = self.approvals[-1]
        self.assertEqual(req.kind, "OUTSIDE_SANDBOX")
        self.assertTrue(req.outside_sandbox)
        self.assertEqual(req.command, f"echo x > {canary}")
        self.assertEqual(req.env, {"A": "1"})
        self.assertEqual([sc.kind for sc in req.scopes], ["ONCE"])
        self.assertFalse(os.path.exists(canary))
        os.rmdir(outside)

    async def test_no_handler_denies(self):
        async with self.client.session() as s:
            r = await s.call("write_file", {"path": "nohandler.txt", "content": "x"})
        self.assertEqual(r.error.code, "REJECTED_BY_USER")
        self.assertFalse(os.path.exists(os.path.join(self.d.workspace, "nohandler.txt")))

    async def test_async_handler_conversation_scope(self):
        async def approve_for_conversation(req):
            self.approvals.append(req)
            return toold.Decision(True, scope_id=req.scope("CONVERSATION").scope_id)

        async with self.client.session(on_approval=approve_for_conversation) as s:
            for i in range(3):
                r = await s.call("write_file", {"path": f"conv{i}.txt", "content": "x"})
                self.assertTrue(r.success, r)
        self.assertEqual(len(self.approvals), 1)  # the grant covered the next two

    async def test_cancel_mid_command(self):
        async with self.client.session(on_approval=self.on_approval) as s:
            task = asyncio.ensure_future(s.call("run_command", {"command": "echo started > pid.txt; exec sleep " + (arg := sleep_arg())}))
            pidfile = os.path.join(self.d.workspace, "pid.txt")
            await async_wait_for(lambda: read_text(pidfile).strip(), what="the command to start")
            pid = host_pid(arg)
            task.cancel()
            with self.assertRaises(asyncio.CancelledError):
                await task
            await async_wait_for(lambda: not pid_alive(pid), what="the canceled command to be gone")
            # The stream lives on.
            self.assertTrue((await s.call("think", {"thought": "still here"})).success)

    async def test_cancel_while_asking(self):
        asked = asyncio.Event()
        handler_canceled = asyncio.Event()

        async def never_answers(req):
            asked.set()
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                handler_canceled.set()
                raise

        async with self.client.session(on_approval=never_answers) as s:
            task = asyncio.ensure_future(s.call("write_file", {"path": "never.txt", "content": "x"}))
            await asyncio.wait_for(asked.wait(), 10)
            task.cancel()
            with self.assertRaises(asyncio.CancelledError):
                await task
            # The handler is told: its call is gone.
            await asyncio.wait_for(handler_canceled.wait(), 10)
            self.assertTrue((await s.call("think", {"thought": "still here"})).success)
        self.assertFalse(os.path.exists(os.path.join(self.d.workspace, "never.txt")))

    async def test_events_cancel_on_early_exit(self):
        async with self.client.session(on_approval=self.on_approval) as s:
            kinds = []
            pid = 0
            async for ev in s.events("run_command", {"command": "rm -f stale.txt; echo ready; exec sleep 60"}):
                kinds.append(ev.kind)
                if ev.kind == "executing":
                    # The pid toold reports (in toold's pid namespace; $$
                    # inside the sandbox is the sandbox's own).
                    pid = ev.raw.executing.pid
                if ev.output == b"ready\n":
                    break
            self.assertEqual(kinds[0], "start")
            self.assertIn("requires_approval", kinds)
            self.assertGreater(pid, 0)
            await async_wait_for(lambda: not pid_alive(pid), what="the abandoned command to be gone")

    async def test_concurrent_calls_share_one_stream(self):
        async with self.client.session() as s:
            results = await asyncio.gather(*(s.call("think", {"thought": f"thought {i}"}) for i in range(20)))
        for i, r in enumerate(results):
            self.assertTrue(r.success, r)
            self.assertIn(f"thought {i}", r.text)

    async def test_streamed_output_in_order(self):
        async with self.client.session(on_approval=self.on_approval) as s:
            out = bytearray()
            offsets = []
            end = None
            async for ev in s.events("run_command", {"command": "for i in $(seq 1 3000); do echo line $i; done"}):
                if ev.stream == "STDOUT":
                    offsets.append((ev.raw.progress.output.offset, len(out)))
                    out += ev.output
                if ev.kind == "end":
                    end = ev.result
        expected = "".join(f"line {i}\n" for i in range(1, 3001)).encode()
        self.assertEqual(bytes(out), expected)
        self.assertTrue(all(a == b for a, b in offsets), offsets[:5])
        self.assertEqual(end.exit_code, 0)

    async def test_failing_command_is_a_result(self):
        async with self.client.session(on_approval=self.on_approval) as s:
            r = await s.call("run_command", {"command": "echo oops >&2; exit 3"})
        self.assertTrue(r.success, r)
        self.assertEqual(r.exit_code, 3)
        self.assertIn("oops", r.text)


class CloseTest(AsyncTestCase):
    async def test_close_stops_running_calls(self):
        d = Toold(mode="yolo")
        self.addCleanup(d.stop)
        client = toold.Client(socket=d.socket)
        s = client.session()
        pidfile = os.path.join(d.workspace, "pid.txt")
        running = asyncio.ensure_future(s.call("run_command", {"command": "echo started > pid.txt; exec sleep " + (arg := sleep_arg())}))
        await async_wait_for(lambda: read_text(pidfile).strip(), what="the command to start")
        pid = host_pid(arg)
        await asyncio.gather(*(s.call("think", {"thought": "x"}) for _ in range(5)))
        await client.close()
        self.assertEqual((await running).error.code, "CANCELED")  # close() canceled it; toold ended it
        await async_wait_for(lambda: not pid_alive(pid), what="the command of a call running at close() to be stopped")
        with self.assertRaises(toold.TooldError):
            await s.call("think", {"thought": "after close"})


class DaemonGoneTest(AsyncTestCase):
    async def test_daemon_killed_mid_call(self):
        d = Toold(mode="yolo")
        self.addCleanup(d.stop)
        client = toold.Client(socket=d.socket)
        s = client.session()
        task = asyncio.ensure_future(s.call("run_command", {"command": "echo started > pid.txt; exec sleep " + (arg := sleep_arg())}))
        pidfile = os.path.join(d.workspace, "pid.txt")
        await async_wait_for(lambda: read_text(pidfile).strip(), what="the command to start")
        pid = host_pid(arg)
        self.addCleanup(kill_if_alive, pid)
        d.kill()
        with self.assertRaises(toold.StreamError) as cm:
            await asyncio.wait_for(task, 15)
        self.assertEqual(cm.exception.code, "UNAVAILABLE")
        # The session stays failed with the same clear error; nothing hangs.
        with self.assertRaises(toold.StreamError):
            await asyncio.wait_for(s.call("think", {"thought": "x"}), 15)
        await asyncio.wait_for(client.close(), 15)


class TCPTokenTest(AsyncTestCase):
    @classmethod
    def setUpClass(cls):
        cls.d = Toold(mode="auto", tcp=True, token="s3cret-token")

    @classmethod
    def tearDownClass(cls):
        cls.d.stop()

    async def test_token(self):
        async with toold.Client(address=self.d.address, token="s3cret-token") as c:
            self.assertIn("think", (await c.list_tools()).names)
            async with c.session() as s:
                r = await s.call("think", {"thought": "over tcp"})
                self.assertTrue(r.success, r)

    async def test_token_from_env(self):
        os.environ["TOOLD_TOKEN"] = "s3cret-token"
        self.addCleanup(os.environ.pop, "TOOLD_TOKEN")
        async with toold.Client(address=self.d.address) as c:
            self.assertTrue((await c.session().call("think", {"thought": "env"})).success)

    async def test_bad_token(self):
        for token in ("wrong", ""):
            with self.subTest(token=token):
                async with toold.Client(address=self.d.address, token=token) as c:
                    with self.assertRaises(toold.StreamError) as cm:
                        await c.list_tools()
                    self.assertEqual(cm.exception.code, "UNAUTHENTICATED")
                    with self.assertRaises(toold.StreamError) as cm:
                        await asyncio.wait_for(c.session().call("think", {"thought": "x"}), 15)
                    self.assertEqual(cm.exception.code, "UNAUTHENTICATED")


if __name__ == "__main__":
    unittest.main()
