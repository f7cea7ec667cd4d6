// The TypeScript client against a real toold on a temp socket (and TCP with a token).
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { after, before, describe, test } from "node:test";
import {
  connect,
  DeniedError,
  ExecutionFailedError,
  InvalidArgumentsError,
  StreamError,
  ToolCallError,
  ToolNotFoundError,
  type ApprovalRequest,
  type Decision,
} from "../src/index.js";
import { hostPid, killIfAlive, pidAlive, readText, sleepArg, Toold, waitFor } from "../src/testing.js";

describe("client on a unix socket (AUTO mode)", () => {
  let d: Toold;
  before(async () => {
    d = await Toold.start({ mode: "auto" });
  });
  after(async () => {
    await d.stop();
  });

  test("listTools, every format", async () => {
    const client = connect({ socket: d.socket });
    const tl = await client.listTools();
    assert.ok(tl.names.includes("think"));
    assert.ok(tl.names.includes("file_operations"));
    assert.deepEqual(tl.rendered, []);
    for (const [format, key] of [["openai", "function"], ["anthropic", "input_schema"], ["gemini", "parametersJsonSchema"], ["mcp", "inputSchema"]] as const) {
      const r = (await client.listTools({ format })).rendered;
      assert.equal(r.length, tl.tools.length, format);
      assert.ok(key in r[0], format);
    }
    await assert.rejects(client.listTools({ format: "cohere" as never }), TypeError);
    await client.close();
  });

  test("dialect: another agent's tools, run by toold's", async () => {
    const client = connect({ socket: d.socket });
    const tl = await client.listTools({ dialect: "claude-code", format: "anthropic" });
    assert.equal(tl.dialect, "claude-code");
    assert.match(tl.dialectVersion, /claude-code/);
    assert.ok(tl.names.includes("Bash") && tl.names.includes("Read"));
    assert.ok(tl.unavailable.some((u) => u.name === "Agent"));
    assert.match(tl.renderedJson, /file_path/);
    fs.writeFileSync(path.join(d.workspace, "claude-ts.txt"), "one\ntwo\n");
    const s = client.session({ dialect: "claude-code", onApproval: () => true });
    let r = await s.call("Read", { file_path: path.join(d.workspace, "claude-ts.txt"), offset: 2 });
    assert.ok(r.success, r.text);
    assert.match(r.text, /^2\ttwo/);
    r = await s.call("Bash", { command: "echo hi; exit 3", description: "Say hi", timeout: 60000 });
    assert.equal(r.text, "Exit code 3\nhi");
    const c = client.session({ dialect: "codex", onApproval: () => true });
    r = await c.call("shell", { command: ["bash", "-lc", "echo cx"], timeout_ms: 10000 });
    assert.equal(JSON.parse(r.text).output, "cx\n");
    await assert.rejects(client.listTools({ dialect: "cursor" }), StreamError);
    await client.close();
  });

  test("call and the Welcome", async () => {
    const client = connect({ socket: d.socket });
    const s = client.session({ conversationId: "ts-conv-1" });
    const w = await s.open();
    assert.equal(w.conversationId, "ts-conv-1");
    assert.equal(s.conversationId, "ts-conv-1");
    assert.equal(s.approvalMode, "AUTO");
    assert.equal(fs.realpathSync(s.workspace), fs.realpathSync(d.workspace));
    const r = await s.call("think", { thought: "plan: read the Makefile" });
    assert.ok(r.success, r.text);
    assert.match(r.text, /plan: read the Makefile/);
    assert.equal(r.error, undefined);
    assert.equal(r.exitCode, undefined);
    await client.close();
  });

  test("watch: changes under a directory, ignored files left out, outside refused", async () => {
    fs.mkdirSync(path.join(d.workspace, "watched-ts"), { recursive: true });
    fs.writeFileSync(path.join(d.workspace, ".gitignore"), "*.tmp\n");
    const client = connect({ socket: d.socket });
    const s = client.session();
    const it = s.watch("watched-ts", { coalesceMs: 20 });
    const first = await it.next();
    assert.ok(!first.done && first.value.started && first.value.path === "watched-ts", JSON.stringify(first.value));
    fs.writeFileSync(path.join(d.workspace, "watched-ts", "scratch.tmp"), "x");
    fs.writeFileSync(path.join(d.workspace, "watched-ts", "new.txt"), "x");
    const seen: { path: string; kind: string }[] = [];
    while (!seen.some((c) => c.path === "watched-ts/new.txt" && c.kind === "created")) {
      const n = await it.next();
      assert.ok(!n.done, "the watch ended");
      seen.push(...n.value.changes);
    }
    assert.ok(!seen.some((c) => c.path.endsWith(".tmp")), JSON.stringify(seen));
    await it.return(undefined);
    await assert.rejects(
      (async () => {
        for await (const _ of s.watch("/etc")) void _;
      })(),
      (e: unknown) => e instanceof StreamError && /PERMISSION_DENIED/.test(e.message),
    );
    await client.close();
  });

  test("coercion", async () => {
    fs.writeFileSync(path.join(d.workspace, "lines.txt"), Array.from({ length: 10 }, (_, i) => `line ${i + 1}\n`).join(""));
    const client = connect({ socket: d.socket });
    const r = await client.session().call("read_file", '{"path": "lines.txt", "limit": "3"}');
    assert.ok(r.success, r.text);
    assert.match(r.text, /line 3/);
    assert.doesNotMatch(r.text, /line 4\n/);
    assert.deepEqual(r.coercions.map((c) => [c.field, c.from, c.to]), [["/limit", '"3"', "3"]]);
    await client.close();
  });

  test("errors: a result, and one class per family", async () => {
    const client = connect({ socket: d.socket });
    const s = client.session();
    const r = await s.call("raed_file", { path: "x" });
    assert.equal(r.success, false);
    assert.equal(r.error?.code, "TOOL_NOT_FOUND");
    assert.ok(r.error?.suggestions.includes("read_file"));
    assert.match(r.text, /read_file/);
    assert.throws(() => r.raiseForError(), (e: unknown) => e instanceof ToolNotFoundError && e.suggestions.includes("read_file"));
    await assert.rejects(s.call("read_file", { path: "x", limit: "many" }, { check: true }), (e: unknown) => e instanceof InvalidArgumentsError && e.field === "/limit");
    await assert.rejects(s.call("read_file", { path: "missing.txt" }, { check: true }), ExecutionFailedError);
    await assert.rejects(s.call("nope", undefined, { check: true }), ToolCallError);
    await client.close();
  });

  test("approve once, then deny, through the callback", async () => {
    const seen: ApprovalRequest[] = [];
    let answer: boolean | Decision = true;
    const client = connect({ socket: d.socket });
    const s = client.session({ onApproval: (req) => (seen.push(req), answer) });
    const r = await s.call("write_file", { path: "approved.txt", content: "yes\n" });
    assert.ok(r.success, r.text);
    assert.equal(seen.length, 1);
    assert.equal(seen[0].name, "write_file");
    assert.equal(seen[0].risk, "MEDIUM");
    assert.ok(seen[0].writes.some((w) => w.endsWith("approved.txt")), String(seen[0].writes));
    assert.equal(seen[0].scopes[0].kind, "ONCE");
    assert.equal(fs.readFileSync(path.join(d.workspace, "approved.txt"), "utf8"), "yes\n");
    answer = { approve: false, reason: "not in this demo" };
    const r2 = await s.call("write_file", { path: "denied.txt", content: "no\n" });
    assert.equal(seen.length, 2);
    assert.equal(r2.error?.code, "REJECTED_BY_USER");
    assert.match(r2.error?.message ?? "", /not in this demo/);
    assert.equal(fs.existsSync(path.join(d.workspace, "denied.txt")), false);
    assert.throws(() => r2.raiseForError(), DeniedError);
    // Without a handler every ask is denied.
    const r3 = await client.session().call("write_file", { path: "nohandler.txt", content: "x" });
    assert.equal(r3.error?.code, "REJECTED_BY_USER");
    assert.equal(fs.existsSync(path.join(d.workspace, "nohandler.txt")), false);
    await client.close();
  });

  test("a request to run outside the sandbox is its own kind; denied, nothing runs", async () => {
    const seen: ApprovalRequest[] = [];
    const outside = fs.mkdtempSync(path.join(fs.realpathSync(process.env.TMPDIR ?? "/tmp"), "outside-"));
    const canary = path.join(outside, "canary");
    const client = connect({ socket: d.socket });
    const s = client.session({ onApproval: (req) => (seen.push(req), { approve: false, reason: "not outside" }) });
    const r = await s.call("run_command", { command: `echo x > ${canary}`, outside_sandbox: true, env: { A: "1" } });
    assert.equal(r.error?.code, "REJECTED_BY_USER");
    assert.equal(seen.length, 1);
    assert.equal(seen[0].kind, "OUTSIDE_SANDBOX");
    assert.ok(seen[0].outsideSandbox);
    assert.equal(seen[0].command, `echo x > ${canary}`);
    assert.deepEqual(seen[0].env, { A: "1" });
    assert.deepEqual(seen[0].scopes.map((sc) => sc.kind), ["ONCE"]);
    assert.equal(fs.existsSync(canary), false);
    fs.rmSync(outside, { recursive: true });
    await client.close();
  });

  test("AbortSignal cancels a running command", async () => {
    const client = connect({ socket: d.socket });
    const s = client.session({ onApproval: () => true });
    const ac = new AbortController();
    const arg = sleepArg();
    const pending = s.call("run_command", { command: `echo started > pid.txt; exec sleep ${arg}` }, { signal: ac.signal });
    const pidFile = path.join(d.workspace, "pid.txt");
    await waitFor(() => readText(pidFile).trim() !== "", "the command to start");
    let pid = 0;
    await waitFor(() => (pid = hostPid(arg)) > 0, "the command's process");
    ac.abort();
    await assert.rejects(pending, (e: unknown) => e instanceof Error && e.name === "AbortError");
    await waitFor(() => !pidAlive(pid), "the canceled command to be gone");
    assert.ok((await s.call("think", { thought: "still here" })).success);
    await client.close();
  });

  test("aborting a call while its approval is pending tells the handler", async () => {
    const client = connect({ socket: d.socket });
    let asked!: (req: ApprovalRequest) => void;
    const askedP = new Promise<ApprovalRequest>((r) => (asked = r));
    const s = client.session({ onApproval: (req) => (asked(req), new Promise<boolean>(() => {})) });
    const ac = new AbortController();
    const pending = s.call("write_file", { path: "never.txt", content: "x" }, { signal: ac.signal });
    const req = await askedP;
    assert.equal(req.signal.aborted, false);
    ac.abort();
    await assert.rejects(pending, (e: unknown) => e instanceof Error && e.name === "AbortError");
    assert.equal(req.signal.aborted, true);
    assert.ok((await s.call("think", { thought: "still here" })).success);
    assert.equal(fs.existsSync(path.join(d.workspace, "never.txt")), false);
    await client.close();
  });

  test("leaving events() early cancels the call", async () => {
    const client = connect({ socket: d.socket });
    const s = client.session({ onApproval: () => true });
    const kinds: string[] = [];
    let pid = 0;
    for await (const ev of s.events("run_command", { command: "rm -f stale.txt; echo ready; exec sleep 60" })) {
      kinds.push(ev.kind);
      // The pid toold reports (in toold's pid namespace; $$ inside the
      // sandbox is the sandbox's own).
      if (ev.raw.event.case === "executing") pid = ev.raw.event.value.pid;
      if (ev.output && Buffer.from(ev.output).toString() === "ready\n") break;
    }
    assert.equal(kinds[0], "start");
    assert.ok(kinds.includes("requiresApproval"));
    assert.ok(pid > 0);
    await waitFor(() => !pidAlive(pid), "the abandoned command to be gone");
    await client.close();
  });

  test("20 concurrent calls share one stream", async () => {
    const client = connect({ socket: d.socket });
    const s = client.session();
    const results = await Promise.all(Array.from({ length: 20 }, (_, i) => s.call("think", { thought: `thought ${i}` })));
    results.forEach((r, i) => {
      assert.ok(r.success, r.text);
      assert.ok(r.text.includes(`thought ${i}`), r.text);
    });
    await client.close();
  });

  test("run_command output streams in order", async () => {
    const client = connect({ socket: d.socket });
    const s = client.session({ onApproval: () => true });
    const chunks: Buffer[] = [];
    let size = 0;
    let exitCode: number | undefined;
    for await (const ev of s.events("run_command", { command: "for i in $(seq 1 3000); do echo line $i; done" })) {
      if (ev.stream === "STDOUT" && ev.output) {
        const out = ev.raw.event.case === "progress" ? ev.raw.event.value.output : undefined;
        assert.equal(Number(out?.offset), size);
        chunks.push(Buffer.from(ev.output));
        size += ev.output.length;
      }
      if (ev.kind === "end") exitCode = ev.result?.exitCode;
    }
    const want = Array.from({ length: 3000 }, (_, i) => `line ${i + 1}\n`).join("");
    assert.equal(Buffer.concat(chunks).toString(), want);
    assert.equal(exitCode, 0);
    await client.close();
  });

  test("a failing command is a result with its exit code", async () => {
    const client = connect({ socket: d.socket });
    const r = await client.session({ onApproval: async () => true }).call("run_command", { command: "echo oops >&2; exit 3" });
    assert.ok(r.success, r.text);
    assert.equal(r.exitCode, 3);
    assert.match(r.text, /oops/);
    await client.close();
  });
});

describe("the daemon going away", () => {
  test("a call in flight rejects with StreamError, no hang", async () => {
    const d = await Toold.start({ mode: "yolo" });
    let pid = 0;
    try {
      const client = connect({ socket: d.socket });
      const s = client.session();
      const arg = sleepArg();
      const pending = s.call("run_command", { command: `echo started > pid.txt; exec sleep ${arg}` });
      const pidFile = path.join(d.workspace, "pid.txt");
      await waitFor(() => readText(pidFile).trim() !== "", "the command to start");
      await waitFor(() => (pid = hostPid(arg)) > 0, "the command's process");
      const rejected = assert.rejects(pending, (e: unknown) => e instanceof StreamError && e.code === "UNAVAILABLE");
      await d.kill();
      await rejected;
      await assert.rejects(s.call("think", { thought: "x" }), StreamError);
      await client.close();
    } finally {
      if (pid) killIfAlive(pid);
      await d.stop();
    }
  });
});

describe("TCP with a token", () => {
  let d: Toold;
  before(async () => {
    d = await Toold.start({ tcp: true, token: "s3cret-token" });
  });
  after(async () => {
    await d.stop();
  });

  test("the right token works", async () => {
    const client = connect({ address: d.address, token: "s3cret-token" });
    assert.ok((await client.listTools()).names.includes("think"));
    assert.ok((await client.session().call("think", { thought: "over tcp" })).success);
    await client.close();
  });

  test("a wrong or missing token is UNAUTHENTICATED", async () => {
    for (const token of ["wrong", ""]) {
      const client = connect({ address: d.address, token });
      await assert.rejects(client.listTools(), (e: unknown) => e instanceof StreamError && e.code === "UNAUTHENTICATED");
      await assert.rejects(client.session().call("think", { thought: "x" }), (e: unknown) => e instanceof StreamError && e.code === "UNAUTHENTICATED");
      await client.close();
    }
  });
});
