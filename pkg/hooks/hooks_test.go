package hooks

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

const python = "/usr/bin/python3"

func script(t testing.TB, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("..", "..", "testdata", "hooks", name))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func needPython(t testing.TB) {
	if _, err := os.Stat(python); err != nil {
		if os.Getenv("TOOLD_REQUIRE_PEERS") == "1" {
			t.Fatalf("%s is missing", python)
		}
		t.Skipf("%s is missing", python)
	}
}

func TestPreHooks(t *testing.T) {
	needPython(t)
	validator := python + " " + script(t, "bash_validator.py")
	protect := "bash " + script(t, "protect_files.sh")
	decide := python + " " + script(t, "decide.py")
	tests := []struct {
		name       string
		hooks      []Hook
		call       Call
		want       Decision
		wantReason string // substring
		wantInput  map[string]any
		wantCtx    []string
		wantFailed string // substring of the one outcome's Failed
	}{
		{name: "validator blocks grep", hooks: []Hook{{Command: validator}},
			call: Call{Name: "Bash", Input: map[string]any{"command": "grep -r foo ."}},
			want: Deny, wantReason: "Use 'rg' (ripgrep) instead of 'grep'"},
		{name: "validator blocks toold's run_command too", hooks: []Hook{{Command: validator, Match: []string{"run_command"}}},
			call: Call{Name: "run_command", Tool: "terminal_operations", Operation: "run_command", Input: map[string]any{"command": "find . -name '*.go'"}},
			want: Deny, wantReason: "rg --files"},
		{name: "validator lets a piped grep through", hooks: []Hook{{Command: validator}},
			call: Call{Name: "Bash", Input: map[string]any{"command": "grep foo x | wc -l"}}, want: None},
		{name: "validator ignores other tools", hooks: []Hook{{Command: validator}},
			call: Call{Name: "read_file", Input: map[string]any{"path": "x"}}, want: None},
		{name: "file guard (bash) blocks .env", hooks: []Hook{{Command: protect}},
			call: Call{Name: "write_file", Input: map[string]any{"path": "config/.env", "content": "x"}},
			want: Deny, wantReason: "protected file config/.env"},
		{name: "file guard reads Claude's file_path", hooks: []Hook{{Command: protect}},
			call: Call{Name: "Write", Input: map[string]any{"file_path": "/w/.git/config"}},
			want: Deny, wantReason: ".git/config"},
		{name: "file guard passes others", hooks: []Hook{{Command: protect}},
			call: Call{Name: "write_file", Input: map[string]any{"path": "main.go"}}, want: None},
		{name: "JSON deny", hooks: []Hook{{Command: decide}},
			call: Call{Name: "read_file", Input: map[string]any{"path": "secret.txt"}},
			want: Deny, wantReason: "holds secrets"},
		{name: "JSON ask", hooks: []Hook{{Command: decide}},
			call: Call{Name: "read_file", Input: map[string]any{"path": "maybe.go"}},
			want: Ask, wantReason: "is maybe.go fine"},
		{name: "JSON allow with context", hooks: []Hook{{Command: decide}},
			call: Call{Name: "read_file", Input: map[string]any{"path": "README.md"}},
			want: Allow, wantCtx: []string{"docs are public"}},
		{name: "JSON updatedInput", hooks: []Hook{{Command: decide}},
			call:      Call{Name: "read_file", Input: map[string]any{"path": "main.go", "limit": 5000}},
			want:      None,
			wantInput: map[string]any{"path": "main.go", "limit": float64(100)}},
		{name: "the amended input reaches the next hook", hooks: []Hook{
			{Name: "cap", Command: decide},
			{Name: "check", Command: `python3 -c 'import json,sys; e=json.load(sys.stdin); sys.exit(2 if e["tool_input"]["limit"]!=100 else 0)'`},
		}, call: Call{Name: "read_file", Input: map[string]any{"path": "a.go", "limit": 500}},
			want: None, wantInput: map[string]any{"path": "a.go", "limit": float64(100)}},
		{name: "deny wins and ends the run", hooks: []Hook{
			{Command: decide}, {Command: `echo ran >&2; exit 1`},
		}, call: Call{Name: "read_file", Input: map[string]any{"path": "secret"}}, want: Deny, wantReason: "holds secrets"},
		{name: "not matched", hooks: []Hook{{Command: "exit 2", Match: []string{"file_operations.*"}}},
			call: Call{Name: "run_command", Tool: "terminal_operations", Operation: "run_command"}, want: None},
		{name: "matched by tool.operation", hooks: []Hook{{Command: "echo nope >&2; exit 2", Match: []string{"file_operations.*"}}},
			call: Call{Name: "read_file", Tool: "file_operations", Operation: "read_file"}, want: Deny, wantReason: "nope"},
		{name: "legacy decision block", hooks: []Hook{{Command: `echo '{"decision":"block","reason":"old style"}'`}},
			call: Call{Name: "think"}, want: Deny, wantReason: "old style"},
		{name: "continue false", hooks: []Hook{{Command: `echo '{"continue":false,"stopReason":"stop it"}'`}},
			call: Call{Name: "think"}, want: Deny, wantReason: "stop it"},
		{name: "exit 2 without stderr", hooks: []Hook{{Name: "quiet", Command: "exit 2"}},
			call: Call{Name: "think"}, want: Deny, wantReason: `"quiet" blocked`},
		{name: "exit 1 blocks by default", hooks: []Hook{{Command: "echo boom >&2; exit 1"}},
			call: Call{Name: "think"}, want: Deny, wantReason: "exit status 1: boom", wantFailed: "exit status 1"},
		{name: "exit 1 proceeds when configured", hooks: []Hook{{Command: "exit 1", OnError: "proceed"}},
			call: Call{Name: "think"}, want: None, wantFailed: "exit status 1"},
		{name: "python crash blocks", hooks: []Hook{{Command: python + ` -c 'raise RuntimeError("kaput")'`}},
			call: Call{Name: "think"}, want: Deny, wantReason: "RuntimeError: kaput"},
		{name: "killed by a signal", hooks: []Hook{{Command: "kill -9 $$"}},
			call: Call{Name: "think"}, want: Deny, wantFailed: "killed"},
		{name: "cannot start", hooks: []Hook{{Command: "/nonexistent/hook"}},
			call: Call{Name: "think"}, want: Deny, wantFailed: "exit status 127"},
		{name: "bad JSON", hooks: []Hook{{Command: `echo '{"hookSpecificOutput": '`}},
			call: Call{Name: "think"}, want: Deny, wantFailed: "not valid JSON"},
		{name: "updatedInput not an object", hooks: []Hook{{Command: `echo '{"hookSpecificOutput":{"updatedInput":[1]}}'`}},
			call: Call{Name: "think"}, want: Deny, wantFailed: "not a JSON object"},
		{name: "output flood", hooks: []Hook{{Command: "head -c 3000000 /dev/zero"}},
			call: Call{Name: "think"}, want: Deny, wantFailed: "exceeded"},
		{name: "plain stdout is ignored", hooks: []Hook{{Command: "echo hello"}},
			call: Call{Name: "think"}, want: None},
		{name: "timeout", hooks: []Hook{{Command: "sleep 30", Timeout: 200 * time.Millisecond}},
			call: Call{Name: "think"}, want: Deny, wantFailed: "timeout"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := New(Config{Pre: tt.hooks}, t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			res, err := r.Pre(context.Background(), tt.call)
			if err != nil {
				t.Fatal(err)
			}
			if res.Decision != tt.want || !strings.Contains(res.Reason, tt.wantReason) {
				t.Fatalf("decision %q reason %q; want %q with %q (ran %+v)", res.Decision, res.Reason, tt.want, tt.wantReason, res.Ran)
			}
			if !reflect.DeepEqual(res.Input, tt.wantInput) {
				t.Fatalf("input %v, want %v", res.Input, tt.wantInput)
			}
			if tt.wantCtx != nil && !reflect.DeepEqual(res.Context, tt.wantCtx) {
				t.Fatalf("context %q, want %q", res.Context, tt.wantCtx)
			}
			if tt.wantFailed != "" && (len(res.Ran) == 0 || !strings.Contains(res.Ran[len(res.Ran)-1].Failed, tt.wantFailed)) {
				t.Fatalf("outcomes %+v, want a failure with %q", res.Ran, tt.wantFailed)
			}
		})
	}
}

// The hook reads exactly Claude Code's input fields.
func TestPreHookInput(t *testing.T) {
	needPython(t)
	dir := t.TempDir()
	dump := filepath.Join(dir, "in.json")
	r, err := New(Config{Pre: []Hook{{Command: "cat > " + dump}}}, dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Pre(context.Background(), Call{Conversation: "conv-1", CallID: "c7", Name: "read_file", Input: map[string]any{"path": "a"}}); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(dump)
	want := fmt.Sprintf(`{"session_id":"conv-1","transcript_path":"","cwd":%q,"permission_mode":"default","hook_event_name":"PreToolUse","tool_name":"read_file","tool_input":{"path":"a"},"tool_use_id":"c7"}`, dir)
	if string(got) != want {
		t.Fatalf("input\n%s\nwant\n%s", got, want)
	}
}

func TestPostHooks(t *testing.T) {
	post := "bash " + script(t, "post_context.sh")
	r, err := New(Config{Post: []Hook{{Command: post}, {Command: "exit 7"}}}, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.Post(context.Background(), Call{CallID: "c9", Name: "think"}, Response{Success: true, Content: "ok"})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(res.Context, []string{"post hook saw c9"}) || res.Decision != None {
		t.Fatalf("post: %+v", res)
	}
	if len(res.Ran) != 2 || res.Ran[1].Failed == "" {
		t.Fatalf("a failing post-hook is recorded: %+v", res.Ran)
	}
	res, err = r.Post(context.Background(), Call{CallID: "c10", Name: "think"}, Response{Success: false, Error: "bad"})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(res.Context, []string{"the call failed; check the arguments"}) {
		t.Fatalf("post exit 2: %+v", res)
	}
}

// A hook that times out is killed with its whole process group, and a
// canceled call kills its hook and returns the cancellation.
func TestKillsProcessGroup(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pid")
	cmd := fmt.Sprintf("sleep 300 & echo $! > %s; wait", pidFile)
	r, err := New(Config{Pre: []Hook{{Command: cmd, Timeout: 300 * time.Millisecond}}}, dir)
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.Pre(context.Background(), Call{Name: "think"})
	if err != nil || res.Decision != Deny {
		t.Fatalf("%v %+v", err, res)
	}
	waitGone(t, pidFile)

	ctx, cancel := context.WithCancel(context.Background())
	r2, _ := New(Config{Pre: []Hook{{Command: cmd}}}, dir)
	os.Remove(pidFile)
	done := make(chan error, 1)
	go func() { _, err := r2.Pre(ctx, Call{Name: "think"}); done <- err }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if b, _ := os.ReadFile(pidFile); len(b) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("hook did not start")
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("canceled hook: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("canceled hook did not return")
	}
	waitGone(t, pidFile)
}

// waitGone polls until the pid in file is no longer a live process.
func waitGone(t *testing.T, file string) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil || strings.Contains(string(stat), ") Z ") {
			return
		}
		if syscall.Kill(pid, 0) != nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %d outlived its hook", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{"empty command", Config{Pre: []Hook{{Command: " "}}}, "hooks.pre[0]: command is empty"},
		{"bad pattern", Config{Post: []Hook{{Command: "x", Match: []string{"["}}}}, "hooks.post[0]: match"},
		{"bad on_error", Config{Pre: []Hook{{Command: "x", OnError: "ignore"}}}, "on_error"},
		{"negative timeout", Config{Pre: []Hook{{Command: "x", Timeout: -1}}}, "timeout"},
		{"ok", Config{Pre: []Hook{{Command: "x", Match: []string{"*"}, OnError: "proceed"}}}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.cfg, t.TempDir())
			if (err == nil) != (tt.want == "") || (err != nil && !strings.Contains(err.Error(), tt.want)) {
				t.Fatalf("New = %v, want %q", err, tt.want)
			}
		})
	}
}

// BenchmarkPre measures what a matching hook adds to a call: none, a
// trivial bash hook, a trivial python3 hook.
func BenchmarkPre(b *testing.B) {
	for _, bc := range []struct{ name, shell, cmd string }{
		{"none", "", ""},
		{"bash", "/bin/bash", "exit 0"},
		{"python3", "/bin/sh", "exec " + python + ` -c 'import json,sys; json.load(sys.stdin)'`},
	} {
		b.Run(bc.name, func(b *testing.B) {
			cfg := Config{Shell: bc.shell}
			if bc.cmd != "" {
				cfg.Pre = []Hook{{Command: bc.cmd}}
			}
			r, err := New(cfg, b.TempDir())
			if err != nil {
				b.Fatal(err)
			}
			c := Call{Conversation: "c", CallID: "1", Name: "read_file", Input: map[string]any{"path": "README.md"}}
			for b.Loop() {
				res, err := r.Pre(context.Background(), c)
				if err != nil || res.Decision != None {
					b.Fatal(err, res)
				}
			}
		})
	}
}
