package main

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"

	pb "github.com/toold/toold/gen/toold/v1"
	"github.com/toold/toold/pkg/daemon/daemontest"
)

func TestTools(t *testing.T) {
	t.Parallel()
	d := daemontest.Start(t)
	tests := []struct {
		name  string
		args  []string
		check func(t *testing.T, stdout string)
	}{
		{"table", nil, func(t *testing.T, out string) {
			lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
			if !strings.HasPrefix(lines[0], "NAME") || !strings.Contains(lines[0], "RISK") {
				t.Errorf("no header: %q", lines[0])
			}
			want := [][]string{
				{"think", "low", "builtin", "Think out loud"},
				{"file_operations", "high", "builtin"}, // its highest operation (delete_path)
				{"read_file", "low", "Read a text file."},
				{"list_dir", "low"},
				{"glob", "low"},
				{"grep_search", "low"},
			}
			// The listing starts with these; later tools may follow.
			if len(lines) < len(want)+1 {
				t.Fatalf("%d lines, want at least %d:\n%s", len(lines), len(want)+1, out)
			}
			for i, fields := range want {
				line := lines[i+1]
				for _, f := range fields {
					if !strings.Contains(line, f) {
						t.Errorf("line %d %q lacks %q", i+1, line, f)
					}
				}
				if isOp := i >= 2; isOp != strings.HasPrefix(line, "  ") {
					t.Errorf("line %d %q: operations are indented, tools are not", i+1, line)
				}
			}
		}},
		{"json", []string{"--json"}, func(t *testing.T, out string) {
			var resp pb.ListToolsResponse
			if err := protojson.Unmarshal([]byte(out), &resp); err != nil {
				t.Fatalf("not a ListToolsResponse: %v\n%s", err, out)
			}
			var names []string
			for _, tool := range resp.GetTools() {
				names = append(names, tool.GetName())
			}
			if len(names) < 2 || !slices.Equal(names[:2], []string{"think", "file_operations"}) {
				t.Errorf("tools %v", names)
			}
			if ops := resp.GetTools()[1].GetOperations(); len(ops) < 4 || ops[0].GetName() != "read_file" {
				t.Errorf("file_operations operations: %v", ops)
			}
			if resp.GetRenderedJson() != "" {
				t.Errorf("rendered_json without --format: %s", resp.GetRenderedJson())
			}
		}},
		{"json with format", []string{"--json", "--format", "anthropic"}, func(t *testing.T, out string) {
			var resp pb.ListToolsResponse
			if err := protojson.Unmarshal([]byte(out), &resp); err != nil {
				t.Fatal(err)
			}
			if !json.Valid([]byte(resp.GetRenderedJson())) || resp.GetRenderedJson() == "" {
				t.Errorf("rendered_json %q", resp.GetRenderedJson())
			}
		}},
		{"openai", []string{"--format", "openai"}, func(t *testing.T, out string) {
			var tools []struct {
				Type     string
				Function struct{ Name string }
			}
			if err := json.Unmarshal([]byte(out), &tools); err != nil {
				t.Fatalf("not a JSON array: %v\n%s", err, out)
			}
			if len(tools) < 2 || tools[0].Function.Name != "think" || tools[0].Type != "function" {
				t.Errorf("openai tools %+v", tools)
			}
		}},
		{"mcp flat", []string{"--format", "MCP", "--flat"}, func(t *testing.T, out string) {
			var tools []struct{ Name string }
			if err := json.Unmarshal([]byte(out), &tools); err != nil {
				t.Fatalf("not a JSON array: %v\n%s", err, out)
			}
			var names []string
			for _, tool := range tools {
				names = append(names, tool.Name)
			}
			for _, want := range []string{"think", "file_operations", "read_file", "grep_search"} {
				if !slices.Contains(names, want) {
					t.Errorf("%s missing from %v", want, names)
				}
			}
		}},
		{"gemini", []string{"--format", "gemini"}, func(t *testing.T, out string) {
			if !json.Valid([]byte(out)) {
				t.Errorf("not JSON:\n%s", out)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := runAt(t, d.Socket, append([]string{"tools"}, tt.args...)...)
			r.check(t, exitOK, nil, nil)
			// Only what toold does not offer (web_search: no provider
			// configured in the test daemon) goes to stderr.
			if r.stderr != "" && !strings.HasPrefix(r.stderr, "not available: web_search: has no provider configured; set web.search.provider") {
				t.Errorf("stderr: %s", r.stderr)
			}
			tt.check(t, r.stdout)
		})
	}
}

func TestWriteToolTableWidth(t *testing.T) {
	t.Parallel()
	tools := []*pb.ToolSpec{{
		Name: "t", Risk: pb.RiskLevel_RISK_LEVEL_HIGH, Source: "mcp:x", Aliases: []string{"tt"},
		Description: "A long description that goes on and on, e.g. like this. Second sentence.",
	}}
	var b strings.Builder
	if err := writeToolTable(&b, tools, 40); err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n") {
		if n := len([]rune(line)); n > 39 {
			t.Errorf("line of %d runes for width 40: %q", n, line)
		}
	}
	if !strings.Contains(b.String(), "t     high  mcp:x   A long") || !strings.HasSuffix(b.String(), "…\n") {
		t.Errorf("table:\n%s", b.String())
	}
	b.Reset()
	_ = writeToolTable(&b, tools, 0)
	if !strings.Contains(b.String(), "e.g. like this. (aliases: tt)\n") {
		t.Errorf("untruncated table:\n%s", b.String())
	}
}

// toolctl tools --dialect lists an agent's tools by its names, each with
// the toold tool that runs it; the ones toold lacks go to stderr.
func TestToolsDialect(t *testing.T) {
	t.Parallel()
	d := daemontest.Start(t)
	r := runAt(t, d.Socket, "tools", "--dialect", "claude-code")
	r.check(t, exitOK, nil, nil)
	for _, want := range []string{"Bash", "dialect:claude-code -> terminal_operations.run_command", "Read", "TodoWrite"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, r.stdout)
		}
	}
	for _, want := range []string{"dialect claude-code, following @anthropic-ai/claude-code", "not available: Agent: toold runs no sub-agents"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	r = runAt(t, d.Socket, "tools", "--dialect", "codex", "--format", "openai")
	r.check(t, exitOK, nil, nil)
	var tools []struct{ Function struct{ Name string } }
	if err := json.Unmarshal([]byte(r.stdout), &tools); err != nil || len(tools) == 0 || tools[0].Function.Name != "exec_command" {
		t.Errorf("codex rendering: %v %s", err, r.stdout)
	}
	r = runAt(t, d.Socket, "tools", "--dialect", "cursor")
	if r.code == exitOK || !strings.Contains(r.stderr, `unknown dialect "cursor"`) {
		t.Errorf("unknown dialect: code %d, stderr %s", r.code, r.stderr)
	}
}
