package vcs_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/sandbox"
	"github.com/toold/toold/pkg/tools"
	"github.com/toold/toold/pkg/tools/terminal"
	"github.com/toold/toold/pkg/tools/vcs"
	"github.com/toold/toold/pkg/workspace"
)

// The test binary stands in for toold's helper (terminal supervision).
func TestMain(m *testing.M) {
	sandbox.RunHelperIfRequested()
	code := m.Run()
	if z := sandbox.ZombieChildren(os.Getpid()); len(z) > 0 && code == 0 {
		fmt.Fprintf(os.Stderr, "zombie children left after the tests: %v\n", z)
		code = 1
	}
	os.Exit(code)
}

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

const makefile = `# A project.
GO ?= go
VERSION := 1.0
.PHONY: test build

test: build ## Run the tests.
	@echo "testing with ARGS=$(ARGS)"

build: ## Build it.
	@echo building

%.o: %.c
	cc -c $<

lint vet: ## Static checks.
	@echo lint

internal/thing:
	touch $@

.hidden:
	echo no
`

var projectFiles = map[string]string{
	"Makefile":     makefile,
	"package.json": `{"name": "x", "scripts": {"test": "echo npm test", "build": "tsc -p .", "dev": "vite"}}`,
	"justfile": `set shell := ["bash", "-c"]
alias b := build

# Build everything.
build:
    echo just build

deploy target='staging': build
    echo deploy {{target}}

version := "1"
`,
	"Taskfile.yml": `version: '3'
tasks:
  generate:
    desc: Generate code.
    cmds: [go generate ./...]
  serve:
    cmds: [go run .]
`,
	".vscode/tasks.json": `{
  // VS Code allows comments
  "version": "2.0.0",
  "tasks": [
    {"label": "Check", "type": "shell", "command": "echo check ${workspaceFolder}", "args": ["a b"], "detail": "Check it"},
    {"label": "Proc", "type": "process", "command": "echo", "args": ["x", {"value": "y z", "quoting": "strong"}],},
    {"label": "Prompted", "type": "shell", "command": "echo ${input:thing}"}, /* unknowable */
  ],
}`,
}

func TestListTasks(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, projectFiles)
	v := vcs.New(vcs.Options{Root: dir})
	res, err := v.Run(context.Background(), &tools.Call{ID: "l", Tool: vcs.ToolName, Operation: "list_tasks", Args: map[string]any{}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	cmds := map[string]string{}
	for _, x := range res.Structured["tasks"].([]any) {
		m := x.(map[string]any)
		q := m["source"].(string) + ":" + m["name"].(string)
		got = append(got, q+"="+m["help"].(string))
		cmds[q] = m["command"].(string)
	}
	want := []string{
		"make:test=Run the tests.", "make:build=Build it.", "make:lint=Static checks.", "make:vet=Static checks.",
		"npm:build=tsc -p .", "npm:dev=vite", "npm:test=echo npm test",
		"just:build=Build everything.", "just:deploy=",
		"task:generate=Generate code.", "task:serve=",
		"vscode:Check=Check it", "vscode:Proc=",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("tasks:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for q, want := range map[string]string{
		"make:test": "make test", "npm:dev": "npm run dev", "just:deploy": "just deploy",
		"task:serve": "task serve", "vscode:Check": "echo check . 'a b'", "vscode:Proc": "echo x 'y z'",
	} {
		if cmds[q] != want {
			t.Errorf("%s command %q, want %q", q, cmds[q], want)
		}
	}
	if !strings.Contains(res.Text, "make:test — Run the tests.") {
		t.Errorf("text:\n%s", res.Text)
	}
}

// TestRunTaskDescribesWhatRuns: the effect policy judges is the command
// line run_task runs; args are quoted so they cannot add commands; an
// ambiguous or unknown name is refused.
func TestRunTaskDescribesWhatRuns(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, projectFiles)
	v := vcs.New(vcs.Options{Root: dir})
	for _, c := range []struct {
		name string
		args []any
		want string
	}{
		{"make:test", []any{"ARGS=x; rm -rf /"}, "make test 'ARGS=x; rm -rf /'"},
		{"generate", nil, "task generate"},
		{"npm:test", []any{"--watch", "$(id)"}, "npm run test -- --watch '$(id)'"},
		{"task:serve", []any{"-v"}, "task serve -- -v"},
		{"vscode:Check", nil, "echo check . 'a b'"},
	} {
		call := &tools.Call{ID: "r", Tool: vcs.ToolName, Operation: "run_task", Args: map[string]any{"name": c.name, "args": c.args}}
		if c.args == nil {
			delete(call.Args, "args")
		}
		e := v.Describe(call)
		if e.Command != c.want || e.Dir != "." || e.Risk != tools.RiskHigh {
			t.Errorf("%s %v: effect %+v, want command %q", c.name, c.args, e, c.want)
		}
	}
	for _, name := range []string{"test", "build", "nope", "make:nope"} {
		call := &tools.Call{ID: "r", Tool: vcs.ToolName, Operation: "run_task", Args: map[string]any{"name": name}}
		if e := v.Describe(call); e.Command != "" {
			t.Errorf("%s: described as %q", name, e.Command)
		}
		if _, err := v.Run(context.Background(), call, nil); !errors.Is(err, errdefs.ErrInvalidArgument) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestRunTaskThroughTheTerminal runs a Makefile target through a real
// terminal manager: the output streams, the exit code comes back, the
// output is kept under the call's id, and the command judged is the one
// that ran even when the Makefile changes between describe and run.
func TestRunTaskThroughTheTerminal(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"Makefile": makefile + "fail:\n\t@echo failing; exit 3\n"})
	ws, err := workspace.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	m, err := terminal.NewManager(terminal.Config{Workspace: ws, Runner: sandbox.Runner{Args: sandbox.TestHelperArgs}, Dir: t.TempDir(), KillGrace: 500 * time.Millisecond, Env: map[string]string{"HOME": t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		m.Close(ctx)
	})
	term := terminal.New(m, tools.Limits{})
	v := vcs.New(vcs.Options{Root: dir, Terminal: term})

	sink := &recSink{}
	call := &tools.Call{ID: "task-1", ConversationID: "conv", Tool: vcs.ToolName, Operation: "run_task", Args: map[string]any{"name": "test", "args": []any{"ARGS=hello world"}}}
	e := v.Describe(call)
	// The Makefile changes after policy saw the call: what runs is still
	// what was judged.
	writeFiles(t, dir, map[string]string{"Makefile": "test:\n\t@echo SWAPPED\n"})
	res, err := v.Run(context.Background(), call, sink.tools())
	if err != nil {
		t.Fatal(err)
	}
	if e.Command != "make test 'ARGS=hello world'" || res.Structured["command"] != e.Command {
		t.Fatalf("judged %q, ran %v", e.Command, res.Structured["command"])
	}
	if !strings.Contains(sink.out.String(), "SWAPPED") && !strings.Contains(sink.out.String(), "testing with ARGS=hello world") {
		t.Fatalf("streamed: %q", sink.out.String())
	}
	if res.Structured["exit_code"] != 0 {
		t.Fatalf("result: %v\n%s", res.Structured, res.Text)
	}
	// The output is kept for read_output under the call's id.
	ro, err := term.Run(context.Background(), &tools.Call{ID: "ro", ConversationID: "conv", Tool: "terminal_operations", Operation: "read_output", Args: map[string]any{"call_id": "task-1"}}, nil)
	if err != nil || !strings.Contains(ro.Text, "hello world") && !strings.Contains(ro.Text, "SWAPPED") {
		t.Fatalf("read_output: %v %v", ro, err)
	}

	writeFiles(t, dir, map[string]string{"Makefile": "fail:\n\t@echo failing; exit 3\n"})
	res, err = v.Run(context.Background(), &tools.Call{ID: "task-2", ConversationID: "conv", Tool: vcs.ToolName, Operation: "run_task", Args: map[string]any{"name": "fail"}}, (&recSink{}).tools())
	if err != nil {
		t.Fatal(err)
	}
	if res.Structured["exit_code"] != 2 { // make exits 2 when a recipe fails
		t.Fatalf("failing task: %v\n%s", res.Structured, res.Text)
	}
}

type recSink struct{ out strings.Builder }

func (s *recSink) tools() *tools.Sink { return &tools.Sink{OutputFunc: s.Output} }

func (s *recSink) Output(_ tools.Stream, p []byte) error {
	s.out.Write(p)
	return nil
}
