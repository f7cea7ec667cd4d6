// The TypeScript snippet of the README's "Clients" section, type-checked and
// run verbatim against a real toold.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import { test } from "node:test";
import ts from "typescript";
import { Toold } from "../src/testing.js";

const pkgDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", ".."); // from dist-test/test
const repo = path.resolve(pkgDir, "..", "..");

function readmeSnippet(lang: string): string {
  const text = fs.readFileSync(path.join(repo, "README.md"), "utf8");
  const section = text.split("\n## Clients\n")[1].split("\n## ")[0];
  const m = new RegExp("```" + lang + "\\n([\\s\\S]*?)```").exec(section);
  assert.ok(m, `no ${lang} snippet in the README's Clients section`);
  return m[1];
}

test("the README's TypeScript snippet type-checks and runs", async () => {
  const code = readmeSnippet("ts");
  assert.ok(code.trim().split("\n").length <= 15);
  // Inside the package, so "@toold/client" resolves to this package (self-reference).
  const dir = fs.mkdtempSync(path.join(pkgDir, ".typecheck-readme-"));
  const d = await Toold.start({ mode: "auto" });
  try {
    fs.writeFileSync(path.join(dir, "snippet.ts"), code);
    const program = ts.createProgram([path.join(dir, "snippet.ts")], {
      target: ts.ScriptTarget.ES2022,
      module: ts.ModuleKind.NodeNext,
      moduleResolution: ts.ModuleResolutionKind.NodeNext,
      strict: true,
      noEmit: true,
      skipLibCheck: true,
      types: ["node"],
    });
    const diags = ts.getPreEmitDiagnostics(program).map((x) => ts.flattenDiagnosticMessageText(x.messageText, "\n"));
    assert.deepEqual(diags, []);

    // The same text runs as JavaScript: it has no type annotations.
    fs.writeFileSync(path.join(dir, "snippet.mjs"), code);
    fs.writeFileSync(path.join(d.workspace, "README.md"), Array.from({ length: 10 }, (_, i) => `readme line ${i + 1}\n`).join(""));
    const env: NodeJS.ProcessEnv = { ...process.env, TOOLD_SOCKET: d.socket };
    delete env.TOOLD_TOKEN;
    const out = spawnSync(process.execPath, [path.join(dir, "snippet.mjs")], { cwd: d.dir, env, encoding: "utf8", timeout: 120_000 });
    assert.equal(out.status, 0, out.stderr);
    assert.match(out.stdout, /\d+ tools;/);
    assert.match(out.stdout, /readme line 5/);
    assert.doesNotMatch(out.stdout, /readme line 6/);
    const after = out.stdout.split("exit 0")[1];
    assert.ok(after?.includes("README.md"), out.stdout);
  } finally {
    await d.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
