// Tool calls that models without native tool calling write as text: the
// TextCallService helpers of Client (parseToolCalls, toolPrompt).

import type { Client as RpcClient } from "@connectrpc/connect";
import { TextCallFormat, TextCallService, type ParseToolCallsResponse } from "./gen/toold/v1/textcalls_pb.js";
import { ErrorCode } from "./gen/toold/v1/tool_pb.js";
import { enumName, type Coercion, type ToolErrorInfo } from "./types.js";

/** Text tool-call formats by name ("auto" detects the format). */
export const TEXT_FORMATS = {
  auto: TextCallFormat.UNSPECIFIED,
  hermes: TextCallFormat.HERMES,
  qwen: TextCallFormat.HERMES,
  llama3: TextCallFormat.LLAMA3,
  mistral: TextCallFormat.MISTRAL,
  deepseek: TextCallFormat.DEEPSEEK,
  tool_code: TextCallFormat.TOOL_CODE,
  gemma: TextCallFormat.TOOL_CODE,
  json: TextCallFormat.JSON,
  legacy: TextCallFormat.LEGACY,
  "swe-agent": TextCallFormat.SWE_AGENT,
} as const;

export type TextFormatName = keyof typeof TEXT_FORMATS;

/**
 * One call found in a model's text, as toold would run it: name and
 * argumentsJson as written; tool, operation and args resolved, repaired and
 * coerced (send name and args on a session to run it); error says what to
 * change when it would fail.
 */
export interface ParsedCall {
  name: string;
  argumentsJson: string;
  raw: string;
  start: number;
  end: number;
  tool: string;
  operation: string;
  args: Record<string, unknown> | undefined;
  coercions: Coercion[];
  error: ToolErrorInfo | undefined;
}

/** The calls in a model's text, and the text left for the person. */
export interface ParsedText {
  calls: ParsedCall[];
  text: string;
  /** "hermes", "llama3", ...; "" when the text held no call. */
  format: string;
}

export function textFormat(name: string | undefined): TextCallFormat {
  const n = (name ?? "auto").toLowerCase();
  if (!(n in TEXT_FORMATS)) throw new TypeError(`unknown text call format ${JSON.stringify(name)}; one of ${Object.keys(TEXT_FORMATS).join(", ")}`);
  return TEXT_FORMATS[n as TextFormatName];
}

export function parsedOf(r: ParseToolCallsResponse): ParsedText {
  const format = r.format === TextCallFormat.UNSPECIFIED ? "" : enumName(TextCallFormat, r.format).toLowerCase();
  return {
    format,
    text: r.remainingText,
    calls: r.calls.map((c) => ({
      name: c.name,
      argumentsJson: c.argumentsJson,
      raw: c.raw,
      start: c.start,
      end: c.end,
      tool: c.tool,
      operation: c.operation,
      args: c.resolvedArgumentsJson ? (JSON.parse(c.resolvedArgumentsJson) as Record<string, unknown>) : undefined,
      coercions: c.coercions.map((x) => ({ field: x.field, from: x.from, to: x.to, rule: x.rule })),
      error: c.error
        ? { code: enumName(ErrorCode, c.error.code), message: c.error.message, suggestions: [...c.error.suggestions], field: c.error.field, rule: c.error.rule }
        : undefined,
    })),
  };
}

export type TextCallRpc = RpcClient<typeof TextCallService>;
export { TextCallService };
