package dialect

import (
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/toold/toold/pkg/errdefs"

	"github.com/toold/toold/pkg/tools"
)

// CodexVersion is what the codex dialect follows: the tools @openai/codex
// 0.171.0 sends the Responses API for its models (gpt-5.5; captured from
// the pinned host by pkg/mcpserver/mcphosts TestHostDialects into
// upstream/codex.json): exec_command and write_stdin (unified exec),
// apply_patch (a freeform tool: the patch as raw text, "input" here),
// request_user_input, view_image, the goal tools and tool_search. The
// tools of earlier releases (shell with an argv array, shell_command,
// update_plan; openai/codex@b8a1c8f8c4671c9a534eede7f32f11f5c9a5f938)
// are still run, not listed. exec_command's result is codex's: "Chunk
// ID", "Wall time", "Process exited with code N", "Original token count",
// then "Output:" and the output.
const CodexVersion = "@openai/codex 0.171.0 (the tools codex exec sends gpt-5.5; checked against the release in testdata/hosts)"

// Codex is codex's tool set.
func Codex() tools.Dialect {
	return adopt(tools.Dialect{
		Name: "codex", Agent: "codex", Version: CodexVersion,
		Tools: []tools.DialectTool{
			{
				Name:        "exec_command",
				Description: "Runs a command and returns its output.",
				Schema:      schema(`{"type":"object","properties":{"cmd":{"type":"string"}},"required":["cmd"]}`),
				Target:      "run_command",
				Map: steps(rename("cmd", "command"), codexCommon,
					drop("yield_time_ms", "toold runs the command to its end (or its timeout) and returns all its output at once"),
					drop("max_output_tokens", "toold limits the output it returns by its own limits and says when it cut"),
					drop("login", "toold's bash runs without a login shell's profile"),
					dropIf("tty", []any{false}, "toold runs commands with pipes, not a terminal: run it without tty (toold's terminal sessions are its own tools)"),
					codexShell),
				Shape: codexExecShape,
			},
			{
				Name:        "write_stdin",
				Description: "Reads (or writes to) a running command's session.",
				Schema:      schema(`{"type":"object","properties":{"session_id":{"type":"number"}},"required":["session_id"]}`),
				Target:      "get_output",
				Map: steps(pidString2("session_id"), rename("session_id", "process_id"), msToWait("yield_time_ms"),
					dropIf("chars", []any{""}, "toold cannot write to a running command's stdin: run it again with its input in the command line (a here-document or a pipe)"),
					drop("max_output_tokens", "toold limits the output it returns by its own limits and says when it cut")),
			},
			{
				Name:        "request_user_input",
				Description: "Asks the user a question.",
				Schema:      schema(`{"type":"object","properties":{"questions":{"type":"array"}},"required":["questions"]}`),
				Target:      "user_collaboration",
				Map:         askMap,
			},
			{
				Name: "shell", Earlier: true,
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
				Name: "shell_command", Earlier: true,
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
				Shape:       codexPatchShape,
			},
			{
				Name: "update_plan", Earlier: true,
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
			{
				Name: "get_goal", Description: "Reads the session's goal.",
				Schema: schema(`{"type":"object","properties":{}}`), Missing: noGoals,
			},
			{
				Name: "create_goal", Description: "Starts pursuing a goal.",
				Schema: schema(`{"type":"object","properties":{"objective":{"type":"string"}},"required":["objective"]}`), Missing: noGoals,
			},
			{
				Name: "update_goal", Description: "Sets the goal's status.",
				Schema: schema(`{"type":"object","properties":{"status":{"type":"string"}},"required":["status"]}`), Missing: noGoals,
			},
			{
				Name: "tool_search", Description: "Searches codex's deferred tools.",
				Schema:  schema(`{"type":"object","properties":{"query":{"type":"string"}},"required":["query"]}`),
				Missing: "toold lists every tool it offers up front: none is deferred, there is nothing to search for",
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

// noGoals answers codex's goal tools.
const noGoals = "toold keeps no goal across turns: state the objective and its status in your reply"

// codexShell: exec_command's shell, when it is a POSIX shell, is toold's
// bash; another shell is refused.
func codexShell(args map[string]any) ([]tools.Coercion, error) {
	v, ok := args["shell"]
	if !ok {
		return nil, nil
	}
	s, _ := v.(string)
	switch strings.TrimPrefix(strings.TrimPrefix(s, "/usr"), "/bin/") {
	case "bash", "sh", "zsh", "dash":
		delete(args, "shell")
		return []tools.Coercion{{Field: "/shell", From: js(v), Rule: "toold runs commands with bash"}}, nil
	}
	return nil, invalid("shell", "toold runs commands with bash: drop shell (or run %s -c '…' inside the command)", s)
}

// pidString2 turns a numeric id argument into toold's string process id.
func pidString2(key string) mapper {
	return func(args map[string]any) ([]tools.Coercion, error) {
		v, ok := args[key]
		if !ok {
			return nil, nil
		}
		if _, isStr := v.(string); isStr {
			return nil, nil
		}
		s := strings.TrimSpace(fmt.Sprint(v))
		args[key] = s
		return []tools.Coercion{{Field: "/" + key, From: js(v), To: js(s), Rule: "toold's process ids are strings"}}, nil
	}
}

// codexExecShape gives exec_command's result as codex 0.171.0 returns it
// to the model:
//
//	Chunk ID: 4f1c2a
//	Wall time: 0.0123 seconds
//	Process exited with code 3
//	Original token count: 2
//	Output:
//	out
//	err
//
// (the token count is codex's estimate, a token per 4 bytes; the chunk id
// is six hexadecimal digits, random).
func codexExecShape(_ map[string]any, res *tools.Result, err error) (*tools.Result, error) {
	out, exit, _, secs, ok := commandOutput(res)
	timedOut := errors.Is(err, errdefs.ErrTimeout)
	if !ok || err != nil && !timedOut {
		return res, err
	}
	var id [3]byte
	rand.Read(id[:])
	var b strings.Builder
	fmt.Fprintf(&b, "Chunk ID: %x\nWall time: %.4f seconds\n", id, secs)
	fmt.Fprintf(&b, "Process exited with code %d\n", exit)
	fmt.Fprintf(&b, "Original token count: %d\nOutput:\n%s", (len(out)+3)/4, out)
	return withText(res, b.String()), err
}

// codexPatchShape gives apply_patch's result as codex 0.171.0 returns it
// to the model: the exec framing (exit code 0, wall time, "Output:") around
// the list of files changed; toold's line counts and diff go (codex shows
// the model none).
func codexPatchShape(_ map[string]any, res *tools.Result, err error) (*tools.Result, error) {
	if err != nil || res == nil {
		return res, err
	}
	summary, _, _ := strings.Cut(res.Text, "\n(")
	if !strings.HasPrefix(summary, "Success.") {
		return res, nil
	}
	return withText(res, fmt.Sprintf("Exit code: 0\nWall time: %.4f seconds\nOutput:\n%s\n", 0.0, strings.TrimRight(summary, "\n"))), nil
}
