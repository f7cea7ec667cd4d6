// @toold/client: a TypeScript client for toold, the tool-execution sidecar
// for LLM agents.
//
//   const client = connect();                       // $TOOLD_SOCKET or ./toold.sock
//   const session = client.session({ onApproval: (req) => true });
//   const result = await session.call("read_file", '{"path": "README.md"}');
//
// The generated protobuf-es types and the service descriptor are exported
// as `pb`.

import * as net from "node:net";
import * as path from "node:path";
import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { durationFromMs } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, createClient, type Client as RpcClient, type Interceptor } from "@connectrpc/connect";
import { createGrpcTransport, Http2SessionManager } from "@connectrpc/connect-node";
import {
  ApprovalMode,
  ClientMessageSchema,
  ToolFormat,
  ToolResultSchema,
  ToolService,
  type ClientMessage,
  type ServerEvent,
  type ToolSpec,
  type Welcome,
} from "./gen/toold/v1/tool_pb.js";
import { FileChangeKind, WorkspaceService } from "./gen/toold/v1/workspace_pb.js";
import { CheckpointService, type CallChanges, type RewindResponse } from "./gen/toold/v1/checkpoint_pb.js";
import { StreamError, TooldError } from "./errors.js";
import { parsedOf, TextCallService, textFormat, type ParsedText, type TextCallRpc, type TextFormatName } from "./textcalls.js";
import { AsyncQueue } from "./queue.js";
import {
  approvalOf,
  enumName,
  eventOf,
  Result,
  type ApprovalRequest,
  type Decision,
  type Event,
  type InputRequest,
} from "./types.js";

export * from "./errors.js";
export * from "./types.js";
export * as pb from "./gen/toold/v1/tool_pb.js";
export { TEXT_FORMATS, type ParsedCall, type ParsedText, type TextFormatName } from "./textcalls.js";
export type { CallChanges, PathChange, PathState, RewindAction, RewindResponse } from "./gen/toold/v1/checkpoint_pb.js";

/** ListTools renderings by name. */
export const FORMATS = {
  toold: ToolFormat.UNSPECIFIED,
  openai: ToolFormat.OPENAI,
  anthropic: ToolFormat.ANTHROPIC,
  gemini: ToolFormat.GEMINI,
  mcp: ToolFormat.MCP,
} as const;
export type FormatName = keyof typeof FORMATS;

const MODES = { yolo: ApprovalMode.YOLO, auto: ApprovalMode.AUTO, ask: ApprovalMode.ASK } as const;

export interface ConnectOptions {
  /** Unix socket path; default $TOOLD_SOCKET, then ./toold.sock. */
  socket?: string;
  /** "host:port" for TCP instead of the socket. */
  address?: string;
  /** Bearer token; default $TOOLD_TOKEN. */
  token?: string;
  /** Names this client in toold's logs and traces. */
  clientName?: string;
}

export type ApprovalHandler = (req: ApprovalRequest) => boolean | Decision | Promise<boolean | Decision>;
export type InputHandler = (req: InputRequest) => string | Promise<string>;

export interface SessionOptions {
  /** The conversation; toold generates one when empty. */
  conversationId?: string;
  /** A stricter approval mode than the server's. */
  mode?: keyof typeof MODES;
  /** Answers RequiresApproval; without one every ask is denied. */
  onApproval?: ApprovalHandler;
  /** Answers a tool's question (InputRequired). */
  onInput?: InputHandler;
  /** Skip Executing events. */
  omitExecuting?: boolean;
  /**
   * Call in another agent's tool set ("claude-code", "gemini-cli", "codex",
   * "openhands", "swe-agent"): its names and arguments, results in the shape
   * its model expects (see listTools({ dialect })).
   */
  dialect?: string;
}

export interface CallOptions {
  /** Upper bound on the call's run time, in ms. */
  timeoutMs?: number;
  /** Aborting sends Cancel for the call; the promise rejects with signal.reason. */
  signal?: AbortSignal;
  /** The call_id; default a unique id. */
  callId?: string;
  /** Throw the ToolCallError subclass of a failed call instead of returning it. */
  check?: boolean;
}

/** ListTools' answer: every tool in a stable order, and the provider rendering. */
export interface ToolList {
  tools: ToolSpec[];
  /** The rendering as JSON text ("" for none). */
  renderedJson: string;
  /** The rendering decoded: what a provider's "tools" parameter takes. */
  rendered: Record<string, unknown>[];
  names: string[];
  /** With a dialect: its name and the published definition it follows. */
  dialect: string;
  dialectVersion: string;
  /** Tools not offered here (with a dialect, the agent's tools toold lacks), each with its reason. */
  unavailable: { name: string; reason: string }[];
}

function streamError(err: unknown): StreamError {
  if (err instanceof StreamError) return err;
  if (err instanceof ConnectError) {
    const code = Code[err.code].replace(/([a-z])([A-Z])/g, "$1_$2").toUpperCase();
    return new StreamError(`toold stream failed: ${code}: ${err.rawMessage}`, code, { cause: err });
  }
  return new StreamError(`toold stream failed: ${String(err)}`, "UNKNOWN", { cause: err });
}

/** Whether err, or an error it wraps, is the socket's reset (ECONNRESET, EPIPE). */
function connectionReset(err: unknown): boolean {
  for (let c: unknown = err, i = 0; c instanceof Object && i < 8; c = (c as { cause?: unknown }).cause, i++) {
    const code = (c as { code?: unknown }).code;
    if (code === "ECONNRESET" || code === "EPIPE") return true;
    if (c instanceof ConnectError && /\b(ECONNRESET|EPIPE)\b/.test(c.rawMessage)) return true;
  }
  return false;
}

/** Opens a client. Nothing connects until the first request. */
export function connect(opts: ConnectOptions = {}): Client {
  return new Client(opts);
}

/** A connection to toold over its unix socket (default) or TCP. */
/** One path's change in a watch window. */
export interface FileChange {
  /** Relative to the workspace, slash-separated. */
  path: string;
  kind: "created" | "changed" | "removed";
  directory: boolean;
}

/**
 * What a watch reports: the start (started set), or the changes of one
 * window; notice says what was not reported or why the watch ends.
 */
export interface WatchBatch {
  started: boolean;
  path: string;
  directories: number;
  changes: FileChange[];
  notice: string;
}

const CHANGE_KINDS: Record<number, FileChange["kind"]> = {
  [FileChangeKind.CREATED]: "created",
  [FileChangeKind.CHANGED]: "changed",
  [FileChangeKind.REMOVED]: "removed",
};

export class Client {
  readonly rpc: RpcClient<typeof ToolService>;
  readonly textRpc: TextCallRpc;
  readonly workspaceRpc: RpcClient<typeof WorkspaceService>;
  readonly checkpointRpc: RpcClient<typeof CheckpointService>;
  readonly clientName: string;
  private readonly sessions = new Set<Session>();
  private readonly connection: Http2SessionManager;

  constructor(opts: ConnectOptions = {}) {
    if (opts.socket && opts.address) throw new TypeError("give socket or address, not both");
    const token = opts.token ?? process.env.TOOLD_TOKEN ?? "";
    const auth: Interceptor = (next) => async (req) => {
      if (token) req.header.set("authorization", `bearer ${token}`);
      return next(req);
    };
    // One HTTP/2 connection per Client, ours to close in close().
    const baseUrl = opts.address ? `http://${opts.address}` : "http://localhost";
    const sock = path.resolve(opts.socket || process.env.TOOLD_SOCKET || "./toold.sock");
    this.connection = new Http2SessionManager(baseUrl, {}, opts.address ? {} : { createConnection: () => net.connect(sock) });
    const transport = createGrpcTransport({ baseUrl, interceptors: [auth], sessionManager: this.connection });
    this.rpc = createClient(ToolService, transport);
    this.textRpc = createClient(TextCallService, transport);
    this.workspaceRpc = createClient(WorkspaceService, transport);
    this.checkpointRpc = createClient(CheckpointService, transport);
    this.clientName = opts.clientName ?? "toold-ts/0.1";
  }

  /**
   * Lists the tools; format ("openai", "anthropic", "gemini", "mcp") adds a
   * rendering, flatOperations renders every operation as its own tool too,
   * strict (with "openai") renders for OpenAI's strict mode. dialect
   * ("claude-code", "gemini-cli", "codex", "openhands", "swe-agent") lists
   * that agent's tools by its names and schemas instead of toold's, each
   * run by toold's tools (open the session with the same dialect to call
   * them); an unknown one rejects with a StreamError INVALID_ARGUMENT.
   */
  async listTools(opts: { format?: FormatName; flatOperations?: boolean; strict?: boolean; dialect?: string; signal?: AbortSignal } = {}): Promise<ToolList> {
    const format = opts.format ?? "toold";
    if (!(format in FORMATS)) throw new TypeError(`unknown format ${JSON.stringify(format)}; one of ${Object.keys(FORMATS).join(", ")}`);
    try {
      const r = await this.rpc.listTools(
        { format: FORMATS[format], flatOperations: opts.flatOperations ?? false, strict: opts.strict ?? false, dialect: opts.dialect ?? "" },
        { signal: opts.signal, timeoutMs: 30_000 },
      );
      return {
        tools: r.tools,
        renderedJson: r.renderedJson,
        rendered: r.renderedJson ? JSON.parse(r.renderedJson) : [],
        names: r.tools.map((t) => t.name),
        dialect: r.dialect,
        dialectVersion: r.dialectVersion,
        unavailable: r.unavailable.map((u) => ({ name: u.name, reason: u.reason })),
      };
    } catch (e) {
      throw streamError(e);
    }
  }

  /**
   * Finds the tool calls a model wrote as text and checks each as toold
   * would run it. format is "hermes" (or "qwen"), "llama3", "mistral",
   * "deepseek", "tool_code" (or "gemma"), "json" or "legacy"; absent or
   * "auto" detects it. Nothing runs: send a call's name and args on a
   * session.
   */
  async parseToolCalls(text: string, opts: { format?: TextFormatName; signal?: AbortSignal } = {}): Promise<ParsedText> {
    const format = textFormat(opts.format);
    try {
      return parsedOf(await this.textRpc.parseToolCalls({ text, format }, { signal: opts.signal, timeoutMs: 30_000 }));
    } catch (e) {
      throw streamError(e);
    }
  }

  /** The tools as the system-prompt block of a text format ("hermes", "llama3", ...). */
  async toolPrompt(format: TextFormatName, opts: { flat?: boolean; signal?: AbortSignal } = {}): Promise<string> {
    const f = textFormat(format);
    if (f === textFormat("auto")) throw new TypeError("name the format to render the tool prompt for");
    try {
      const r = await this.textRpc.renderToolPrompt({ format: f, flat: opts.flat ?? false }, { signal: opts.signal, timeoutMs: 30_000 });
      return r.prompt;
    } catch (e) {
      throw streamError(e);
    }
  }

  /** A conversation: one ExecuteTool stream that every call shares. */
  session(opts: SessionOptions = {}): Session {
    const s = new Session(this, opts, () => this.sessions.delete(s));
    this.sessions.add(s);
    return s;
  }

  /** Closes every session, then the connection. */
  async close(): Promise<void> {
    await Promise.all([...this.sessions].map((s) => s.close()));
    this.connection.abort();
  }
}

interface PendingCall {
  name: string;
  args: unknown;
  events: AsyncQueue<Event | Error>;
  ended: boolean;
  /** Aborted when the call ends: tells its approval and input handlers. */
  done: AbortController;
}

function finish(c: PendingCall): void {
  c.ended = true;
  c.done.abort(new TooldError("the call ended"));
}

const CLOSE = Symbol("close");

let sessionCounter = 0;

/**
 * One ExecuteTool stream: many concurrent calls, approvals in-band.
 *
 * Aborting a call's signal (or leaving events() early) sends Cancel for that
 * call. If the stream fails (the daemon went away), every waiting call
 * rejects with StreamError and the session stays failed.
 */
export class Session {
  private readonly calls = new Map<string, PendingCall>();
  private readonly outbox = new AsyncQueue<ClientMessage | typeof CLOSE>();
  private readonly abort = new AbortController();
  private opened?: Promise<Welcome>;
  private reader?: Promise<void>;
  private welcomeMsg?: Welcome;
  private failure?: StreamError;
  private closed = false;
  private nextId = 1;
  private readonly prefix = `${process.pid.toString(36)}${(sessionCounter++).toString(36)}${Date.now().toString(36)}`;

  constructor(
    private readonly client: Client,
    private readonly opts: SessionOptions,
    private readonly onClose: () => void,
  ) {
    if (opts.mode !== undefined && !(opts.mode in MODES)) throw new TypeError(`unknown mode ${JSON.stringify(opts.mode)}`);
  }

  /** The Welcome message (every field toold sends, including newer ones). */
  get welcome(): Welcome {
    if (!this.welcomeMsg) throw new TooldError("the session is not open: await open() first");
    return this.welcomeMsg;
  }
  get conversationId(): string {
    return this.welcome.conversationId;
  }
  get approvalMode(): string {
    return enumName(ApprovalMode, this.welcome.approvalMode);
  }
  get serverVersion(): string {
    return this.welcome.serverVersion;
  }
  get workspace(): string {
    return this.welcome.workspace;
  }

  /**
   * Watches a workspace directory (default the workspace) as this
   * conversation: yields a batch with started set once the watch is in
   * place, then one per window of coalesceMs in which files changed (merged
   * per path; what .gitignore ignores is left out). Leaving the loop (or
   * signal) ends the watch. It is judged like reading the directory: a path
   * outside the workspace, or one the policy does not allow, rejects with
   * StreamError PERMISSION_DENIED. It ends when toold stops or the
   * directory is removed.
   */
  async *watch(
    path = "",
    opts: { recursive?: boolean; coalesceMs?: number; maxDirectories?: number; signal?: AbortSignal } = {},
  ): AsyncGenerator<WatchBatch> {
    const w = await this.open();
    const abort = new AbortController();
    const onAbort = () => abort.abort();
    opts.signal?.addEventListener("abort", onAbort);
    try {
      const stream = this.client.workspaceRpc.watch(
        {
          path,
          recursive: opts.recursive ?? true,
          conversationId: w.conversationId,
          coalesceMs: opts.coalesceMs ?? 100,
          maxDirectories: opts.maxDirectories ?? 0,
        },
        { signal: abort.signal, headers: { "toold-conversation-secret": w.conversationSecret } },
      );
      for await (const r of stream) {
        yield {
          started: r.started !== undefined,
          path: r.started?.path ?? "",
          directories: r.started?.directories ?? 0,
          changes: r.changes.map((c) => ({ path: c.path, kind: CHANGE_KINDS[c.kind] ?? "changed", directory: c.directory })),
          notice: r.notice,
        };
      }
    } catch (e) {
      if (abort.signal.aborted) return;
      throw streamError(e);
    } finally {
      opts.signal?.removeEventListener("abort", onAbort);
      abort.abort();
    }
  }

  /** Opens the stream (once) and resolves with the Welcome. */
  open(): Promise<Welcome> {
    if (this.closed) return Promise.reject(new TooldError("the session is closed"));
    if (!this.opened) {
      this.outbox.push(
        create(ClientMessageSchema, {
          msg: {
            case: "hello",
            value: {
              conversationId: this.opts.conversationId ?? "",
              approvalMode: this.opts.mode ? MODES[this.opts.mode] : ApprovalMode.UNSPECIFIED,
              clientName: this.client.clientName,
              omitExecuting: this.opts.omitExecuting ?? false,
              dialect: this.opts.dialect ?? "",
            },
          },
        }),
      );
      let welcomed!: (w: Welcome) => void;
      let failed!: (e: Error) => void;
      this.opened = new Promise<Welcome>((res, rej) => {
        welcomed = res;
        failed = rej;
      });
      this.opened.catch(() => {}); // reported to whoever awaits it
      const events = this.client.rpc.executeTool(this.requests(), { signal: this.abort.signal });
      this.reader = this.read(events, welcomed, failed);
    }
    return this.opened;
  }

  /** Cancels calls still running, ends the stream and waits for it to end. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.onClose();
    for (const [callId, c] of this.calls) {
      if (!c.ended) this.send({ case: "cancel", value: { callId, reason: "session closed" } });
    }
    this.outbox.push(CLOSE);
    if (this.reader) {
      const timer = setTimeout(() => this.abort.abort(new StreamError("session close timed out", "CANCELLED")), 10_000);
      await this.reader;
      clearTimeout(timer);
    }
    // Handlers still running were told through req.signal (their calls
    // ended); their answers are dropped, and close() does not wait on them.
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  private async *requests(): AsyncGenerator<ClientMessage> {
    for (;;) {
      const m = await this.outbox.shift();
      if (m === CLOSE) return;
      yield m;
    }
  }

  private send(msg: MessageInitShape<typeof ClientMessageSchema>["msg"]): void {
    if (!this.failure) this.outbox.push(create(ClientMessageSchema, { msg }));
  }

  private async read(events: AsyncIterable<ServerEvent>, welcomed: (w: Welcome) => void, failed: (e: Error) => void) {
    let err = new StreamError("toold ended the stream", "OK");
    try {
      for await (const ev of events) this.dispatch(ev, welcomed);
    } catch (e) {
      err = streamError(e);
      // HTTP/2 reports a lost connection as a canceled stream, and a reset
      // one (toold died with our bytes unread) as an aborted one; we did
      // not cancel it.
      if ((err.code === "CANCELED" || (err.code === "ABORTED" && connectionReset(e))) && !this.abort.signal.aborted) {
        err = new StreamError(`toold stream failed: UNAVAILABLE: the connection to toold was lost (${err.message})`, "UNAVAILABLE", { cause: e });
      }
    }
    this.failure = err;
    this.outbox.push(CLOSE); // ends the request generator
    failed(err);
    for (const c of this.calls.values()) {
      if (!c.ended) {
        finish(c);
        c.events.push(err);
      }
    }
  }

  private dispatch(ev: ServerEvent, welcomed: (w: Welcome) => void): void {
    const e = ev.event;
    if (e.case === "welcome") {
      this.welcomeMsg = e.value;
      welcomed(e.value);
      return;
    }
    if (e.case === "keepalive" || e.case === undefined) return;
    const c = this.calls.get(ev.callId);
    if (!c) return;
    if (e.case === "end") {
      finish(c);
      this.calls.delete(ev.callId);
      c.events.push(eventOf(ev, Result.fromPB(ev.callId, e.value.result ?? create(ToolResultSchema))));
      return;
    }
    if (e.case === "requiresApproval") this.spawn(this.answerApproval(approvalOf(ev.callId, c.name, c.args, e.value, c.done.signal)));
    if (e.case === "inputRequired") {
      const r = e.value;
      this.spawn(
        this.answerInput({
          callId: ev.callId,
          requestId: r.requestId,
          prompt: r.prompt,
          choices: [...r.choices],
          approval: r.approval,
          authorizeOperation: r.authorizeOperation,
          raw: r,
          signal: c.done.signal,
        }),
      );
    }
    c.events.push(eventOf(ev));
  }

  private spawn(p: Promise<void>): void {
    // Handlers catch their own errors; nothing waits on them (see close()).
    void p;
  }

  private async answerApproval(req: ApprovalRequest): Promise<void> {
    let d: boolean | Decision;
    if (!this.opts.onApproval) d = { approve: false, reason: "this client has no approval handler" };
    else {
      try {
        d = await this.opts.onApproval(req);
      } catch (e) {
        d = { approve: false, reason: `the approval handler failed: ${String(e)}` };
      }
    }
    if (typeof d === "boolean") d = { approve: d };
    if (typeof d !== "object" || d === null || typeof d.approve !== "boolean") {
      d = { approve: false, reason: "the approval handler returned neither a boolean nor a Decision" };
    }
    if (req.signal.aborted) return; // the call ended meanwhile
    this.send({
      case: "approval",
      value: {
        approvalId: req.approvalId,
        approve: d.approve,
        scopeId: d.scopeId ?? "",
        reason: d.reason ?? "",
        ttl: d.ttlMs !== undefined ? durationFromMs(d.ttlMs) : undefined,
      },
    });
  }

  private async answerInput(req: InputRequest): Promise<void> {
    let text = "";
    if (this.opts.onInput) {
      try {
        text = String((await this.opts.onInput(req)) ?? "");
      } catch {
        text = "";
      }
    }
    if (req.signal.aborted) return; // the call ended meanwhile
    this.send({ case: "input", value: { callId: req.callId, requestId: req.requestId, payload: { case: "text", value: text } } });
  }

  /**
   * Starts a call and yields its events, ending with the "end" event.
   * Leaving the loop early, or aborting opts.signal, cancels the call.
   * `args` is the model's JSON text (sent verbatim) or an object.
   */
  async *events(name: string, args?: string | Record<string, unknown>, opts: CallOptions = {}): AsyncGenerator<Event> {
    opts.signal?.throwIfAborted();
    await this.open();
    if (this.failure) throw this.failure;
    if (this.closed) throw new TooldError("the session is closed");
    const callId = opts.callId ?? `${this.prefix}-${this.nextId++}`;
    if (this.calls.has(callId)) throw new TypeError(`call_id ${callId} is in use on this session`);
    const c: PendingCall = { name, args, events: new AsyncQueue(), ended: false, done: new AbortController() };
    this.calls.set(callId, c);
    this.send({
      case: "call",
      value: {
        callId,
        name,
        arguments: args === undefined ? { case: undefined } : { case: "argumentsJson", value: typeof args === "string" ? args : JSON.stringify(args) },
        timeout: opts.timeoutMs !== undefined ? durationFromMs(opts.timeoutMs) : undefined,
      },
    });
    const onAbort = () => c.events.push(opts.signal?.reason ?? new Error("aborted"));
    opts.signal?.addEventListener("abort", onAbort, { once: true });
    try {
      for (;;) {
        const item = await c.events.shift();
        if (item instanceof Error || !("kind" in item)) throw item;
        yield item;
        if (item.kind === "end") return;
      }
    } finally {
      opts.signal?.removeEventListener("abort", onAbort);
      if (!c.ended && !this.failure) {
        finish(c);
        this.calls.delete(callId);
        this.send({ case: "cancel", value: { callId, reason: "client canceled" } });
      }
    }
  }

  /**
   * Runs one call and resolves with its Result. A failed call is a Result
   * with `error` set (opts.check throws instead). Aborting opts.signal sends
   * Cancel and rejects with signal.reason. The stream failing rejects with
   * StreamError.
   */
  async call(name: string, args?: string | Record<string, unknown>, opts: CallOptions = {}): Promise<Result> {
    for await (const ev of this.events(name, args, opts)) {
      if (ev.kind === "end" && ev.result) return opts.check ? ev.result.raiseForError() : ev.result;
    }
    throw new StreamError("the call ended without a result");
  }

  private async secretHeaders(): Promise<Record<string, string>> {
    await this.open();
    return { "toold-conversation-secret": this.welcome.conversationSecret };
  }

  /**
   * What this conversation's calls changed in the workspace, oldest first:
   * every recorded call's, or only callId's (CallChanges: callId, changes
   * with path, before, after, and with opts.diff a unified diff of each
   * text file). Calls that cannot change the workspace have no record.
   * Rejects with TooldError when toold has no record of callId or keeps no
   * checkpoints.
   */
  async changes(callId?: string, opts: { diff?: boolean; signal?: AbortSignal } = {}): Promise<CallChanges[]> {
    const headers = await this.secretHeaders();
    try {
      const resp = await this.client.checkpointRpc.changes(
        { conversationId: this.conversationId, callId: callId ?? "", diff: opts.diff ?? false },
        { headers, signal: opts.signal },
      );
      return resp.calls;
    } catch (e) {
      throw checkpointError("changes", e);
    }
  }

  /**
   * Rewinds the workspace to before callId: that call and this
   * conversation's later calls are undone, newest first. A path changed
   * since by anything outside the conversation is a conflict, left alone
   * unless opts.force; opts.dryRun changes nothing. Resolves with the
   * RewindResponse (undoneCallIds, actions, conflicts). Rejects with
   * TooldError when toold has no record of the call (or dropped it to keep
   * within its bounds), while a call of the conversation runs, or when it
   * keeps no checkpoints.
   */
  async rewind(callId: string, opts: { dryRun?: boolean; force?: boolean; signal?: AbortSignal } = {}): Promise<RewindResponse> {
    const headers = await this.secretHeaders();
    try {
      return await this.client.checkpointRpc.rewind(
        { conversationId: this.conversationId, callId, dryRun: opts.dryRun ?? false, force: opts.force ?? false },
        { headers, signal: opts.signal },
      );
    } catch (e) {
      throw checkpointError("rewind", e);
    }
  }
}

function checkpointError(what: string, e: unknown): Error {
  if (e instanceof ConnectError) return new TooldError(`${what}: ${Code[e.code]}: ${e.rawMessage}`);
  return e instanceof Error ? e : new TooldError(String(e));
}
