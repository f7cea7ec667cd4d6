// Errors of the toold client.
//
// A call that toold ran and that failed is a Result (success false): a model
// should see the error and act on it. result.raiseForError() (or
// session.call(..., {check: true})) throws one class per ErrorCode family.
// The stream itself failing (the daemon went away, a bad token) throws
// StreamError.

import type { Result } from "./types.js";

/** Base class of every error this package throws. */
export class TooldError extends Error {
  override name = "TooldError";
}

/** The connection or the ExecuteTool stream failed; the calls on it ended. */
export class StreamError extends TooldError {
  override name = "StreamError";
  /** The gRPC status code name ("UNAVAILABLE", "UNAUTHENTICATED"), when known. */
  readonly code: string;
  constructor(message: string, code = "UNKNOWN", options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
  }
}

/** A call ended with an error; subclasses name the ErrorCode family. */
export class ToolCallError extends TooldError {
  override name = "ToolCallError";
  /** ErrorCode names (without ERROR_CODE_) of this family. */
  static readonly codes: readonly string[] = [];
  constructor(
    readonly code: string,
    readonly detail: string,
    readonly suggestions: string[] = [],
    readonly field = "",
    readonly rule = "",
    readonly result?: Result,
  ) {
    super(`${code}: ${detail}`);
  }
}

/** No tool has the name; suggestions lists the closest ones. */
export class ToolNotFoundError extends ToolCallError {
  override name = "ToolNotFoundError";
  static override readonly codes = ["TOOL_NOT_FOUND"];
}
/** The arguments break the schema (field, rule) or the call_id is taken. */
export class InvalidArgumentsError extends ToolCallError {
  override name = "InvalidArgumentsError";
  static override readonly codes = ["INVALID_ARGUMENTS", "DUPLICATE_CALL_ID"];
}
/** Policy or a person refused the call, or nobody answered; nothing was done. */
export class DeniedError extends ToolCallError {
  override name = "DeniedError";
  static override readonly codes = ["DENIED", "REJECTED_BY_USER", "APPROVAL_TIMEOUT"];
}
/** The call ran past its timeout and was stopped. */
export class ToolTimeoutError extends ToolCallError {
  override name = "ToolTimeoutError";
  static override readonly codes = ["TIMEOUT"];
}
/** The call was canceled (by the client, a shutdown or the stream's end). */
export class CanceledError extends ToolCallError {
  override name = "CanceledError";
  static override readonly codes = ["CANCELED", "DISCONNECTED"];
}
/** The tool ran and failed. */
export class ExecutionFailedError extends ToolCallError {
  override name = "ExecutionFailedError";
  static override readonly codes = ["EXECUTION_FAILED"];
}
/** A dependency is down or a limit was reached; retrying later may work. */
export class UnavailableError extends ToolCallError {
  override name = "UnavailableError";
  static override readonly codes = ["UNAVAILABLE", "RESOURCE_EXHAUSTED"];
}
/** A bug in toold (or a code this client does not know). */
export class InternalError extends ToolCallError {
  override name = "InternalError";
  static override readonly codes = ["INTERNAL"];
}

const families = [
  ToolNotFoundError,
  InvalidArgumentsError,
  DeniedError,
  ToolTimeoutError,
  CanceledError,
  ExecutionFailedError,
  UnavailableError,
  InternalError,
];

/** The ToolCallError subclass of an ErrorCode name ("DENIED"). */
export function errorClass(code: string): typeof ToolCallError {
  return families.find((f) => f.codes.includes(code)) ?? InternalError;
}
