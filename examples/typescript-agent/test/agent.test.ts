// The example agent's loop against a real toold, replaying a recorded
// Anthropic conversation through the SDK's fetch option.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import { test } from "node:test";
import Anthropic from "@anthropic-ai/sdk";
import { connect, type ApprovalRequest, type ConnectOptions } from "@toold/client";
import { Toold } from "@toold/client/testing";
import { commandApprover, replayFetch, runAgent, type TraceEntry } from "../src/agent.js";

const here = path.dirname(fileURLToPath(import.meta.url)); // dist/test
const root = path.resolve(here, "..", "..");
const replayDir = path.join(root, "replay");
const TASK = "How many lines has notes.txt? Then clean up.";

function seed(ws: string) {
  fs.writeFileSync(path.join(ws, "notes.txt"), "alpha\nbeta\ngamma\n");
  fs.mkdirSync(path.join(ws, "docs"));
  fs.writeFileSync(path.join(ws, "docs", "todo.txt"), "write the agent\n");
}

async function replay(d: Toold, conn: ConnectOptions) {
  const fetchFn = replayFetch(replayDir);
  const anthropic = new Anthropic({ apiKey: "replay", fetch: fetchFn, maxRetries: 0 });
  const asked: ApprovalRequest[] = [];
  const approver = commandApprover(["wc", "ls"]);
  const trace: TraceEntry[] = [];
  const client = connect(conn);
  const answer = await runAgent(client, anthropic, TASK, { onApproval: (r) => (asked.push(r), approver(r)), trace });
  const rendered = (await client.listTools({ format: "anthropic" })).rendered;
  await client.close();
  const byId = new Map(trace.map((t) => [t.id, t]));
  const res = (id: string) => byId.get(id)!.result;

  assert.match(answer, /^notes\.txt has 3 lines\./);
  assert.equal(fetchFn.requests.length, 4);
  for (const r of fetchFn.requests) assert.deepEqual(r.tools, rendered);
  assert.equal(byId.size, 7);

  const t1 = trace.filter((t) => t.turn === 1);
  assert.equal(t1.length, 3);
  assert.ok(Math.max(...t1.map((t) => t.start)) < Math.min(...t1.map((t) => t.end)), "turn 1's calls did not overlap");
  const read = res("toolu_01AbCdEfGhJkLmNpQrStUvWx");
  assert.ok(read.success, read.text);
  assert.deepEqual(read.coercions.map((c) => [c.field, c.to]), [["/limit", "2"]]);
  assert.match(read.text, /alpha/);
  assert.doesNotMatch(read.text, /gamma/);
  assert.match(res("toolu_01BcDeFgHjKlMnPqRsTuVwXy").text, /docs\/todo\.txt/);

  const wc = res("toolu_01DeFgHjKlMnPqRsTuVwXyZa");
  assert.equal(wc.exitCode, 0);
  assert.match(wc.text, /3 notes\.txt/);
  const curl = res("toolu_01EfGhJkLmNpQrStUvWxYzAb");
  assert.equal(curl.error?.code, "DENIED");
  assert.equal(curl.error?.rule, "builtin:download-into-interpreter");

  const ls = res("toolu_01FgHjKlMnPqRsTuVwXyZaBc");
  assert.ok(ls.success);
  assert.notEqual(ls.exitCode, 0);
  const rm = res("toolu_01GhJkLmNpQrStUvWxYzAbCd");
  assert.equal(rm.error?.code, "REJECTED_BY_USER");
  assert.ok(fs.existsSync(path.join(d.workspace, "notes.txt")));
  // Only the delete asked: wc and ls ran in the sandbox without asking (AUTO).
  assert.deepEqual(asked.filter((r) => r.command).map((r) => r.command).sort(), []);
  assert.equal(asked.length, 1);

  // What went back to the model: tool_result blocks by tool_use_id, errors flagged.
  const last = fetchFn.requests[3].messages;
  const results = last.flatMap((m) => (m.role === "user" && Array.isArray(m.content) ? m.content : [])).filter((b) => b.type === "tool_result") as Anthropic.ToolResultBlockParam[];
  assert.deepEqual(new Set(results.map((b) => b.tool_use_id)), new Set(byId.keys()));
  for (const b of results) {
    const r = res(b.tool_use_id);
    assert.equal(b.content, r.text);
    assert.equal(b.is_error, !r.success);
  }
  assert.deepEqual(last.filter((m) => m.role === "assistant").map((m) => (m.content as Anthropic.ContentBlockParam[]).filter((b) => b.type === "tool_use").length), [3, 2, 2]);
}

test("replayed conversation over the unix socket", async () => {
  const d = await Toold.start({ mode: "auto" });
  try {
    seed(d.workspace);
    await replay(d, { socket: d.socket });
  } finally {
    await d.stop();
  }
});

test("replayed conversation over TCP with a token", async () => {
  const d = await Toold.start({ mode: "auto", tcp: true, token: "agent-token" });
  try {
    seed(d.workspace);
    await replay(d, { address: d.address, token: "agent-token" });
  } finally {
    await d.stop();
  }
});

test("the command line", async () => {
  const d = await Toold.start({ mode: "auto" });
  try {
    seed(d.workspace);
    const env = { ...process.env };
    delete env.ANTHROPIC_API_KEY;
    const agent = path.join(root, "dist", "src", "agent.js");
    let out = spawnSync(process.execPath, [agent, "--socket", d.socket, "--replay", replayDir, "--allow-commands", "wc,ls", TASK], { env, encoding: "utf8", timeout: 120_000, stdio: ["ignore", "pipe", "pipe"] });
    assert.equal(out.status, 0, out.stderr);
    assert.match(out.stdout, /^notes\.txt has 3 lines\./);
    out = spawnSync(process.execPath, [agent, "--socket", d.socket, TASK], { env, encoding: "utf8", timeout: 60_000, stdio: ["ignore", "pipe", "pipe"] });
    assert.equal(out.status, 2);
    assert.match(out.stderr, /ANTHROPIC_API_KEY/);
  } finally {
    await d.stop();
  }
});
