// Nothing of a client outlives close(): its stream, its connection, the
// commands its calls started. (A file of its own: no other client's sockets
// in this process.)
import assert from "node:assert/strict";
import * as path from "node:path";
import { test } from "node:test";
import { connect } from "../src/index.js";
import { hostPid, openSockets, pidAlive, readText, sleepArg, Toold, waitFor } from "../src/testing.js";

test("close() releases the stream, the connection and running commands", async () => {
  const d = await Toold.start({ mode: "yolo" });
  try {
    const before = openSockets();
    const client = connect({ socket: d.socket });
    const s = client.session();
    const arg = sleepArg();
    const running = s.call("run_command", { command: `echo started > pid.txt; exec sleep ${arg}` });
    const pidFile = path.join(d.workspace, "pid.txt");
    await waitFor(() => readText(pidFile).trim() !== "", "the command to start");
    let pid = 0;
    await waitFor(() => (pid = hostPid(arg)) > 0, "the command's process");
    await Promise.all(Array.from({ length: 5 }, () => s.call("think", { thought: "x" })));
    await client.listTools();
    assert.equal(openSockets(), before + 1, "one connection for the stream and ListTools");
    await client.close();
    assert.equal((await running).error?.code, "CANCELED"); // close() canceled it; toold ended it
    await waitFor(() => openSockets() === before, "the connection to close");
    await waitFor(() => !pidAlive(pid), "the command of a call still running at close() to be stopped");
  } finally {
    await d.stop();
  }
});
