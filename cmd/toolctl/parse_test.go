package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/toold/toold/pkg/daemon/daemontest"
)

// TestParseAndPrompt drives toolctl parse and prompt against a real toold:
// calls written as text by different models come back resolved, repaired
// and checked against the built-in tools' schemas.
func TestParseAndPrompt(t *testing.T) {
	t.Parallel()
	d := daemontest.Start(t)
	reply := filepath.Join(t.TempDir(), "reply.txt")
	if err := os.WriteFile(reply, []byte("TOOL_CALL: cat(path=README.md)\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		stdin     string
		args      []string
		code      int
		stdoutHas []string
		stderrHas []string
	}{
		{
			name:      "hermes with a prefixed name and a string number",
			stdin:     "I will read it.\n<tool_call>\n{\"name\": \"functions.read_file\", \"arguments\": {\"path\": \"main.go\", \"limit\": \"5\"}}\n</tool_call><|im_end|>",
			args:      []string{"parse"},
			stdoutHas: []string{"call 1 (hermes): functions.read_file", "runs:  file_operations.read_file", `"limit":5`, "fixed: name", "fixed: /limit \"5\" -> 5 (string to integer)"},
			stderrHas: []string{"text: I will read it."},
		},
		{
			name:      "llama json as protojson",
			stdin:     `<|python_tag|>{"name": "bash", "parameters": {"command": "ls", "is_background": "False"}}<|eom_id|>`,
			args:      []string{"parse", "--json"},
			stdoutHas: []string{`"terminal_operations"`, `"run_command"`, `"TEXT_CALL_FORMAT_LLAMA3"`, `"string to boolean"`, `is toold's run_command`},
		},
		{
			name:      "legacy line from a file",
			args:      []string{"parse", "--format", "legacy", reply},
			stdoutHas: []string{"runs:  file_operations.read_file {\"path\":\"README.md\"}", `"cat" is toold's read_file`},
		},
		{
			name:      "a call that would fail names the fix",
			stdin:     "[TOOL_CALLS] [{\"name\": \"file_operations.raed_file\", \"arguments\": {\"path\": \"a\"}}]",
			args:      []string{"parse"},
			code:      exitFailure,
			stdoutHas: []string{"error: ERROR_CODE_TOOL_NOT_FOUND", `did you mean "file_operations.read_file"`},
		},
		{name: "no calls", stdin: "Just an answer.", args: []string{"parse"}, stdoutHas: []string{"no tool calls"}, stderrHas: []string{"text: Just an answer."}},
		{name: "unknown format", stdin: "x", args: []string{"parse", "--format", "klingon"}, code: exitUsage, stderrHas: []string{"want auto, hermes"}},
		{name: "prompt hermes", args: []string{"prompt", "--format", "qwen"}, stdoutHas: []string{"<tools>", `"name":"file_operations"`, "<tool_call>"}},
		{name: "prompt tool_code flat", args: []string{"prompt", "--format", "gemma", "--flat"}, stdoutHas: []string{"```tool_code```", "def read_file(path: str"}},
		{name: "prompt needs a format", args: []string{"prompt"}, code: exitUsage, stderrHas: []string{"--format is required"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := cli{stdin: tt.stdin}.run(t, append([]string{"--socket", d.Socket}, tt.args...)...)
			r.check(t, tt.code, tt.stdoutHas, tt.stderrHas)
		})
	}
}
