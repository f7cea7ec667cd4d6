// toold's ListTools renderings checked against the providers' own
// definitions: a type-check of the rendered JSON against the official SDKs'
// request types (openai, @anthropic-ai/sdk, @google/genai), and table tests
// of each provider's documented schema restrictions, for every built-in tool,
// every flat operation and the tools of a real MCP server (server-everything).
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import { after, before, describe, test } from "node:test";
import ts from "typescript";
import { connect, type FormatName } from "../src/index.js";
import { Toold } from "../src/testing.js";

const pkgDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", ".."); // from dist-test/test
const everything = path.resolve(pkgDir, "..", "..", "testdata", "mcp", "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js");

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

// --- the type-check -----------------------------------------------------------

/** Type-checks `source` (a module in the package, so node_modules resolve); returns the diagnostics. */
let previous: ts.Program | undefined; // reused: the SDKs' declarations are parsed once

function typecheck(source: string): string[] {
  const dir = fs.mkdtempSync(path.join(pkgDir, ".typecheck-"));
  try {
    const file = path.join(dir, "rendered.ts");
    fs.writeFileSync(file, source);
    const program = ts.createProgram({
      rootNames: [file],
      oldProgram: previous,
      options: {
      target: ts.ScriptTarget.ES2022,
      module: ts.ModuleKind.NodeNext,
      moduleResolution: ts.ModuleResolutionKind.NodeNext,
      strict: true,
      noEmit: true,
      skipLibCheck: true,
      types: ["node"],
      },
    });
    previous = program;
    return ts.getPreEmitDiagnostics(program).map((d) => ts.flattenDiagnosticMessageText(d.messageText, "\n"));
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** A module assigning each rendering, as a literal, to the SDKs' request types. */
function sdkSource(r: { openai: string; openaiStrict: string; anthropic: string; gemini: string }): string {
  return `import type OpenAI from "openai";
import type Anthropic from "@anthropic-ai/sdk";
import type { FunctionDeclaration, GenerateContentParameters } from "@google/genai";

export const openaiTools = ${r.openai} satisfies OpenAI.Chat.Completions.ChatCompletionTool[];
export const openaiRequest: OpenAI.Chat.Completions.ChatCompletionCreateParamsNonStreaming = {
  model: "gpt-4.1", messages: [{ role: "user", content: "hi" }], tools: openaiTools,
};

export const openaiStrictTools = ${r.openaiStrict} satisfies OpenAI.Chat.Completions.ChatCompletionFunctionTool[];
export const openaiStrictRequest: OpenAI.Chat.Completions.ChatCompletionCreateParamsNonStreaming = {
  model: "gpt-4.1", messages: [{ role: "user", content: "hi" }], tools: openaiStrictTools, parallel_tool_calls: true,
};

export const anthropicTools = ${r.anthropic} satisfies Anthropic.Tool[];
export const anthropicRequest: Anthropic.MessageCreateParamsNonStreaming = {
  model: "claude-sonnet-4-5", max_tokens: 1024, messages: [{ role: "user", content: "hi" }], tools: anthropicTools,
};

export const geminiDeclarations = ${r.gemini} satisfies FunctionDeclaration[];
export const geminiRequest: GenerateContentParameters = {
  model: "gemini-2.5-flash", contents: "hi", config: { tools: [{ functionDeclarations: geminiDeclarations }] },
};
`;
}

// --- the providers' documented restrictions -----------------------------------

/** Every subschema of a JSON Schema, with its JSON pointer. */
function* walk(s: unknown, at = ""): Generator<[string, Json]> {
  if (typeof s !== "object" || s === null || Array.isArray(s)) return;
  const o = s as Json;
  yield [at, o];
  for (const k of ["properties", "$defs", "definitions", "patternProperties"]) {
    for (const [n, sub] of Object.entries(o[k] ?? {})) yield* walk(sub, `${at}/${k}/${n}`);
  }
  for (const k of ["items", "additionalProperties", "not", "contains"]) yield* walk(o[k], `${at}/${k}`);
  for (const k of ["anyOf", "oneOf", "allOf", "prefixItems"]) {
    if (Array.isArray(o[k])) for (const [i, sub] of o[k].entries()) yield* walk(sub, `${at}/${k}/${i}`);
  }
}

// The JSON Schema keywords Gemini accepts in parametersJsonSchema
// (ai.google.dev, function calling and structured output: "JSON Schema
// support") together with the fields of the OpenAPI-subset Schema type of
// the official SDK (@google/genai's Schema: default, example, nullable,
// minLength, maxLength, pattern, minProperties, maxProperties,
// propertyOrdering). Anything else ($schema, exclusiveMinimum, const,
// patternProperties, not, if/then/else...) is outside it.
const GEMINI_KEYWORDS = new Set([
  "$id", "$defs", "$ref", "$anchor", "type", "format", "title", "description", "enum", "items", "prefixItems",
  "minItems", "maxItems", "minimum", "maximum", "anyOf", "oneOf", "allOf", "properties", "additionalProperties",
  "required", "propertyOrdering", "default", "example", "nullable", "minLength", "maxLength", "pattern",
  "minProperties", "maxProperties",
]);

// The keywords OpenAI's strict mode (Structured Outputs, "Supported
// schemas") supports.
const OPENAI_STRICT_KEYWORDS = new Set([
  "type", "description", "title", "enum", "const", "properties", "required", "additionalProperties", "items", "anyOf",
  "$defs", "$ref", "pattern", "format", "multipleOf", "maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum",
  "minItems", "maxItems",
]);

const acceptsNull = (s: Json): boolean =>
  s.type === "null" || (Array.isArray(s.type) && s.type.includes("null")) || (Array.isArray(s.anyOf) && s.anyOf.some((b: Json) => acceptsNull(b)));

type Rule = { name: string; check: (tool: Json) => string[] };

const nameRule = (key: (t: Json) => unknown, re: RegExp): Rule => ({
  name: `name matches ${re}`,
  check: (t) => (typeof key(t) === "string" && re.test(key(t) as string) ? [] : [`name ${JSON.stringify(key(t))}`]),
});
const objectRoot = (key: (t: Json) => Json | undefined): Rule => ({
  name: "the schema's root is a plain object schema (type object, no anyOf/oneOf/allOf/not at the root)",
  check: (t) => {
    const s = key(t);
    if (!s || s.type !== "object") return [`root type ${JSON.stringify(s?.type)}`];
    return ["anyOf", "oneOf", "allOf", "not", "enum"].filter((k) => k in s).map((k) => `root has ${k}`);
  },
});
const onlyKeys = (keys: string[]): Rule => ({
  name: `only the fields ${keys.join(", ")}`,
  check: (t) => Object.keys(t).filter((k) => !keys.includes(k)).map((k) => `unexpected field ${k}`),
});
const described: (key: (t: Json) => unknown) => Rule = (key) => ({
  name: "has a description",
  check: (t) => (typeof key(t) === "string" && (key(t) as string).length > 0 ? [] : ["no description"]),
});

const strictParams = (t: Json) => [...walk(t.function?.parameters)];

const RULES: Record<Exclude<FormatName, "toold"> | "openaiStrict", Rule[]> = {
  // OpenAI strict mode (function.strict): additionalProperties false and every
  // property required in every object; supported keywords only; every node typed.
  openaiStrict: [
    onlyKeys(["type", "function"]),
    nameRule((t) => t.function?.name, /^[a-zA-Z0-9_-]{1,64}$/),
    objectRoot((t) => t.function?.parameters),
    { name: "function.strict is true", check: (t) => (t.function?.strict === true ? [] : ["strict not set"]) },
    {
      name: "every object has additionalProperties false and requires every property",
      check: (t) =>
        strictParams(t).flatMap(([at, s]) => {
          if (s.type !== "object" && !(Array.isArray(s.type) && s.type.includes("object")) && !s.properties) return [];
          const keys = Object.keys(s.properties ?? {}).sort();
          const req = [...(s.required ?? [])].sort();
          const out: string[] = [];
          if (s.additionalProperties !== false) out.push(`${at || "/"}: additionalProperties ${JSON.stringify(s.additionalProperties)}`);
          if (JSON.stringify(keys) !== JSON.stringify(req)) out.push(`${at || "/"}: required ${JSON.stringify(req)} != properties ${JSON.stringify(keys)}`);
          return out;
        }),
    },
    {
      name: "only keywords strict mode supports",
      check: (t) => strictParams(t).flatMap(([at, s]) => Object.keys(s).filter((k) => !OPENAI_STRICT_KEYWORDS.has(k)).map((k) => `${at || "/"}: ${k}`)),
    },
    {
      name: "every schema says what it is (type, anyOf, $ref, enum or const)",
      check: (t) => strictParams(t).filter(([, s]) => !["type", "anyOf", "$ref", "enum", "const"].some((k) => k in s)).map(([at]) => `${at || "/"}: untyped`),
    },
  ],
  openai: [
    onlyKeys(["type", "function"]),
    { name: 'type is "function"', check: (t) => (t.type === "function" ? [] : [`type ${t.type}`]) },
    // platform.openai.com function calling: names are a-z, A-Z, 0-9, _ and -, at most 64.
    nameRule((t) => t.function?.name, /^[a-zA-Z0-9_-]{1,64}$/),
    described((t) => t.function?.description),
    objectRoot((t) => t.function?.parameters),
  ],
  anthropic: [
    onlyKeys(["name", "description", "input_schema"]),
    // docs.anthropic.com tool use: name must match ^[a-zA-Z0-9_-]{1,64}$.
    nameRule((t) => t.name, /^[a-zA-Z0-9_-]{1,64}$/),
    described((t) => t.description),
    objectRoot((t) => t.input_schema),
  ],
  gemini: [
    onlyKeys(["name", "description", "parametersJsonSchema"]),
    // ai.google.dev FunctionDeclaration.name: starts with a letter or _, then
    // a-z, A-Z, 0-9, _, ., : or -, at most 64 characters.
    nameRule((t) => t.name, /^[a-zA-Z_][a-zA-Z0-9_.:-]{0,63}$/),
    described((t) => t.description),
    objectRoot((t) => t.parametersJsonSchema),
    {
      name: "every keyword is in the subset Gemini accepts",
      check: (t) => [...walk(t.parametersJsonSchema)].flatMap(([at, s]) => Object.keys(s).filter((k) => !GEMINI_KEYWORDS.has(k)).map((k) => `${at || "/"}: ${k}`)),
    },
  ],
  mcp: [
    onlyKeys(["name", "description", "inputSchema"]),
    // MCP 2025-06-18 spec, tool names: 1-128 characters of A-Z, a-z, 0-9, _, - and .
    nameRule((t) => t.name, /^[A-Za-z0-9_.-]{1,128}$/),
    objectRoot((t) => t.inputSchema),
  ],
};

/** Violations of a provider's rules, as "tool: rule: detail". */
function violations(format: keyof typeof RULES, tools: Json[]): string[] {
  const out: string[] = [];
  for (const rule of RULES[format]) {
    for (const t of tools) for (const v of rule.check(t)) out.push(`${t.name ?? t.function?.name}: ${rule.name}: ${v}`);
  }
  const names = tools.map((t) => t.name ?? t.function?.name);
  for (const n of new Set(names)) if (names.filter((x) => x === n).length > 1) out.push(`${n}: names are unique: duplicate`);
  return out;
}

describe("provider renderings", () => {
  let d: Toold;
  let cfgDir = "";
  const rendered: Record<string, Json[]> = {};
  const json: Record<string, string> = {};

  before(async () => {
    assert.ok(fs.existsSync(everything), `${everything} is missing: run make mcp-peers`);
    cfgDir = fs.mkdtempSync(path.join(os.tmpdir(), "toold-ts-mcp-"));
    const cfg = path.join(cfgDir, "mcp.json");
    fs.writeFileSync(cfg, JSON.stringify({ mcpServers: { everything: { command: process.execPath, args: [everything, "stdio"] } } }));
    d = await Toold.start({ mode: "auto", extra: ["--mcp-config", cfg] });
    const client = connect({ socket: d.socket });
    // The MCP server's tools join the registry once it has started.
    let ready = false;
    const deadline = Date.now() + 30_000;
    while (!ready && Date.now() < deadline) {
      ready = (await client.listTools()).tools.some((t) => t.source === "mcp:everything");
      if (!ready) await new Promise((r) => setTimeout(r, 50)); // polling ListTools, with a deadline
    }
    assert.ok(ready, `server-everything's tools did not appear:\n${d.log()}`);
    for (const format of ["openai", "anthropic", "gemini", "mcp"] as const) {
      const r = await client.listTools({ format, flatOperations: true });
      rendered[format] = r.rendered as Json[];
      json[format] = r.renderedJson;
    }
    const st = await client.listTools({ format: "openai", flatOperations: true, strict: true });
    rendered.openaiStrict = st.rendered as Json[];
    json.openaiStrict = st.renderedJson;
    await assert.rejects(client.listTools({ format: "anthropic", strict: true }), /INVALID_ARGUMENT.*strict/);
    await client.close();
  });
  after(async () => {
    await d?.stop();
    if (cfgDir) fs.rmSync(cfgDir, { recursive: true, force: true });
  });

  test("the renderings cover built-ins, flat operations and MCP tools", () => {
    const names = rendered.anthropic.map((t) => t.name);
    for (const n of ["think", "file_operations", "read_file", "run_command", "everything__echo", "everything__get-sum"]) {
      assert.ok(names.includes(n), `${n} missing from ${names.join(", ")}`);
    }
  });

  test("they type-check against the official SDKs' request types", () => {
    const diags = typecheck(sdkSource({ openai: json.openai, openaiStrict: json.openaiStrict, anthropic: json.anthropic, gemini: json.gemini }));
    assert.deepEqual(diags, []);
  });

  test("the type-check fails on renderings that break the SDKs' types", () => {
    // The check is only worth something if it can fail: each broken rendering
    // must be refused by the SDK types.
    const good = { openai: json.openai, openaiStrict: json.openaiStrict, anthropic: json.anthropic, gemini: json.gemini };
    const cases: [string, Partial<typeof good>][] = [
      ["openai: wrong type tag", { openai: JSON.stringify([{ type: "fn", function: { name: "x", parameters: {} } }]) }],
      ["openai: name missing", { openai: JSON.stringify([{ type: "function", function: { parameters: {} } }]) }],
      ["anthropic: input_schema not an object schema", { anthropic: JSON.stringify([{ name: "x", input_schema: { type: "array" } }]) }],
      ["anthropic: schema under the OpenAI key", { anthropic: JSON.stringify([{ name: "x", parameters: { type: "object" } }]) }],
      ["gemini: unknown field", { gemini: JSON.stringify([{ name: "x", inputSchema: { type: "object" } }]) }],
    ];
    for (const [what, bad] of cases) {
      assert.notDeepEqual(typecheck(sdkSource({ ...good, ...bad })), [], what);
    }
  });

  for (const format of ["openai", "openaiStrict", "anthropic", "gemini", "mcp"] as const) {
    test(`${format}: every tool keeps the provider's documented restrictions`, () => {
      assert.deepEqual(violations(format, rendered[format]), []);
    });
  }

  test("openai strict: what was optional accepts null, what was required does not change", () => {
    const loose = new Map(rendered.openai.map((t) => [t.function.name, t.function.parameters as Json]));
    const bad: string[] = [];
    for (const t of rendered.openaiStrict) {
      const before = loose.get(t.function.name)!;
      const after = t.function.parameters as Json;
      for (const [name, s] of Object.entries(after.properties ?? {}) as [string, Json][]) {
        const optional = !(before.required ?? []).includes(name);
        if (optional !== acceptsNull(s)) bad.push(`${t.function.name}.${name}: optional ${optional}, accepts null ${acceptsNull(s)}`);
      }
      // Only free-form maps may be left out (strict mode cannot express them).
      for (const [name, s] of Object.entries(before.properties ?? {}) as [string, Json][]) {
        if (!(name in (after.properties ?? {})) && !(s.type === "object" && !s.properties && s.additionalProperties)) bad.push(`${t.function.name}.${name}: dropped`);
      }
    }
    assert.deepEqual(bad, []);
  });

  test("openai strict: a call the way a strict model makes it (every property, null when unused) runs", async () => {
    fs.writeFileSync(path.join(d.workspace, "strict.txt"), "one\ntwo\nthree\n");
    const fo = rendered.openaiStrict.find((t) => t.function.name === "file_operations")!.function.parameters as Json;
    const args: Record<string, unknown> = Object.fromEntries(Object.keys(fo.properties).map((k) => [k, null]));
    Object.assign(args, { operation: "read_file", path: "strict.txt", limit: 2 });
    const client = connect({ socket: d.socket });
    const r = await client.session().call("file_operations", args);
    await client.close();
    assert.ok(r.success, r.text);
    assert.match(r.text, /two/);
    assert.doesNotMatch(r.text, /three/);
    assert.ok(r.coercions.length > 10, `${r.coercions.length} nulls removed`);
  });

  test("the restriction tables catch what they describe", () => {
    const cases: [keyof typeof RULES, Json, RegExp][] = [
      ["openai", { type: "function", function: { name: "a.b", description: "d", parameters: { type: "object" } } }, /name/],
      ["openai", { type: "function", function: { name: "a", description: "d", parameters: { anyOf: [] } } }, /root/],
      ["anthropic", { name: "x".repeat(65), description: "d", input_schema: { type: "object" } }, /name/],
      ["anthropic", { name: "a", description: "d", input_schema: { type: "object", oneOf: [] } }, /root has oneOf/],
      ["gemini", { name: "a", description: "d", parametersJsonSchema: { type: "object", properties: { n: { type: "number", exclusiveMinimum: 0 } } } }, /properties\/n: exclusiveMinimum/],
      ["gemini", { name: "a", description: "d", parametersJsonSchema: { $schema: "x", type: "object" } }, /\$schema/],
      ["gemini", { name: "1a", description: "d", parametersJsonSchema: { type: "object" } }, /name/],
      ["mcp", { name: "a", inputSchema: { type: "string" } }, /root type/],
      ["openaiStrict", { type: "function", function: { name: "a", strict: true, parameters: { type: "object", properties: { x: { type: "string" } }, required: [], additionalProperties: false } } }, /required/],
      ["openaiStrict", { type: "function", function: { name: "a", strict: true, parameters: { type: "object", properties: {}, required: [] } } }, /additionalProperties undefined/],
      ["openaiStrict", { type: "function", function: { name: "a", strict: true, parameters: { type: "object", properties: { x: { type: "string", minLength: 1 } }, required: ["x"], additionalProperties: false } } }, /minLength/],
      ["openaiStrict", { type: "function", function: { name: "a", parameters: { type: "object", properties: {}, required: [], additionalProperties: false } } }, /strict not set/],
    ];
    for (const [format, tool, want] of cases) {
      const v = violations(format, [tool]);
      assert.ok(v.some((x) => want.test(x)), `${format} ${JSON.stringify(tool)}: ${v.join("; ")}`);
    }
  });
});
