"""Client.parse_tool_calls and Client.tool_prompt against a real toold."""

from __future__ import annotations

import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import toold  # noqa: E402
from harness import AsyncTestCase, Toold  # noqa: E402


class TextCallsTest(AsyncTestCase):
    @classmethod
    def setUpClass(cls):
        cls.d = Toold(mode="auto")

    @classmethod
    def tearDownClass(cls):
        cls.d.stop()

    async def asyncSetUp(self):
        self.client = toold.Client(socket=self.d.socket)

    async def asyncTearDown(self):
        await self.client.close()

    async def test_parse_formats(self):
        cases = [
            ("hermes", 'Reading.\n<tool_call>\n{"name": "read_file", "arguments": {"path": "a.txt", "limit": "3"}}\n</tool_call>',
             "read_file", {"path": "a.txt", "limit": 3}, "Reading."),
            ("llama3", '<|python_tag|>{"name": "functions.list_dir", "parameters": {"path": "."}}<|eom_id|>',
             "list_dir", {"path": "."}, ""),
            ("mistral", '[TOOL_CALLS] [{"name": "glob", "arguments": {"pattern": "*.go"}}]</s>',
             "glob", {"pattern": "*.go"}, ""),
            ("tool_code", '```tool_code\nread_file(path="a.txt")\n```', "read_file", {"path": "a.txt"}, ""),
            ("legacy", "TOOL_CALL: read_file(path=a.txt)", "read_file", {"path": "a.txt"}, ""),
        ]
        for fmt, text, op, args, rest in cases:
            for hint in (None, fmt):
                with self.subTest(fmt=fmt, hint=hint):
                    p = await self.client.parse_tool_calls(text, hint)
                    self.assertEqual(p.format, fmt)
                    self.assertEqual(len(p.calls), 1)
                    c = p.calls[0]
                    self.assertTrue(c.ok, c.error)
                    self.assertEqual((c.tool, c.operation), ("file_operations", op))
                    self.assertEqual(c.arguments, args)
                    self.assertEqual(p.text, rest)
                    self.assertEqual(text[c.start:c.end], c.raw)

    async def test_repairs_and_errors_are_reported(self):
        p = await self.client.parse_tool_calls('<tool_call>{"name": "functions.read_file", "arguments": {"path": "a", "limit": "5"}}</tool_call>')
        fields = [c.field for c in p.calls[0].coercions]
        self.assertIn("name", fields)
        self.assertIn("/limit", fields)
        p = await self.client.parse_tool_calls('[TOOL_CALLS] [{"name": "file_operations.raed_file", "arguments": {}}]')
        c = p.calls[0]
        self.assertFalse(c.ok)
        self.assertEqual(c.error.code, "TOOL_NOT_FOUND")
        self.assertIn('did you mean "file_operations.read_file"', c.error.message)
        p = await self.client.parse_tool_calls("No calls here.")
        self.assertEqual((p.calls, p.text, p.format), ([], "No calls here.", ""))
        with self.assertRaises(ValueError):
            await self.client.parse_tool_calls("x", "klingon")

    async def test_stream_reports_repairs(self):
        # The same repairs apply to calls on the stream, reported in the result.
        with open(os.path.join(self.d.workspace, "a.txt"), "w") as f:
            f.write("one\ntwo\n")
        async with self.client.session() as s:
            r = await s.call("functions.read_file", '"{\\"path\\": \\"a.txt\\", \\"limit\\": \\"1\\"}"')
            self.assertTrue(r.success, r.error)
            self.assertIn("one", r.text)
            rules = {c.field: c.rule for c in r.coercions}
            self.assertIn("double-encoded", rules[""])
            self.assertIn('provider prefix "functions." removed', rules["name"])
            self.assertEqual(rules["/limit"], "string to integer")
            r = await s.call("read_file", {"path": "b.txt"})
            self.assertFalse(r.success)
            self.assertIn('did you mean "a.txt"', r.error.message)

    async def test_tool_prompt(self):
        hermes = await self.client.tool_prompt("qwen")
        self.assertIn("<tools>", hermes)
        self.assertIn('"name":"file_operations"', hermes)
        self.assertEqual(hermes, await self.client.tool_prompt("hermes"))
        mistral = await self.client.tool_prompt("mistral", flat=True)
        self.assertTrue(mistral.startswith("[AVAILABLE_TOOLS] "))
        self.assertIn('"name":"read_file"', mistral)
        with self.assertRaises(ValueError):
            await self.client.tool_prompt("auto")


if __name__ == "__main__":
    unittest.main()
