#!/usr/bin/env python3
"""Extracts the upstream tool definitions the dialects follow into
pkg/tools/dialect/upstream/<dialect>.json (see README.md there).

Usage: extract.py OUTDIR GEMINI_GIT SWEAGENT_GIT OPENHANDS_GIT CLAUDE_SDK_TOOLS_D_TS
       extract.py host OUTDIR codex|gemini-cli|claude-code DUMP [CLAUDE_SDK_TOOLS_D_TS]
where *_GIT are git directories of the upstream repositories (a bare clone
is enough) and the last argument is sdk-tools.d.ts of the npm package
@anthropic-ai/claude-code at the version followed. codex's definitions are
transcribed by hand into codex.json (Rust source; see README.md).

The second form takes the definitions codex's and gemini-cli's pinned
releases (testdata/hosts) send their model, from a dump of the requests
the scripted model received (MCPHOSTS_DUMP=FILE go test -run
TestHostDialects ./pkg/mcpserver/mcphosts/): the tools of the largest
request, as sent. Both hosts are Apache-2.0. For claude-code only the
facts are kept (as for sdk-tools.d.ts below): names, types, enums,
required, short parameter descriptions; the tools the host does not offer
headless come from sdk-tools.d.ts of the same release.
"""
import json, os, re, subprocess, sys, types

GEMINI_COMMIT = "00edcf0372af4280a31e57dc76f6830346eb945c"
SWEAGENT_COMMIT = "3ea751c087f32b16e039a2233dd6eefecef325d5"
OPENHANDS_COMMIT = "156d0686c46aafb0fa9d291da6421fb6f64dddc0"
CLAUDE_VERSION = "2.1.332"


def show(git, commit, path):
    return subprocess.run(["git", "--git-dir", git, "show", f"{commit}:{path}"],
                          check=True, capture_output=True, text=True).stdout


def write(outdir, name, doc):
    with open(os.path.join(outdir, name + ".json"), "w") as f:
        json.dump(doc, f, indent=1, ensure_ascii=False, sort_keys=True)
        f.write("\n")


def pretty(text):
    """Parses vitest's pretty-format output: JSON-like, a trailing comma
    after every entry, strings printed raw (quotes inside not escaped), so
    a string ends at the quote before its line's closing comma."""
    pos = 0

    def ws():
        nonlocal pos
        while text[pos] in " \n":
            pos += 1

    def value():
        nonlocal pos
        ws()
        c = text[pos]
        if c == "{":
            pos += 1
            out = {}
            while True:
                ws()
                if text[pos] == "}":
                    pos += 1
                    return out
                k = value()
                assert text[pos] == ":", text[pos:pos + 40]
                pos += 1
                out[k] = value()
                assert text[pos] == ",", text[pos:pos + 40]
                pos += 1
        if c == "[":
            pos += 1
            out = []
            while True:
                ws()
                if text[pos] == "]":
                    pos += 1
                    return out
                out.append(value())
                assert text[pos] == ",", text[pos:pos + 40]
                pos += 1
        if c == '"':
            end = min(i for i in (text.find('",\n', pos + 1), text.find('": ', pos + 1)) if i > 0)
            v = text[pos + 1:end]
            pos = end + 1
            return v
        m = re.compile(r"-?\d+(\.\d+)?|true|false|null").match(text, pos)
        pos = m.end()
        return json.loads(m.group(0))

    return value()


def gemini(git):
    path = "packages/core/src/tools/definitions/__snapshots__/coreToolsModelSnapshots.test.ts.snap"
    snap = show(git, GEMINI_COMMIT, path)
    tools = []
    for m in re.finditer(r"exports\[`coreTools snapshots for specific models > Model: gemini-2\.5-pro > snapshot for tool: (\w+) 1`\] = `\n(.*?)\n`;", snap, re.S):
        key, body = m.group(1), m.group(2)
        if key in ("activate_skill_empty", "activate_skill_single", "grep_search_ripgrep"):
            continue
        body = re.sub(r"\\([\\`$])", r"\1", body)  # the template literal's escapes
        d = pretty(body)
        tools.append({"name": d["name"], "description": d["description"], "parameters": d["parametersJsonSchema"]})
    return {"dialect": "gemini-cli", "license": "Apache-2.0",
            "source": f"google-gemini/gemini-cli@{GEMINI_COMMIT} {path} (model gemini-2.5-pro)",
            "tools": tools}


def sweagent(git):
    import yaml
    tools = []
    # The bash tool is built in (sweagent/tools/commands.py BASH_COMMAND).
    tools.append({"name": "bash", "description": "runs the given command directly in bash",
                  "parameters": {"type": "object", "properties": {"command": {"type": "string", "description": "The bash command to execute."}}, "required": ["command"]}})
    for bundle in ("edit_anthropic", "search", "windowed", "windowed_edit_replace", "submit"):
        cfg = yaml.safe_load(show(git, SWEAGENT_COMMIT, f"tools/{bundle}/config.yaml"))
        for name, t in cfg["tools"].items():
            # As sweagent/tools/commands.py get_function_calling_tool builds it;
            # {WINDOW} is the windowed bundle's default, 100 (install.sh).
            doc = (t.get("docstring") or "").replace("{WINDOW}", "100")
            props, req = {}, []
            for a in t.get("arguments") or []:
                p = {"type": a["type"], "description": a["description"]}
                if a.get("items"):
                    p["items"] = a["items"]
                if a.get("enum"):
                    p["enum"] = a["enum"]
                props[a["name"]] = p
                if a.get("required"):
                    req.append(a["name"])
            params = {"type": "object", "properties": props, "required": req} if props else {"type": "object"}
            tools.append({"name": name, "description": doc, "parameters": params, "bundle": bundle})
    return {"dialect": "swe-agent", "license": "MIT",
            "source": f"SWE-agent/SWE-agent@{SWEAGENT_COMMIT} tools/*/config.yaml (edit_anthropic, search, windowed, windowed_edit_replace, submit) and sweagent/tools/commands.py BASH_COMMAND, as get_function_calling_tool presents them",
            "tools": tools}


def openhands(git):
    import tempfile
    tmp = tempfile.mkdtemp()
    files = ["openhands/agenthub/codeact_agent/tools/" + f for f in
             ("bash.py", "str_replace_editor.py", "think.py", "finish.py", "browser.py", "ipython.py",
              "task_tracker.py", "prompt.py", "security_utils.py")] + ["openhands/llm/tool_names.py"]
    for f in files:
        os.makedirs(os.path.join(tmp, os.path.dirname(f)), exist_ok=True)
        with open(os.path.join(tmp, f), "w") as out:
            out.write(show(git, OPENHANDS_COMMIT, f))
    for d in ("openhands", "openhands/agenthub", "openhands/agenthub/codeact_agent", "openhands/agenthub/codeact_agent/tools", "openhands/llm"):
        open(os.path.join(tmp, d, "__init__.py"), "a").close()
    sys.path.insert(0, tmp)
    # Stand-ins for the imports the definitions need (litellm's TypedDicts,
    # the sandbox mount path, the browsergym action set).
    lit = types.ModuleType("litellm")
    lit.ChatCompletionToolParam = dict
    lit.ChatCompletionToolParamFunctionChunk = dict
    sys.modules["litellm"] = lit
    for m in ("openhands.core", "openhands.core.config"):
        sys.modules[m] = types.ModuleType(m)
    cu = types.ModuleType("openhands.core.config.config_utils")
    cu.DEFAULT_WORKSPACE_MOUNT_PATH_IN_SANDBOX = "/workspace"
    sys.modules["openhands.core.config.config_utils"] = cu
    import importlib
    mod = lambda n: importlib.import_module("openhands.agenthub.codeact_agent.tools." + n)
    os.environ.pop("SANDBOX_VOLUMES", None)
    defs = [mod("bash").create_cmd_run_tool(), mod("think").ThinkTool, mod("finish").FinishTool,
            mod("ipython").IPythonTool, mod("task_tracker").create_task_tracker_tool(False),
            mod("str_replace_editor").create_str_replace_editor_tool()]
    try:
        defs.append(mod("browser").BrowserTool)
    except Exception as e:  # browsergym is not installed: the name only
        print("browser:", e, file=sys.stderr)
    tools = []
    for d in defs:
        fn = d["function"]
        tools.append({"name": fn["name"], "description": fn["description"], "parameters": fn["parameters"]})
    return {"dialect": "openhands", "license": "MIT",
            "source": f"All-Hands-AI/OpenHands@{OPENHANDS_COMMIT} (0.62.0) openhands/agenthub/codeact_agent/tools (the detailed descriptions, Linux)",
            "tools": tools}


# Claude Code: proprietary. Names, parameter names, types, enums and
# required are facts of the interface; a parameter description is kept
# only when it is one short functional sentence (at most 120 characters),
# longer ones are not reproduced (see docs/dialects.md). Tool-level
# descriptions (the prompts in the binary) are not reproduced.
CLAUDE_TOOLS = [("Bash", "BashInput"), ("TaskOutput", "TaskOutputInput"), ("TaskStop", "TaskStopInput"),
                ("Read", "FileReadInput"), ("Write", "FileWriteInput"), ("Edit", "FileEditInput"),
                ("Glob", "GlobInput"), ("Grep", "GrepInput"), ("TodoWrite", "TodoWriteInput"),
                ("WebFetch", "WebFetchInput"), ("WebSearch", "WebSearchInput"), ("AskUserQuestion", "AskUserQuestionInput"),
                ("Agent", "AgentInput"), ("NotebookEdit", "NotebookEditInput"), ("ExitPlanMode", "ExitPlanModeInput"),
                ("ListMcpResourcesTool", "ListMcpResourcesInput")]
CLAUDE_DESC_MAX = 120


def ts_type(t):
    t = t.strip().lstrip("|").strip()
    if t.endswith("[]") or t.startswith("Array<") or t.startswith("["):
        return {"type": "array"}
    if t.startswith("{"):
        return {"type": "object"}
    lits = [x.strip() for x in t.split("|")]
    if all(re.fullmatch(r'"[^"]*"', x) for x in lits):
        return {"type": "string", "enum": [x.strip('"') for x in lits]}
    return {"type": {"string": "string", "number": "number", "boolean": "boolean"}.get(lits[0], lits[0])}


def claude(path):
    src = open(path).read()
    tools = []
    for name, iface in CLAUDE_TOOLS:
        m = re.search(r"export interface " + iface + r" \{\n(.*?)\n\}\n", src, re.S)
        body = m.group(1) if m else ""
        props, req = {}, []
        # Top-level members: two-space indent, optional JSDoc before.
        for pm in re.finditer(r'(?:  /\*\*\n((?:   \*.*\n)+?)   \*/\n)?  ("?[\w-]+"?)(\??):\s*((?:[^;]|;(?!\n  [\w"/]|\n$))*?);\n(?=  [\w"/]|$)', body + "\n"):
            doc, key, opt, typ = pm.groups()
            key = key.strip('"')
            p = ts_type(typ)
            if doc:
                text = " ".join(l.strip()[1:].strip() for l in doc.splitlines() if not l.strip()[1:].strip().startswith("@")).strip()
                p["description"] = text if len(text) <= CLAUDE_DESC_MAX else None
            props[key] = p
            if not opt:
                req.append(key)
        tools.append({"name": name, "parameters": {"type": "object", "properties": props, "required": req}})
    return {"dialect": "claude-code", "license": "proprietary (© Anthropic PBC): facts only, see docs/dialects.md",
            "source": f"@anthropic-ai/claude-code {CLAUDE_VERSION} sdk-tools.d.ts",
            "tools": tools}


HOSTS = {
    "codex": ("@openai/codex 0.171.0 (npm), the tools `codex exec` sends the Responses API for model gpt-5.5", "Apache-2.0"),
    "claude-code": (f"@anthropic-ai/claude-code {CLAUDE_VERSION} (npm), the tools `claude -p` sends the Messages API (facts only), and sdk-tools.d.ts for those it does not offer headless",
                    "proprietary (© Anthropic PBC): facts only, see docs/dialects.md"),
    "gemini-cli": ("@google/gemini-cli 0.61.0 (npm), the functionDeclarations `gemini -p --approval-mode yolo` sends the Gemini API", "Apache-2.0"),
}

# Tools the pinned hosts define but do not offer a headless run (gemini -p
# hides the interactive ones): kept from the definitions before, marked
# "headless": false.
HIDDEN = {"claude-code": ["Glob", "Grep", "TodoWrite", "AskUserQuestion", "ExitPlanMode", "ListMcpResourcesTool"],
          "gemini-cli": ["ask_user", "write_todos", "read_many_files", "get_internal_docs", "exit_plan_mode"]}

# codex's freeform apply_patch as codex declares it for models without
# freeform tools (codex-rs apply_patch_tool_type "function"): the patch
# is its "input".
APPLY_PATCH_INPUT = {"type": "object", "properties": {"input": {"type": "string",
    "description": "The entire contents of the apply_patch command"}}, "required": ["input"], "additionalProperties": False}


def claude_facts(schema):
    """A Claude Code input schema reduced to the interface's facts."""
    props = {}
    for k, p in (schema.get("properties") or {}).items():
        f = {x: p[x] for x in ("type", "enum") if x in p}
        d = p.get("description")
        if d is not None:
            f["description"] = d if len(d) <= CLAUDE_DESC_MAX else None
        props[k] = f
    return {"type": "object", "properties": props, "required": schema.get("required", [])}


def host(dialect, dump, dts=None):
    best = []
    for block in open(dump).read().split("\n\n"):
        head, _, body = block.partition("\n")
        try:
            req = json.loads(body)
        except ValueError:
            continue
        found = []
        for t in req.get("tools") or []:
            if dialect == "claude-code":
                if "input_schema" not in t:
                    continue  # another host's request in the same dump
                found.append({"name": t["name"], "parameters": claude_facts(t.get("input_schema") or {})})
            elif dialect == "gemini-cli":
                for f in t.get("functionDeclarations") or []:
                    found.append({"name": f["name"], "description": f.get("description", ""),
                                  "parameters": f.get("parametersJsonSchema") or f.get("parameters") or {"type": "object", "properties": {}}})
            elif "input_schema" in t or "functionDeclarations" in t:
                continue  # another host's request in the same dump
            elif t.get("type") == "function":
                found.append({"name": t["name"], "description": t.get("description", ""), "parameters": t["parameters"]})
            elif t.get("type") == "custom":
                found.append({"name": t["name"], "description": t.get("description", ""), "kind": "custom",
                              "format": t.get("format"), "parameters": APPLY_PATCH_INPUT})
            elif t.get("type") == "tool_search":
                found.append({"name": "tool_search", "description": t.get("description", ""), "kind": "tool_search",
                              "parameters": t["parameters"]})
            # hosted tools (web_search) run at the provider, not in codex: not a dialect's
        if len(found) > len(best):
            best = found
    # The tools the host defines but does not offer headless are kept from
    # the definitions checked in before (the interactive host offers them).
    names = {t["name"] for t in best}
    try:
        before = json.load(open(os.path.join(os.path.dirname(os.path.abspath(__file__)), dialect + ".json")))["tools"]
    except (OSError, ValueError):
        before = []
    if dialect == "claude-code":
        before = claude(dts)["tools"]
    for t in before:
        if t["name"] in HIDDEN.get(dialect, ()) and t["name"] not in names:
            best.append(dict(t, headless=False))
    src, lic = HOSTS[dialect]
    return {"dialect": dialect, "license": lic, "source": src, "tools": best}


if __name__ == "__main__":
    if sys.argv[1] == "host":
        out, dialect, dump = sys.argv[2:5]
        write(out, dialect, host(dialect, dump, *sys.argv[5:6]))
        sys.exit(0)
    out, gem, swe, oh, cc = sys.argv[1:6]
    write(out, "gemini-cli", gemini(gem))
    write(out, "swe-agent", sweagent(swe))
    write(out, "openhands", openhands(oh))
    write(out, "claude-code", claude(cc))
