"""The Python client's changes() and rewind() against a real toold."""

from __future__ import annotations

import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import toold  # noqa: E402
from harness import AsyncTestCase, Toold  # noqa: E402


def tree(root):
    """Every entry under root: path, mode and content (or link target)."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = os.path.join(dirpath, name)
            st = os.lstat(p)
            if os.path.islink(p):
                body = "-> " + os.readlink(p)
            elif os.path.isfile(p):
                with open(p, "rb") as f:
                    body = f.read()
            else:
                body = None
            out[os.path.relpath(p, root)] = (st.st_mode, body)
    return out


class RewindTest(AsyncTestCase):
    """A conversation's edits and commands, shown and rewound."""

    @classmethod
    def setUpClass(cls):
        cls.d = Toold(mode="yolo")

    @classmethod
    def tearDownClass(cls):
        cls.d.stop()

    async def asyncSetUp(self):
        self.client = toold.Client(socket=self.d.socket)

    async def asyncTearDown(self):
        await self.client.close()

    async def test_changes_and_rewind(self):
        with open(os.path.join(self.d.workspace, "app.py"), "w") as f:
            f.write("print('hi')\n")
        before = tree(self.d.workspace)
        async with self.client.session() as s:
            r = await s.call("edit_file", {"path": "app.py", "old_string": "hi", "new_string": "hello"}, call_id="e1")
            self.assertTrue(r.success, r)
            r = await s.call("run_command", {"command": "mkdir -p out/x && echo data > out/x/d.txt && chmod 600 app.py"}, call_id="c2")
            self.assertTrue(r.success, r)
            calls = await s.changes(diff=True)
            self.assertEqual([c.call_id for c in calls], ["e1", "c2"])
            self.assertIn("+print('hello')", calls[0].changes[0].diff)
            self.assertIn("out/x/d.txt", [ch.path for ch in calls[1].changes])
            dry = await s.rewind("e1", dry_run=True)
            self.assertFalse(dry.applied)
            self.assertEqual(list(dry.undone_call_ids), ["c2", "e1"])
            self.assertNotEqual(tree(self.d.workspace), before)
            done = await s.rewind("e1")
            self.assertEqual(done.conflicts, 0, done)
            self.assertEqual(tree(self.d.workspace), before)
            with self.assertRaises(toold.TooldError):
                await s.rewind("e1")

    async def test_conflict_left_alone(self):
        async with self.client.session() as s:
            r = await s.call("write_file", {"path": "mine.txt", "content": "agent"}, call_id="w1")
            self.assertTrue(r.success, r)
            with open(os.path.join(self.d.workspace, "mine.txt"), "w") as f:
                f.write("person")
            rep = await s.rewind("w1")
            self.assertEqual(rep.conflicts, 1)
            self.assertTrue(rep.actions[0].conflict)
            with open(os.path.join(self.d.workspace, "mine.txt")) as f:
                self.assertEqual(f.read(), "person")


if __name__ == "__main__":
    unittest.main()
