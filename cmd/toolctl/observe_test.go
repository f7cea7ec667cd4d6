package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"

	pb "github.com/toold/toold/gen/toold/v1"
	"github.com/toold/toold/pkg/audit"
	"github.com/toold/toold/pkg/config"
	"github.com/toold/toold/pkg/daemon/daemontest"
	"github.com/toold/toold/pkg/history"
)

// toolctl hook answers each agent's documented pre-tool hook input in that
// agent's protocol, from a real toold's policy.
func TestHook(t *testing.T) {
	t.Parallel()
	d := daemontest.Start(t)
	os.WriteFile(filepath.Join(d.Workspace, "README.md"), []byte("hi\n"), 0o600)
	readme := filepath.Join(d.Workspace, "README.md")
	claude := func(tool, input string) string {
		return fmt.Sprintf(`{"session_id":"abc123","transcript_path":"/tmp/t.jsonl","cwd":%q,"permission_mode":"default","hook_event_name":"PreToolUse","tool_name":%q,"tool_input":%s,"tool_use_id":"toolu_01ABC123"}`, d.Workspace, tool, input)
	}
	codex := func(tool, input string) string {
		return fmt.Sprintf(`{"session_id":"s-1","turn_id":"t-1","transcript_path":"/tmp/t.jsonl","cwd":%q,"hook_event_name":"PreToolUse","model":"gpt-5","permission_mode":"default","tool_name":%q,"tool_input":%s}`, d.Workspace, tool, input)
	}
	gemini := func(tool, input string) string {
		return fmt.Sprintf(`{"session_id":"g-1","transcript_path":"/tmp/t.json","cwd":%q,"hook_event_name":"BeforeTool","timestamp":"2026-11-24T23:00:00Z","tool_name":%q,"tool_input":%s}`, d.Workspace, tool, input)
	}
	rmrf := `{"command":"rm -rf /","description":"clean up"}`
	ask := `{"command":"curl -X POST https://example.com/upload -d @notes.txt"}`
	tests := []struct {
		name     string
		args     []string
		stdin    string
		code     int
		want     string // exact stdout (JSON compared), "" for none
		contains string // substring of the reason, when a JSON answer
	}{
		{"claude deny", []string{"--format", "claude-code"}, claude("Bash", rmrf), exitOK,
			`{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny"}}`, "rule"},
		{"claude allow", []string{"--format", "claude-code"}, claude("Read", fmt.Sprintf(`{"file_path":%q}`, readme)), exitOK,
			`{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow"}}`, ""},
		{"claude ask", []string{"--format", "claude-code"}, claude("Bash", ask), exitOK,
			`{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"ask"}}`, ""},
		{"claude unknown tool", []string{"--format", "claude-code"}, claude("mcp__github__create_issue", `{"title":"x"}`), exitOK, "", ""},
		{"codex deny", []string{"--format", "codex"}, codex("Bash", rmrf), exitOK,
			`{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny"}}`, "rule"},
		{"codex allow prints nothing", []string{"--format", "codex"}, codex("Read", fmt.Sprintf(`{"file_path":%q}`, readme)), exitOK, "", ""},
		{"codex ask is denied", []string{"--format", "codex"}, codex("Bash", ask), exitOK,
			`{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny"}}`, "cannot ask"},
		{"codex ask passed on", []string{"--format", "codex", "--ask", "pass"}, codex("Bash", ask), exitOK, "", ""},
		{"gemini deny", []string{"--format", "gemini"}, gemini("run_shell_command", rmrf), exitOK, `{"decision":"deny"}`, "rule"},
		{"gemini allow", []string{"--format", "gemini"}, gemini("read_file", fmt.Sprintf(`{"absolute_path":%q}`, readme)), exitOK, `{"decision":"allow"}`, ""},
		{"gemini ask passed on", []string{"--format", "gemini", "--ask", "pass"}, gemini("run_shell_command", ask), exitOK, `{}`, ""},
		{"gemini unknown tool", []string{"--format", "gemini"}, gemini("save_memory", `{"fact":"x"}`), exitOK, `{}`, ""},
		{"bad input blocks", []string{"--format", "gemini"}, "not json", exitUsage, "", ""},
		{"bad format", []string{"--format", "cursor"}, claude("Bash", rmrf), exitUsage, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := cli{stdin: tt.stdin}.run(t, append([]string{"--socket", d.Socket, "hook"}, tt.args...)...)
			if r.code != tt.code {
				t.Fatalf("exit %d, want %d; stderr %s", r.code, tt.code, r.stderr)
			}
			if tt.want == "" {
				if r.stdout != "" {
					t.Fatalf("stdout %q, want nothing", r.stdout)
				}
				return
			}
			var got, want map[string]any
			if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
				t.Fatalf("stdout %q: %v", r.stdout, err)
			}
			json.Unmarshal([]byte(tt.want), &want)
			reason := ""
			if hs, ok := got["hookSpecificOutput"].(map[string]any); ok {
				reason, _ = hs["permissionDecisionReason"].(string)
				delete(hs, "permissionDecisionReason")
			} else {
				reason, _ = got["reason"].(string)
				delete(got, "reason")
			}
			g, _ := json.Marshal(got)
			w, _ := json.Marshal(want)
			if string(g) != string(w) || !strings.Contains(reason, tt.contains) {
				t.Fatalf("stdout %s, want %s with a reason holding %q", r.stdout, tt.want, tt.contains)
			}
		})
	}
	// Unreachable toold: the hook blocks (exit 2) and says why.
	r := cli{stdin: claude("Bash", `{"command":"ls"}`)}.run(t, "--socket", filepath.Join(t.TempDir(), "none.sock"), "hook", "--format", "claude-code")
	if r.code != exitUsage || !strings.Contains(r.stderr, "blocked") {
		t.Fatalf("unreachable: exit %d stderr %s", r.code, r.stderr)
	}
}

func TestHistoryAndAudit(t *testing.T) {
	t.Parallel()
	d := daemontest.Start(t)
	ctx := context.Background()
	t0 := time.Now().Add(-time.Minute)
	code := 1
	for i, name := range []string{"read_file", "run_command", "write_file"} {
		e := history.Entry{Conversation: "dev", CallID: fmt.Sprint(i), Name: name, Tool: "t", Operation: name, Arguments: "{}", Decision: "allow",
			Outcome: "success", Summary: "done\nwith " + name, Started: t0.Add(time.Duration(i) * time.Second), Ended: t0.Add(time.Duration(i)*time.Second + 20*time.Millisecond)}
		if name == "run_command" {
			e.ExitCode = &code
		}
		if name == "write_file" {
			e.Outcome, e.Code = "error", "DENIED"
		}
		d.Main.History().Record(ctx, e)
	}
	r := runAsOperator(t, d, "history", "--conversation", "dev")
	r.check(t, exitOK, []string{"STARTED", "t.write_file", "error DENIED", "success exit 1", "done with read_file"}, nil)
	r = runAsOperator(t, d, "history", "--tool", "run_command", "--json")
	r.check(t, exitOK, nil, nil)
	var resp pb.QueryHistoryResponse
	if err := protojson.Unmarshal([]byte(r.stdout), &resp); err != nil {
		t.Fatalf("stdout is not a QueryHistoryResponse: %v\n%s", err, r.stdout)
	}
	if len(resp.GetEntries()) != 1 || resp.GetEntries()[0].GetName() != "run_command" || resp.GetEntries()[0].GetExitCode() != 1 {
		t.Fatalf("filter: %s", r.stdout)
	}
	runAsOperator(t, d, "history", "--limit", "5000").check(t, exitUsage, nil, []string{"limit"})
	runAt(t, d.Socket, "history", "--since", "yesterday").check(t, exitUsage, nil, []string{"--since"})
	// Without the operator credential (another user's toolctl, or one that
	// cannot find it), nothing is shown and toolctl says what is needed.
	runAt(t, d.Socket, "history", "--conversation", "dev").check(t, exitUsage, nil, []string{"PermissionDenied", "conversation_secret", "--secret"})
	runAt(t, d.Socket, "audit", "tail").check(t, exitUsage, nil, []string{"PermissionDenied", "operator credential", "TOOLD_STATE_DIR"})
	other := cli{env: map[string]string{"TOOLD_STATE_DIR": t.TempDir()}}.run(t, "--socket", d.Socket, "history")
	other.check(t, exitUsage, nil, []string{"operator credential"})
	if strings.Contains(other.stdout, "dev") {
		t.Fatalf("history shown without the operator credential: %s", other.stdout)
	}

	for _, k := range []string{audit.KindDecision, audit.KindApproval, audit.KindCallEnd} {
		d.Main.Audit().Append(audit.Record{Kind: k, Conversation: "dev", CallID: "1", Who: "alice", Tool: "terminal_operations", Operation: "run_command"})
	}
	runAsOperator(t, d, "audit", "tail", "-n", "2").check(t, exitOK, []string{"approval", "alice", "call.end"}, nil)
	runAsOperator(t, d, "audit", "verify").check(t, exitOK, []string{"ok: 3 records in 1 files"}, nil)
	r = runAsOperator(t, d, "audit", "export", "--from", "2")
	r.check(t, exitOK, []string{`"seq":2`, `"seq":3`}, nil)
	if strings.Count(r.stdout, "\n") != 2 {
		t.Fatalf("export: %s", r.stdout)
	}
	// Tamper with the log: verify names the record and exits 1.
	dir := d.Main.Audit().Dir()
	files, _ := filepath.Glob(filepath.Join(dir, "audit-*.jsonl"))
	b, _ := os.ReadFile(files[0])
	os.WriteFile(files[0], []byte(strings.Replace(string(b), "alice", "mallory", 1)), 0o600)
	runAsOperator(t, d, "audit", "verify").check(t, exitFailure, nil, []string{"audit log edited at record 1"})
}

// With retention, toolctl audit verify passes on a log whose oldest files
// were pruned and says which records were pruned, and when.
func TestAuditVerifyAfterRetention(t *testing.T) {
	t.Parallel()
	d := daemontest.Start(t, daemontest.WithConfig(func(c *config.Config) {
		c.Audit.MaxFileBytes = 2000
		c.Audit.Retention.MaxBytes = 6000
	}))
	for i := 0; ; i++ {
		runAt(t, d.Socket, "call", "think", "thought=keep going").check(t, exitOK, nil, nil)
		rep, err := audit.Verify(d.Main.Audit().Dir())
		if err == nil && rep.First > 1 {
			break
		}
		if i > 200 {
			t.Fatalf("nothing pruned after %d calls: %+v %v", i, rep, err)
		}
	}
	runAsOperator(t, d, "audit", "verify").check(t, exitOK, []string{"ok: ", "were pruned by retention", "retention (max_bytes 6000) removed audit-"}, nil)
}
