package dialect_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/toold/toold/pkg/authz"
	"github.com/toold/toold/pkg/daemon"
	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/tools"
	"github.com/toold/toold/pkg/tools/dialect"
	"github.com/toold/toold/pkg/tools/web"
	"github.com/toold/toold/pkg/workspace"
)

func registry(t *testing.T) *tools.Registry {
	t.Helper()
	ws, err := workspace.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	reg := tools.NewRegistry()
	// A toold with every tool a dialect maps to: web_search needs a
	// provider (never contacted here).
	more := daemon.MoreOptions{Web: web.Options{Search: web.SearchConfig{Provider: "searxng", URL: "http://127.0.0.1:9"}}}
	if err := reg.Register(daemon.BuiltinTools(ws, tools.Limits{}.WithDefaults(), authz.Capabilities{}, nil, nil, more)...); err != nil {
		t.Fatal(err)
	}
	if err := reg.RegisterDialect(dialect.All()...); err != nil {
		t.Fatal(err)
	}
	return reg
}

// Every dialect tool is well formed: a schema that is an object, a
// version recorded, and either a toold target that resolves or a note
// saying what toold offers instead.
func TestDialectsWellFormed(t *testing.T) {
	reg := registry(t)
	for _, d := range dialect.All() {
		if d.Version == "" || d.Agent == "" {
			t.Errorf("%s: no version or agent", d.Name)
		}
		seen := map[string]bool{}
		earlier := 0
		for _, dt := range d.Tools {
			if dt.Earlier {
				earlier++
			}
			if seen[dt.Name] {
				t.Errorf("%s: %s twice", d.Name, dt.Name)
			}
			seen[dt.Name] = true
			var s struct{ Type string }
			if err := json.Unmarshal(dt.Schema, &s); err != nil || s.Type != "object" {
				t.Errorf("%s.%s: schema %s", d.Name, dt.Name, dt.Schema)
			}
			if dt.Available() == (dt.Missing != "") {
				t.Errorf("%s.%s: a target or a note, not both", d.Name, dt.Name)
			}
		}
		_, infos, off, err := reg.DialectListing(d.Name)
		if err != nil || len(infos)+len(off)+earlier != len(d.Tools) {
			t.Errorf("%s: listing %d+%d of %d tools (%d of earlier versions, not listed): %v", d.Name, len(infos), len(off), len(d.Tools), earlier, err)
		}
		for _, u := range off {
			if strings.Contains(u.Reason, "not available here") {
				t.Errorf("%s.%s: target does not resolve: %s", d.Name, u.Name, u.Reason)
			}
		}
	}
	if _, _, _, err := reg.DialectListing("nope"); err == nil {
		t.Error("unknown dialect listed")
	}
}

// Each dialect's arguments are mapped to toold's, units included, and the
// mapping is reported.
func TestDialectMapping(t *testing.T) {
	reg := registry(t)
	cases := []struct {
		dialect, name, args string
		op                  string
		want                string // the prepared arguments, as JSON
		reported            []string
		err                 string
	}{
		{"claude-code", "Bash", `{"command":"make","timeout":120000,"description":"Build","run_in_background":false}`, "run_command", `{"command":"make","is_background":false,"timeout":120}`, []string{"/timeout", "/description", "/run_in_background"}, ""},
		{"claude-code", "Grep", `{"pattern":"TODO","glob":"*.go","-C":3,"-n":true,"-i":true,"head_limit":20,"output_mode":"content"}`, "grep_search", `{"context_lines":3,"ignore_case":true,"include":"*.go","max_results":20,"pattern":"TODO"}`, []string{"/glob", "/-C", "/-n", "/head_limit"}, ""},
		{"claude-code", "Grep", `{"pattern":"x","type":"go"}`, "grep_search", `{"include":"*.go","pattern":"x"}`, []string{"/type"}, ""},
		{"claude-code", "Grep", `{"pattern":"x","multiline":true}`, "", "", nil, "one line at a time"},
		{"claude-code", "TodoWrite", `{"todos":[{"content":"Fix it","status":"in_progress","activeForm":"Fixing it"}]}`, "manage_todos", `{"action":"write","todos":[{"status":"in_progress","title":"Fix it"}]}`, []string{"/todos"}, ""},
		{"claude-code", "BashOutput", `{"bash_id":"proc-1"}`, "get_output", `{"process_id":"proc-1"}`, []string{"/bash_id"}, ""},
		{"claude-code", "TaskOutput", `{"task_id":"proc-1","block":true,"timeout":5000}`, "get_output", `{"process_id":"proc-1","wait_ms":5000}`, []string{"/task_id", "/block"}, ""},
		{"claude-code", "KillShell", `{"shell_id":"proc-1"}`, "kill", `{"process_id":"proc-1"}`, []string{"/shell_id"}, ""},
		{"claude-code", "Agent", `{"description":"x","prompt":"y"}`, "", "", nil, "toold runs no sub-agents"},
		{"gemini-cli", "read_file", `{"absolute_path":"a.go","offset":0,"limit":10}`, "read_file", `{"limit":10,"offset":1,"path":"a.go"}`, []string{"/absolute_path", "/offset"}, ""},
		{"gemini-cli", "read_file", `{"file_path":"a.go","start_line":5,"end_line":9}`, "read_file", `{"limit":5,"offset":5,"path":"a.go"}`, []string{"/start_line", "/end_line"}, ""},
		{"gemini-cli", "web_fetch", `{"prompt":"Summarize https://example.com/a."}`, "web_fetch", `{"url":"https://example.com/a"}`, []string{"/prompt"}, ""},
		{"gemini-cli", "web_fetch", `{"prompt":"compare https://a.example and https://b.example"}`, "", "", nil, "one URL a call"},
		{"gemini-cli", "replace", `{"file_path":"a","old_string":"x","new_string":"y","instruction":"rename","allow_multiple":true}`, "edit_file", `{"new_string":"y","old_string":"x","path":"a","replace_all":true}`, []string{"/instruction", "/allow_multiple"}, ""},
		{"codex", "shell", `{"command":["bash","-lc","ls -la"],"workdir":"src","timeout_ms":10000}`, "run_command", `{"command":"ls -la","timeout":10,"working_dir":"src"}`, []string{"/command", "/workdir", "/timeout_ms"}, ""},
		{"codex", "shell", `{"command":["rg","-n","foo bar","src"]}`, "run_command", `{"command":"rg -n 'foo bar' src"}`, []string{"/command"}, ""},
		{"codex", "update_plan", `{"explanation":"e","plan":[{"step":"a","status":"completed"}]}`, "manage_todos", `{"action":"write","todos":[{"status":"completed","title":"a"}]}`, []string{"/explanation", "/todos"}, ""},
		{"openhands", "execute_bash", `{"command":"ls","is_input":"false","timeout":30,"security_risk":"LOW"}`, "run_command", `{"command":"ls","timeout":30}`, []string{"/is_input", "/security_risk"}, ""},
		{"openhands", "execute_bash", `{"command":"y","is_input":"true"}`, "", "", nil, "send_input"},
		{"openhands", "task_tracker", `{"command":"plan","task_list":[{"id":"1","title":"a","status":"done","notes":"n"}]}`, "manage_todos", `{"action":"write","todos":[{"id":"1","status":"completed","title":"a"}]}`, []string{"/todos"}, ""},
		{"swe-agent", "find_file", `{"file_name":"*.py","dir":"src"}`, "glob", `{"path":"src","pattern":"**/*.py"}`, []string{"/file_name", "/dir"}, ""},
		{"swe-agent", "search_dir", `{"search_term":"a.b("}`, "grep_search", `{"pattern":"a\\.b\\("}`, []string{"/search_term"}, ""},
		{"swe-agent", "open", `{"path":"a.py","line_number":120}`, "read_file", `{"limit":200,"offset":3,"path":"a.py"}`, []string{"/open"}, ""},
		{"swe-agent", "edit", `{"search":"a","replace":"b"}`, "", "", nil, "open` or `create` a file first"},
	}
	for _, c := range cases {
		t.Run(c.dialect+"/"+c.name, func(t *testing.T) {
			args, err := tools.DecodeArguments(c.args)
			if err != nil {
				t.Fatal(err)
			}
			target, err := reg.ResolveIn(c.dialect, c.name, args)
			if err == nil {
				_, err = target.Prepare(args)
			}
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if target.Operation != c.op || target.Dialect != c.dialect {
				t.Fatalf("resolved %s (dialect %q), want %s", target.Operation, target.Dialect, c.op)
			}
			got, _ := json.Marshal(args)
			var a, b any
			json.Unmarshal(got, &a)
			json.Unmarshal([]byte(c.want), &b)
			ga, _ := json.Marshal(a)
			gb, _ := json.Marshal(b)
			if string(ga) != string(gb) {
				t.Fatalf("arguments %s, want %s", ga, gb)
			}
			fields := map[string]bool{}
			for _, co := range target.Repairs() {
				fields[co.Field] = true
			}
			for _, f := range append([]string{tools.NameField}, c.reported...) {
				if !fields[f] {
					t.Errorf("%s not reported: %+v", f, target.Repairs())
				}
			}
		})
	}
}

// Results are reshaped for the agent's model at the end of the pipeline.
func TestDialectShapes(t *testing.T) {
	reg := registry(t)
	cmd := &tools.Result{Text: "exit code 2 · 1.2s · 4 B of output\nboom\nhint: something\n", Structured: map[string]any{"exit_code": 2, "duration_ms": int64(1234), "signal": ""}}
	cases := []struct{ dialect, name, args, want string }{
		{"codex", "shell", `{"command":["false"]}`, `{"output":"boom\n","metadata":{"exit_code":2,"duration_seconds":1.2}}`},
		{"openhands", "execute_bash", `{"command":"false"}`, "boom\n[The command completed with exit code 2.]"},
		{"gemini-cli", "run_shell_command", `{"command":"false"}`, "<untrusted_context>\nOutput: boom\nExit Code: 2\n</untrusted_context>"},
		{"claude-code", "Bash", `{"command":"false"}`, "Exit code 2\nboom"},
		{"swe-agent", "bash", `{"command":"false"}`, "boom"},
	}
	for _, c := range cases {
		args, _ := tools.DecodeArguments(c.args)
		target, err := reg.ResolveIn(c.dialect, c.name, args)
		if err != nil {
			t.Fatal(err)
		}
		res, err := target.Shape(cmd, nil)
		if err != nil || res.Text != c.want {
			t.Errorf("%s %s: %q %v, want %q", c.dialect, c.name, res.Text, err, c.want)
		}
	}
	// codex reports a command that ran out of time as
	// build_content_with_timeout does; the call still ends TIMEOUT.
	args, _ := tools.DecodeArguments(`{"command":["sleep","9"],"timeout_ms":1500}`)
	target, _ := reg.ResolveIn("codex", "shell", args)
	timeout := errdefs.New(errdefs.ErrTimeout, "the command ran longer than its timeout")
	slow := &tools.Result{Text: "signal KILL · 1.5s · 6 B of output\npartial\n", Structured: map[string]any{"exit_code": -1, "duration_ms": int64(1502), "signal": "KILL"}}
	if res, err := target.Shape(slow, timeout); err != timeout || res.Text != `{"output":"command timed out after 1500 milliseconds\npartial\n","metadata":{"exit_code":-1,"duration_seconds":1.5}}` {
		t.Errorf("codex timeout: %q %v", res.Text, err)
	}
	// Claude Code's Read numbers lines "N\tline", without padding.
	args, _ = tools.DecodeArguments(`{"file_path":"a"}`)
	target, _ = reg.ResolveIn("claude-code", "Read", args)
	if res, _ := target.Shape(&tools.Result{Text: "     1\tpackage a\n    10\tx\tq\n"}, nil); res.Text != "1\tpackage a\n10\tx\tq" {
		t.Errorf("claude Read: %q", res.Text)
	}
	// gemini-cli reads files without line numbers.
	args, _ = tools.DecodeArguments(`{"file_path":"a"}`)
	target, _ = reg.ResolveIn("gemini-cli", "read_file", args)
	if res, _ := target.Shape(&tools.Result{Text: "     1\tpackage a\n     2\t\n"}, nil); res.Text != "package a\n\n" {
		t.Errorf("gemini read_file: %q", res.Text)
	}
	// Without a chosen dialect the result keeps toold's shape.
	args, _ = tools.DecodeArguments(`{"command":"ls","description":"list"}`)
	target, _ = reg.Resolve("Bash", args)
	if res, _ := target.Shape(cmd, nil); res != cmd {
		t.Error("a call without a dialect was reshaped")
	}
}
