// The TypeScript client's changes() and rewind() against a real toold.
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { after, before, describe, test } from "node:test";
import { connect, TooldError } from "../src/index.js";
import { Toold } from "../src/testing.js";

describe("checkpoints (YOLO mode)", () => {
  let d: Toold;
  before(async () => {
    d = await Toold.start({ mode: "yolo" });
  });
  after(async () => {
    await d.stop();
  });

  test("changes and rewind of edits and a command", async () => {
    const file = path.join(d.workspace, "app.ts");
    fs.writeFileSync(file, "const a = 1;\n");
    const client = connect({ socket: d.socket });
    const s = client.session();
    let r = await s.call("edit_file", { path: "app.ts", old_string: "= 1", new_string: "= 2" }, { callId: "e1" });
    assert.ok(r.success, r.text);
    r = await s.call("run_command", { command: "mkdir -p dist && echo built > dist/app.js && rm app.ts" }, { callId: "c2" });
    assert.ok(r.success, r.text);
    const calls = await s.changes(undefined, { diff: true });
    assert.deepEqual(calls.map((c) => c.callId), ["e1", "c2"]);
    assert.match(calls[0].changes[0].diff, /\+const a = 2;/);
    assert.deepEqual(calls[1].changes.map((c) => c.path), ["app.ts", "dist", "dist/app.js"]);
    const dry = await s.rewind("e1", { dryRun: true });
    assert.equal(dry.applied, false);
    assert.ok(!fs.existsSync(file));
    const done = await s.rewind("e1");
    assert.equal(done.conflicts, 0);
    assert.deepEqual(done.undoneCallIds, ["c2", "e1"]);
    assert.equal(fs.readFileSync(file, "utf8"), "const a = 1;\n");
    assert.ok(!fs.existsSync(path.join(d.workspace, "dist")));
    await assert.rejects(s.rewind("e1"), TooldError);
    await client.close();
  });

  test("a person's change is a conflict, left alone", async () => {
    const client = connect({ socket: d.socket });
    const s = client.session();
    assert.ok((await s.call("write_file", { path: "mine.txt", content: "agent" }, { callId: "w1" })).success);
    fs.writeFileSync(path.join(d.workspace, "mine.txt"), "person");
    const rep = await s.rewind("w1");
    assert.equal(rep.conflicts, 1);
    assert.ok(rep.actions[0].conflict);
    assert.equal(fs.readFileSync(path.join(d.workspace, "mine.txt"), "utf8"), "person");
    await client.close();
  });
});
