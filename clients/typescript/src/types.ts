// Plain TypeScript views of toold's messages (the generated ones are in
// ./gen/toold/v1/*_pb.js and exported as `pb`).

import type { JsonObject } from "@bufbuild/protobuf";
import type { Duration } from "@bufbuild/protobuf/wkt";
import { errorClass } from "./errors.js";
import {
  ApprovalKind,
  ApprovalScope_Kind,
  ErrorCode,
  OutputChunk_Stream,
  RiskLevel,
  type InputRequired,
  type RequiresApproval,
  type ServerEvent,
  type ToolResult,
} from "./gen/toold/v1/tool_pb.js";

/** Why a call failed: a stable code and a message written for the model. */
export interface ToolErrorInfo {
  code: string;
  message: string;
  suggestions: string[];
  field: string;
  rule: string;
}

/** How much of the result the model sees, and how to read on. */
export interface Truncation {
  shownBytes: number;
  totalBytes: number;
  shownItems: number;
  totalItems: number;
  continuation: string;
}

/** An argument toold converted by the schema ("42" -> 42). */
export interface Coercion {
  field: string;
  from: string;
  to: string;
  rule: string;
}

/** A call's outcome. A command's non-zero exit is a success with exitCode set. */
export class Result {
  constructor(
    readonly callId: string,
    readonly success: boolean,
    /** The text parts of the content, joined: what the model should see. */
    readonly text: string,
    /** JSON parts of the content, decoded. */
    readonly json: unknown[],
    readonly structured: JsonObject,
    readonly error: ToolErrorInfo | undefined,
    readonly truncation: Truncation | undefined,
    /** Wall time of the call in milliseconds. */
    readonly durationMs: number,
    readonly coercions: Coercion[],
    readonly metadata: JsonObject,
    /** The ToolResult message as received. */
    readonly raw: ToolResult,
  ) {}

  /** A command's exit status (run_command, wait); undefined for other tools. */
  get exitCode(): number | undefined {
    const v = this.structured["exit_code"];
    return typeof v === "number" ? v : undefined;
  }

  /** Throws the ToolCallError subclass of the error's code; returns this on success. */
  raiseForError(): this {
    const e = this.error;
    if (!e) return this;
    const C = errorClass(e.code);
    throw new C(e.code, e.message, e.suggestions, e.field, e.rule, this);
  }

  static fromPB(callId: string, r: ToolResult): Result {
    const texts: string[] = [];
    const json: unknown[] = [];
    for (const c of r.content) {
      if (c.kind.case === "text") texts.push(c.kind.value);
      else if (c.kind.case === "json") {
        try {
          json.push(JSON.parse(c.kind.value));
        } catch {
          texts.push(c.kind.value);
        }
      }
    }
    const e = r.error;
    const t = r.truncation;
    return new Result(
      callId,
      r.success,
      texts.join("\n"),
      json,
      r.structured ?? {},
      e && {
        code: enumName(ErrorCode, e.code),
        message: e.message,
        suggestions: [...e.suggestions],
        field: e.field,
        rule: e.rule,
      },
      t?.truncated
        ? {
            shownBytes: Number(t.shownBytes),
            totalBytes: Number(t.totalBytes),
            shownItems: Number(t.shownItems),
            totalItems: Number(t.totalItems),
            continuation: t.continuation,
          }
        : undefined,
      durationMs(r.duration) ?? 0,
      r.coercions.map((c) => ({ field: c.field, from: c.from, to: c.to, rule: c.rule })),
      r.metadata ?? {},
      r,
    );
  }
}

/** One way to approve a call (ApprovalScope). */
export interface Scope {
  scopeId: string;
  kind: "ONCE" | "CONVERSATION" | string;
  tool: string;
  operation: string;
  pathPrefix: string;
  commandPrefix: string;
  /** Lifetime of a conversation grant in ms; undefined for ONCE. */
  ttlMs?: number;
  description: string;
}

/** Policy asks a person before the call runs (RequiresApproval). */
export interface ApprovalRequest {
  callId: string;
  /** The tool name the call used. */
  name: string;
  /** The call's arguments as the client sent them. */
  arguments: unknown;
  approvalId: string;
  reason: string;
  rule: string;
  risk: string;
  summary: string;
  command: string;
  reads: string[];
  writes: string[];
  diff: string;
  scopes: Scope[];
  /**
   * What approving does: "CALL" (run the call as usual, a command inside
   * toold's sandbox) or "OUTSIDE_SANDBOX" (run this one call's command
   * outside toold's sandbox: show it to a person distinctly, with command,
   * workingDir and env exactly; once only).
   */
  kind: "CALL" | "OUTSIDE_SANDBOX";
  /** Approving runs this one call's command outside toold's sandbox. */
  outsideSandbox: boolean;
  /** The directory the command runs in (relative to the workspace; "" is its root). */
  workingDir: string;
  /** The environment variables the call sets for its command. */
  env: Record<string, string>;
  /** The RequiresApproval message as received (fields added later show here). */
  raw: RequiresApproval;
  /** Aborted when the call ends first (canceled, timed out, the stream gone): stop asking. */
  signal: AbortSignal;
}

/** An answer to an ApprovalRequest; a handler may also return a boolean. */
export interface Decision {
  approve: boolean;
  /** The scopeId of an offered scope; empty approves once. */
  scopeId?: string;
  /** When denying: why (the model gets it back). */
  reason?: string;
  /** A shorter lifetime for a conversation grant, in ms. */
  ttlMs?: number;
}

/** A tool asks the person a question (InputRequired); answer with a string. */
export interface InputRequest {
  callId: string;
  requestId: string;
  prompt: string;
  choices: string[];
  approval: boolean;
  authorizeOperation: string;
  raw: InputRequired;
  /** Aborted when the call ends first: stop asking. */
  signal: AbortSignal;
}

/** One event of a call, as session.events() yields it. */
export interface Event {
  /** The ServerEvent oneof case: "start", "requiresApproval", "inputRequired", "executing", "progress", "end", "rejected". */
  kind: string;
  callId: string;
  seq: bigint;
  raw: ServerEvent;
  /** For "progress" events with an output chunk: its bytes. */
  output?: Uint8Array;
  /** For output chunks: "STDOUT", "STDERR" or "PTY". */
  stream?: string;
  /** For "end": the result. */
  result?: Result;
}

export function enumName(e: Record<number, string>, v: number): string {
  return e[v] ?? String(v);
}

export function durationMs(d: Duration | undefined): number | undefined {
  return d === undefined ? undefined : Number(d.seconds) * 1000 + d.nanos / 1e6;
}

export function eventOf(ev: ServerEvent, result?: Result): Event {
  const out: Event = { kind: ev.event.case ?? "", callId: ev.callId, seq: ev.seq, raw: ev, result };
  if (ev.event.case === "progress" && ev.event.value.output) {
    out.output = ev.event.value.output.data;
    out.stream = enumName(OutputChunk_Stream, ev.event.value.output.stream);
  }
  return out;
}

export function approvalOf(callId: string, name: string, args: unknown, ra: RequiresApproval, signal: AbortSignal): ApprovalRequest {
  const e = ra.effect;
  return {
    callId,
    name,
    arguments: args,
    approvalId: ra.approvalId,
    reason: ra.reason,
    rule: ra.rule,
    risk: enumName(RiskLevel, ra.risk),
    summary: e?.summary ?? "",
    command: e?.command ?? "",
    reads: [...(e?.reads ?? [])],
    writes: [...(e?.writes ?? [])],
    diff: e?.diff ?? "",
    scopes: ra.scopes.map((s) => ({
      scopeId: s.scopeId,
      kind: enumName(ApprovalScope_Kind, s.kind),
      tool: s.tool,
      operation: s.operation,
      pathPrefix: s.pathPrefix,
      commandPrefix: s.commandPrefix,
      ttlMs: durationMs(s.ttl),
      description: s.description,
    })),
    kind: ra.kind === ApprovalKind.OUTSIDE_SANDBOX ? "OUTSIDE_SANDBOX" : "CALL",
    outsideSandbox: ra.kind === ApprovalKind.OUTSIDE_SANDBOX,
    workingDir: e?.workingDir ?? "",
    env: { ...(e?.env ?? {}) },
    raw: ra,
    signal,
  };
}
