package mcpserver_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toold/toold/pkg/authz"
	"github.com/toold/toold/pkg/daemon"
	"github.com/toold/toold/pkg/executor"
	"github.com/toold/toold/pkg/mcpserver"
	"github.com/toold/toold/pkg/tools"
	"github.com/toold/toold/pkg/tools/dialect"
	"github.com/toold/toold/pkg/workspace"
)

// allowAll is a func-field-free fake policy that allows every call.
type allowAll struct{}

func (allowAll) Authorize(_ context.Context, r *authz.Request) (authz.Verdict, error) {
	return authz.Verdict{Decision: authz.Allow, Risk: r.Risk}, nil
}

// Each dialect presented over MCP: its tools listed by the agent's names
// and a call by one of them run on toold's real file tools.
func TestDialectOverMCP(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main\n\nfunc main() {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ws, err := workspace.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	reg := tools.NewRegistry()
	if err := reg.Register(daemon.BuiltinTools(ws, tools.Limits{}.WithDefaults(), authz.Capabilities{}, nil, nil)...); err != nil {
		t.Fatal(err)
	}
	if err := reg.RegisterDialect(dialect.All()...); err != nil {
		t.Fatal(err)
	}
	x, err := executor.New(executor.Config{Registry: reg, Authorizer: allowAll{}})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		dialect, tool, args string
		listed, notListed   []string
		want                string
	}{
		{"claude-code", "Read", `{"file_path":"main.go","offset":3,"limit":1}`, []string{"Read", "Edit", "Grep"}, []string{"read_file", "Agent", "TaskOutput"}, "3\tfunc main() {}"},
		{"gemini-cli", "read_file", `{"file_path":"main.go","start_line":1,"end_line":1}`, []string{"read_file", "replace", "list_directory"}, []string{"Read", "activate_skill"}, "package main"},
		{"codex", "apply_patch", `{"input":"*** Begin Patch\n*** Add File: hello.txt\n+hi\n*** End Patch"}`, []string{"apply_patch", "exec_command", "write_stdin"}, []string{"view_image", "shell", "update_plan"}, "A hello.txt"},
		{"openhands", "str_replace_editor", `{"command":"view","path":"main.go","security_risk":"LOW"}`, []string{"str_replace_editor", "think", "task_tracker"}, []string{"browser"}, "     1\tpackage main"},
		{"swe-agent", "find_file", `{"file_name":"*.go"}`, []string{"find_file", "search_dir", "open", "edit"}, []string{"submit"}, `Found 1 matches for "*.go" in .:`},
	}
	for _, c := range cases {
		t.Run(c.dialect, func(t *testing.T) {
			srv := mcpserver.New(mcpserver.Options{Executor: x, Registry: reg, Version: "test", Dialect: c.dialect})
			t.Cleanup(srv.Close)
			srv.Sync()
			cs := connect(t, srv, nil)
			ctx := context.Background()
			list, err := cs.ListTools(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]bool{}
			for _, tl := range list.Tools {
				got[tl.Name] = true
			}
			for _, n := range c.listed {
				if !got[n] {
					t.Errorf("%s not listed: %v", n, got)
				}
			}
			for _, n := range c.notListed {
				if got[n] {
					t.Errorf("%s listed in dialect %s", n, c.dialect)
				}
			}
			res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: c.tool, Arguments: rawArgs(c.args)})
			if err != nil || res.IsError || !strings.Contains(text(res), c.want) {
				t.Fatalf("%s: %v %q", c.tool, err, text(res))
			}
		})
	}
	if b, err := os.ReadFile(filepath.Join(dir, "hello.txt")); err != nil || string(b) != "hi\n" {
		t.Errorf("codex apply_patch over MCP: %q %v", b, err)
	}
}

// rawArgs is a call's arguments as the client sends them.
func rawArgs(s string) map[string]any {
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		panic(err)
	}
	return m
}
