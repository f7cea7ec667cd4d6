// An agent loop: the Anthropic Messages API for the model, toold for the tools.
//
//   node dist/src/agent.js "How many lines has notes.txt?"
//
// renders toold's tools with ListTools(format=ANTHROPIC), sends them with the
// conversation to the Messages API ($ANTHROPIC_API_KEY, $ANTHROPIC_BASE_URL,
// $ANTHROPIC_MODEL), runs every tool_use block of the answer through toold
// (concurrently), answers with one user message of tool_result blocks, and
// loops until the model stops asking for tools.
//
// --replay DIR answers turn N with DIR/turn-N.json (the provider's response
// body) through the SDK's fetch option, in place of the HTTP call: the SDK,
// the loop, the rendering and the result mapping all run (CI does this).
// --record DIR saves live responses in that layout. Approvals: on a terminal
// you are asked; otherwise commands whose first word is in --allow-commands
// are approved once and everything else is denied with a reason.

import * as fs from "node:fs";
import * as path from "node:path";
import * as readline from "node:readline/promises";
import { parseArgs } from "node:util";
import Anthropic from "@anthropic-ai/sdk";
import { connect, type ApprovalRequest, type Client, type Decision, type Result } from "@toold/client";

const SYSTEM = "You are a coding agent working in a repository through tools. Use the tools to find facts; answer briefly when you are done.";

type Fetch = typeof fetch;

/** A fetch that answers the n-th request with dir/turn-n.json and keeps the request bodies. */
export function replayFetch(dir: string): Fetch & { requests: Anthropic.MessageCreateParams[] } {
  const requests: Anthropic.MessageCreateParams[] = [];
  const f = async (_url: string | URL | Request, init?: RequestInit) => {
    requests.push(JSON.parse(String(init?.body)));
    const file = path.join(dir, `turn-${requests.length}.json`);
    if (!fs.existsSync(file)) throw new Error(`the recorded conversation has no ${path.basename(file)}`);
    return new Response(fs.readFileSync(file), {
      status: 200,
      headers: { "content-type": "application/json", "request-id": `req_replay_${requests.length}` },
    });
  };
  return Object.assign(f, { requests });
}

/** A fetch that saves every response body to dir/turn-n.json. */
export function recordingFetch(dir: string): Fetch {
  let n = 0;
  return async (url, init) => {
    const resp = await fetch(url, init);
    const body = await resp.text();
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(path.join(dir, `turn-${++n}.json`), body);
    return new Response(body, { status: resp.status, headers: resp.headers });
  };
}

/** Asks on a terminal; otherwise approves allowlisted commands once and denies the rest. */
export function commandApprover(allowed: string[]) {
  return async (req: ApprovalRequest): Promise<boolean | Decision> => {
    if (process.stdin.isTTY) {
      const rl = readline.createInterface({ input: process.stdin, output: process.stderr });
      const a = await rl.question(`\napproval needed (${req.risk.toLowerCase()} risk): ${req.command || req.summary}\n  reason: ${req.reason}\n[y] once  [n] deny > `);
      rl.close();
      return a.trim().toLowerCase() === "y" ? true : { approve: false, reason: "the user said no" };
    }
    const first = req.command.trim().split(/\s+/)[0];
    if (req.command && allowed.includes(first)) return true;
    return { approve: false, reason: `not approved: only ${allowed.join(", ") || "no"} commands run unattended` };
  };
}

export interface TraceEntry {
  turn: number;
  id: string;
  name: string;
  result: Result;
  start: number;
  end: number;
}

/** Runs the loop until the model answers without tool_use; returns its text. */
export async function runAgent(
  client: Client,
  anthropic: Anthropic,
  task: string,
  opts: { model?: string; onApproval?: (req: ApprovalRequest) => Promise<boolean | Decision> | boolean | Decision; maxTurns?: number; trace?: TraceEntry[] } = {},
): Promise<string> {
  const tools = (await client.listTools({ format: "anthropic" })).rendered as unknown as Anthropic.Tool[];
  const messages: Anthropic.MessageParam[] = [{ role: "user", content: task }];
  const session = client.session({ onApproval: opts.onApproval });
  try {
    for (let turn = 1; turn <= (opts.maxTurns ?? 12); turn++) {
      const msg = await anthropic.messages.create({
        model: opts.model ?? "claude-sonnet-4-5",
        max_tokens: 4096,
        system: SYSTEM,
        tools,
        messages,
      });
      messages.push({ role: "assistant", content: msg.content });
      const uses = msg.content.filter((b): b is Anthropic.ToolUseBlock => b.type === "tool_use");
      if (msg.stop_reason !== "tool_use" || uses.length === 0) {
        return msg.content.flatMap((b) => (b.type === "text" ? [b.text] : [])).join("");
      }
      const results = await Promise.all(
        uses.map(async (u) => {
          const start = performance.now();
          // tool_use input is an object; toold coerces and validates it by the schema.
          const result = await session.call(u.name, u.input as Record<string, unknown>, { callId: u.id });
          opts.trace?.push({ turn, id: u.id, name: u.name, result, start, end: performance.now() });
          return result;
        }),
      );
      messages.push({
        role: "user",
        content: uses.map((u, i): Anthropic.ToolResultBlockParam => ({
          type: "tool_result",
          tool_use_id: u.id,
          content: results[i].text,
          is_error: !results[i].success,
        })),
      });
    }
    throw new Error("no answer within the turn limit");
  } finally {
    await session.close();
  }
}

async function main(): Promise<number> {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: {
      socket: { type: "string" },
      address: { type: "string" },
      token: { type: "string" },
      model: { type: "string", default: process.env.ANTHROPIC_MODEL ?? "claude-sonnet-4-5" },
      replay: { type: "string" },
      record: { type: "string" },
      "allow-commands": { type: "string", default: "" },
    },
  });
  const task = positionals.join(" ");
  if (!task) {
    console.error("usage: agent.js [--socket PATH | --address HOST:PORT] [--replay DIR] TASK");
    return 2;
  }
  let fetchFn: Fetch | undefined;
  if (values.replay) fetchFn = replayFetch(values.replay);
  else if (!process.env.ANTHROPIC_API_KEY) {
    console.error("set ANTHROPIC_API_KEY (and ANTHROPIC_BASE_URL for another endpoint), or use --replay DIR");
    return 2;
  } else if (values.record) fetchFn = recordingFetch(values.record);
  const anthropic = new Anthropic({
    apiKey: process.env.ANTHROPIC_API_KEY ?? "replay",
    baseURL: process.env.ANTHROPIC_BASE_URL || undefined,
    fetch: fetchFn,
  });
  const client = connect({ socket: values.socket, address: values.address, token: values.token });
  try {
    const allowed = values["allow-commands"]!.split(",").filter(Boolean);
    console.log(await runAgent(client, anthropic, task, { model: values.model, onApproval: commandApprover(allowed) }));
    return 0;
  } finally {
    await client.close();
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === path.resolve(new URL(import.meta.url).pathname)) {
  process.exitCode = await main();
}
