// Client.parseToolCalls and Client.toolPrompt against a real toold.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { connect, StreamError } from "../src/index.js";
import { Toold } from "../src/testing.js";

describe("text tool calls", () => {
  let d: Toold;
  before(async () => {
    d = await Toold.start({ mode: "auto" });
  });
  after(async () => {
    await d.stop();
  });

  test("parseToolCalls reads every format, with and without a hint", async () => {
    const client = connect({ socket: d.socket });
    const cases = [
      ["hermes", 'Reading.\n<tool_call>\n{"name": "read_file", "arguments": {"path": "a.txt", "limit": "3"}}\n</tool_call>', "read_file", { path: "a.txt", limit: 3 }, "Reading."],
      ["llama3", '<|python_tag|>{"name": "functions.list_dir", "parameters": {"path": "."}}<|eom_id|>', "list_dir", { path: "." }, ""],
      ["mistral", '[TOOL_CALLS]glob[ARGS]{"pattern": "*.go"}', "glob", { pattern: "*.go" }, ""],
      ["deepseek", '<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>read_file<｜tool▁sep｜>{"path": "a.txt"}<｜tool▁call▁end｜><｜tool▁calls▁end｜>', "read_file", { path: "a.txt" }, ""],
      ["json", '```json\n{"name": "read_file", "arguments": {"path": "a.txt"}}\n```', "read_file", { path: "a.txt" }, ""],
    ] as const;
    for (const [format, text, op, args, rest] of cases) {
      for (const hint of [undefined, format]) {
        const p = await client.parseToolCalls(text, { format: hint });
        assert.equal(p.format, format);
        assert.equal(p.calls.length, 1, format);
        const c = p.calls[0];
        assert.equal(c.error, undefined, c.error?.message);
        assert.deepEqual([c.tool, c.operation], ["file_operations", op]);
        assert.deepEqual(c.args, args);
        assert.equal(p.text, rest);
        assert.equal(Buffer.from(text).subarray(c.start, c.end).toString(), c.raw);
      }
    }
    await client.close();
  });

  test("repairs and errors are reported", async () => {
    const client = connect({ socket: d.socket });
    let p = await client.parseToolCalls('<tool_call>{"name": "functions.read_file", "arguments": {"path": "a", "limit": "5"}}</tool_call>');
    const fields = p.calls[0].coercions.map((c) => c.field);
    assert.ok(fields.includes("name") && fields.includes("/limit"), JSON.stringify(fields));
    p = await client.parseToolCalls('[TOOL_CALLS] [{"name": "file_operations.raed_file", "arguments": {}}]');
    assert.equal(p.calls[0].error?.code, "TOOL_NOT_FOUND");
    assert.match(p.calls[0].error?.message ?? "", /did you mean "file_operations.read_file"/);
    p = await client.parseToolCalls("No calls here.");
    assert.deepEqual([p.calls, p.text, p.format], [[], "No calls here.", ""]);
    await assert.rejects(client.parseToolCalls("x", { format: "klingon" as never }), TypeError);
    await client.close();
  });

  test("toolPrompt", async () => {
    const client = connect({ socket: d.socket });
    const hermes = await client.toolPrompt("qwen");
    assert.match(hermes, /<tools>/);
    assert.ok(hermes.includes('"name":"file_operations"'));
    assert.equal(hermes, await client.toolPrompt("hermes"));
    const llama = await client.toolPrompt("llama3", { flat: true });
    assert.ok(llama.includes('"name":"read_file"'));
    await assert.rejects(client.toolPrompt("auto"), TypeError);
    await client.close();
    const gone = connect({ socket: d.socket + ".missing" });
    await assert.rejects(gone.toolPrompt("hermes"), StreamError);
    await gone.close();
  });
});
