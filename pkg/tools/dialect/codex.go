package dialect

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/toold/toold/pkg/errdefs"

	"github.com/toold/toold/pkg/tools"
)

// CodexVersion is what the codex dialect follows: openai/codex at commit
// b8a1c8f8c4671c9a534eede7f32f11f5c9a5f938, codex-rs/core/src/tools/spec.rs
// (shell with an argv array, workdir, timeout_ms and the sandbox
// approval parameters; shell_command; view_image) and handlers/plan.rs
// (update_plan), as checked in under upstream/codex.json; its shell result
// is the JSON {"output", "metadata": {"exit_code", "duration_seconds"}} of
// format_exec_output_for_model_structured (codex-rs/core/src/tools/mod.rs),
// with "command timed out after N milliseconds" first when the command
// ran out of time (build_content_with_timeout).
const CodexVersion = "openai/codex@b8a1c8f8c4671c9a534eede7f32f11f5c9a5f938 (codex-rs/core/src/tools/spec.rs, handlers/plan.rs, tools/mod.rs)"

// Codex is codex's tool set.
func Codex() tools.Dialect {
	return adopt(tools.Dialect{
		Name: "codex", Agent: "codex", Version: CodexVersion,
		Tools: []tools.DialectTool{
			{
				Name:        "shell",
				Description: "Runs a shell command and returns its output.",
				Schema: schema(`{"type":"object","properties":{
"command":{"type":"array","items":{"type":"string"},"description":"The command to execute"},
"workdir":{"type":"string","description":"The working directory to execute the command in"},
"timeout_ms":{"type":"number","description":"The timeout for the command in milliseconds"}},"required":["command"],"additionalProperties":false}`),
				Legacy: []string{"sandbox_permissions", "justification", "prefix_rule", "with_escalated_permissions"},
				Target: "run_command",
				Map:    steps(argvCommand, codexCommon),
				Shape:  codexShape,
			},
			{
				Name:        "shell_command",
				Description: "Runs a shell script (a string) in the user's default shell and returns its output.",
				Schema: schema(`{"type":"object","properties":{
"command":{"type":"string","description":"The shell script to execute"},
"workdir":{"type":"string","description":"The working directory to execute the command in"},
"timeout_ms":{"type":"number","description":"The timeout for the command in milliseconds"}},"required":["command"],"additionalProperties":false}`),
				Legacy: []string{"sandbox_permissions", "justification", "prefix_rule", "with_escalated_permissions", "login"},
				Target: "run_command",
				Map:    steps(codexCommon, drop("login", "toold's bash runs without a login shell's profile")),
				Shape:  codexShape,
			},
			{
				Name:        "apply_patch",
				Description: "Edits files with a patch in the apply_patch format (*** Begin Patch … *** End Patch).",
				Schema:      schema(`{"type":"object","properties":{"input":{"type":"string","description":"The entire contents of the apply_patch command"}},"required":["input"],"additionalProperties":false}`),
				Target:      "apply_patch",
			},
			{
				Name:        "update_plan",
				Description: "Updates the task plan: a list of steps, each pending, in_progress or completed.",
				Schema: schema(`{"type":"object","properties":{
"explanation":{"type":"string"},
"plan":{"type":"array","description":"The list of steps","items":{"type":"object","properties":{"step":{"type":"string"},"status":{"type":"string","description":"One of: pending, in_progress, completed"}},"required":["step","status"],"additionalProperties":false}}},"required":["plan"],"additionalProperties":false}`),
				Target: "manage_todos",
				Map: func(args map[string]any) ([]tools.Coercion, error) {
					cs, _ := drop("explanation", "the explanation is for the person; the plan's steps are kept")(args)
					if p, ok := args["plan"]; ok {
						delete(args, "plan")
						args["todos"] = p
					}
					more, err := todoMap("step", "status", map[string]string{"pending": "pending", "in_progress": "in_progress", "completed": "completed"})(args)
					return append(cs, more...), err
				},
			},
			{
				Name:        "view_image",
				Description: "Attaches a local image to the conversation.",
				Schema:      schema(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`),
				Missing:     "toold returns text only: it cannot attach images (read_file describes a binary file)",
			},
		},
	})
}

// argvCommand joins shell's argv into one command line for bash: a
// ["bash", "-lc", script] call is the script itself; other argv words are
// quoted.
func argvCommand(args map[string]any) ([]tools.Coercion, error) {
	v, ok := args["command"]
	if !ok {
		return nil, nil
	}
	list, isList := v.([]any)
	if !isList {
		if s, isStr := v.(string); isStr { // a model that sent a string
			return []tools.Coercion{{Field: "/command", From: js(s), To: js(s), Rule: "a command line instead of an argv array; run as written"}}, nil
		}
		return nil, invalid("command", "\"command\" is an argv array of strings, e.g. [\"bash\", \"-lc\", \"ls\"]")
	}
	words := make([]string, len(list))
	for i, w := range list {
		s, isStr := w.(string)
		if !isStr {
			return nil, invalid("command", "\"command\" is an argv array of strings; item %d is %s", i, js(w))
		}
		words[i] = s
	}
	if len(words) == 0 {
		return nil, invalid("command", "\"command\" is empty")
	}
	var line string
	if len(words) == 3 && (words[0] == "bash" || words[0] == "sh" || words[0] == "/bin/bash" || words[0] == "/bin/sh" || words[0] == "zsh") && (words[1] == "-lc" || words[1] == "-c") {
		line = words[2]
	} else {
		q := make([]string, len(words))
		for i, w := range words {
			q[i] = shellQuote(w)
		}
		line = strings.Join(q, " ")
	}
	args["command"] = line
	return []tools.Coercion{{Field: "/command", From: tools.Clip(js(list), 80), To: tools.Clip(js(line), 80), Rule: "codex's argv array as one bash command line"}}, nil
}

// shellQuote quotes s for bash when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=:,+@%", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// codexCommon maps the arguments shell and shell_command share.
var codexCommon = steps(
	rename("workdir", "working_dir"),
	msToSeconds("timeout_ms", "timeout"),
	rename("with_escalated_permissions", "outside_sandbox"), // only asks: a person approves that one call outside the sandbox
	codexSandboxPermissions,
	drop("justification", "the justification goes with sandbox_permissions; removed (toold shows the person the exact command)"),
	drop("prefix_rule", "toold's policy decides which commands run unasked; removed"),
)

// codexShape gives shell's result as codex returns it to the model: JSON
// {"output": ..., "metadata": {"exit_code": N, "duration_seconds": S}}.
func codexShape(orig map[string]any, res *tools.Result, err error) (*tools.Result, error) {
	out, exit, _, secs, ok := commandOutput(res)
	timedOut := errors.Is(err, errdefs.ErrTimeout)
	if !ok || err != nil && !timedOut {
		return res, err
	}
	if timedOut {
		// build_content_with_timeout: the limit first, then what the
		// command printed; the call still ends TIMEOUT.
		ms := secs * 1000
		if n, has := number(orig["timeout_ms"]); has {
			ms = n
		}
		out = fmt.Sprintf("command timed out after %d milliseconds\n%s", int64(ms), out)
	}
	type meta struct {
		ExitCode        int     `json:"exit_code"`
		DurationSeconds float64 `json:"duration_seconds"`
	}
	b, _ := json.Marshal(struct {
		Output   string `json:"output"`
		Metadata meta   `json:"metadata"`
	}{out, meta{exit, secs}})
	return withText(res, string(b)), err
}

// codexSandboxPermissions maps codex's sandbox_permissions:
// "require_escalated" asks to run outside the sandbox (toold's
// outside_sandbox, which only asks a person for that one call); the
// default ("use_default") is removed.
func codexSandboxPermissions(args map[string]any) ([]tools.Coercion, error) {
	v, ok := args["sandbox_permissions"]
	if !ok {
		return nil, nil
	}
	delete(args, "sandbox_permissions")
	if v == "require_escalated" {
		if _, both := args["outside_sandbox"]; !both {
			args["outside_sandbox"] = true
			return []tools.Coercion{{Field: "/sandbox_permissions", From: js(v), To: "true",
				Rule: `"require_escalated" is toold's outside_sandbox: a person approves this one call outside the sandbox`}}, nil
		}
	}
	return []tools.Coercion{{Field: "/sandbox_permissions", From: js(v), Rule: "at its default; removed"}}, nil
}
