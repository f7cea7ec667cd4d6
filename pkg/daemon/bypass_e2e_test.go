package daemon_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	pb "github.com/toold/toold/gen/toold/v1"
	"github.com/toold/toold/pkg/config"
	"github.com/toold/toold/pkg/daemon/daemontest"
	"github.com/toold/toold/pkg/testenv"
	"github.com/toold/toold/pkg/tools"
)

// canaryDaemon starts toold in mode with a policy that denies deleting the
// canary directory, a directory outside the workspace that the attacks
// below try to reach. It returns the daemon and the canary.
func canaryDaemon(t *testing.T, mode string) (*daemontest.Daemon, string) {
	t.Helper()
	dir := t.TempDir()
	canary := filepath.Join(dir, "canary")
	if err := os.MkdirAll(canary, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(canary, "keep"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	policy := filepath.Join(dir, "policy.yaml")
	body := fmt.Sprintf(`version: 1
rules:
  - name: keep-canary
    decision: deny
    reason: the canary must survive
    commands: ['rm -r|-R|--recursive ** %[1]s']
    examples: {match: ['rm -rf %[1]s'], no_match: ['rm -rf build']}
`, canary)
	if err := os.WriteFile(policy, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	// Without the sandbox: these tests hold the judge to what it promises
	// where it is the boundary (inside the sandbox the same lines run,
	// contained; sandbox_e2e_test.go and judge_e2e_test.go test that by
	// effect).
	d := daemontest.Start(t, daemontest.WithConfig(func(c *config.Config) {
		c.ApprovalMode = mode
		c.PolicyFile = policy
		c.Terminal.Sandbox = "off"
	}))
	return d, canary
}

func alive(t *testing.T, canary string) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(canary, "keep")); err != nil {
		t.Fatalf("the canary is gone: %v", err)
	}
}

func commandArgs(line string, env map[string]string) string {
	m := map[string]any{"command": line}
	if env != nil {
		m["env"] = env
	}
	b, _ := json.Marshal(m)
	return string(b)
}

// askedAndRefused answers an approval by denying it, and records what the
// person was shown.
func askedAndRefused(shown *[]*pb.RequiresApproval) answer {
	return func(a *pb.RequiresApproval) *pb.ApprovalDecision {
		*shown = append(*shown, a)
		return &pb.ApprovalDecision{ApprovalId: a.GetApprovalId(), Reason: "no"}
	}
}

// Values known only at run time, text fed into a shell, and environment
// variables: in YOLO mode none of these reaches the canary without a
// person, and what needs a person shows exactly what would run.
func TestRunTimeBypassesEndToEnd(t *testing.T) {
	d, canary := canaryDaemon(t, "yolo")
	x := newSession(t, d)
	marker := filepath.Join(t.TempDir(), "ran")
	payload := filepath.Join(t.TempDir(), "payload.sh")
	if err := os.WriteFile(payload, []byte("touch "+marker+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, line string
		env        map[string]string
		code       pb.ErrorCode
	}{
		{"substitution", "rm -rf $(echo " + canary + ")", nil, pb.ErrorCode_ERROR_CODE_REJECTED_BY_USER},
		{"default value", "rm -rf ${x:-" + canary + "}", nil, pb.ErrorCode_ERROR_CODE_REJECTED_BY_USER},
		{"xargs", "echo " + canary + " | xargs rm -rf", nil, pb.ErrorCode_ERROR_CODE_REJECTED_BY_USER},
		{"positional parameter", `sh -c 'rm -rf "$1"' _ ` + canary, nil, pb.ErrorCode_ERROR_CODE_REJECTED_BY_USER},
		{"process substitution", "bash <(echo rm -rf " + canary + ")", nil, pb.ErrorCode_ERROR_CODE_REJECTED_BY_USER},
		{"echo into sh", "echo 'rm -rf " + canary + "' | sh", nil, pb.ErrorCode_ERROR_CODE_DENIED},
		{"script written then run", "echo 'rm -rf " + canary + "' > x.sh; sh x.sh", nil, pb.ErrorCode_ERROR_CODE_REJECTED_BY_USER},
		{"BASH_ENV", "ls", map[string]string{"BASH_ENV": payload}, pb.ErrorCode_ERROR_CODE_REJECTED_BY_USER},
		{"ENV through sh", "sh -i -c true", map[string]string{"ENV": payload}, pb.ErrorCode_ERROR_CODE_REJECTED_BY_USER},
		{"metadata by decimal address", "curl -s -m 1 http://2852039166/", nil, pb.ErrorCode_ERROR_CODE_DENIED},
		{"metadata without a scheme", "curl -s -m 1 169.254.169.254/latest", nil, pb.ErrorCode_ERROR_CODE_DENIED},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			x.t = t
			var shown []*pb.RequiresApproval
			res, _ := x.call(tt.name, "run_command", commandArgs(tt.line, tt.env), askedAndRefused(&shown))
			if res.GetError().GetCode() != tt.code {
				t.Fatalf("got %v: %s", res.GetError().GetCode(), res.GetError().GetMessage())
			}
			alive(t, canary)
			if _, err := os.Stat(marker); err == nil {
				t.Fatal("the payload ran")
			}
			for _, a := range shown {
				for k, v := range tt.env {
					if a.GetEffect().GetEnv()[k] != v {
						t.Errorf("the approval does not show %s=%s: %v", k, v, a.GetEffect())
					}
				}
				if len(a.GetScopes()) != 1 {
					t.Errorf("a call that asks in every mode offers a grant: %v", a.GetScopes())
				}
			}
		})
	}
}

// git with a core.fsmonitor from GIT_CONFIG_* runs a program; after a
// person approved git status for the conversation, it still asks.
func TestGrantsCoverOnlyWhatWasShownEndToEnd(t *testing.T) {
	_, err := exec.LookPath("git")
	testenv.Need(t, err, "git (make net-deps)")
	d, canary := canaryDaemon(t, "auto")
	if out, err := exec.Command("git", "init", "-q", d.Workspace).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	marker := filepath.Join(t.TempDir(), "fsmonitor-ran")
	x := newSession(t, d)
	x.send(&pb.ClientMessage{Msg: &pb.ClientMessage_Hello{Hello: &pb.Hello{ConversationId: "grants"}}})
	forConversation := func(a *pb.RequiresApproval) *pb.ApprovalDecision {
		for _, s := range a.GetScopes() {
			if s.GetKind() == pb.ApprovalScope_KIND_CONVERSATION && s.GetCommandPrefix() != "" {
				return &pb.ApprovalDecision{ApprovalId: a.GetApprovalId(), Approve: true, ScopeId: s.GetScopeId()}
			}
		}
		t.Fatalf("no command scope offered: %v", a.GetScopes())
		return nil
	}
	for _, approved := range []string{"git status", "rm -rf build"} {
		if res, _ := x.call("approve "+approved, "run_command", commandArgs(approved, nil), forConversation); !res.GetSuccess() {
			t.Fatalf("%s: %v", approved, res)
		}
	}
	// Covered: the same commands, written out.
	if res, evs := x.call("covered", "run_command", commandArgs("git status --short && rm -rf build2", nil)); !res.GetSuccess() || askedIn(evs) {
		t.Fatalf("covered call: %v", res)
	}
	for i, tt := range []struct {
		line string
		env  map[string]string
	}{
		{"git status", map[string]string{"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "core.fsmonitor", "GIT_CONFIG_VALUE_0": "touch " + marker}},
		{"git -c core.fsmonitor='touch " + marker + "' status", nil},
		{"GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=core.fsmonitor GIT_CONFIG_VALUE_0='touch " + marker + "' git status", nil},
		{"rm -rf ${x:-" + canary + "}", nil},
		{"rm -rf $(echo " + canary + ")", nil},
		{"timeout 5 rm -rf " + canary, nil},
	} {
		var shown []*pb.RequiresApproval
		res, _ := x.call(fmt.Sprint("attempt-", i), "run_command", commandArgs(tt.line, tt.env), askedAndRefused(&shown))
		if res.GetSuccess() || len(shown) == 0 && res.GetError().GetCode() != pb.ErrorCode_ERROR_CODE_DENIED {
			t.Errorf("%q (env %v) ran under a grant for something else: %v", tt.line, tt.env, res)
		}
		alive(t, canary)
		if _, err := os.Stat(marker); err == nil {
			t.Fatalf("%q ran git's fsmonitor", tt.line)
		}
	}
}

func askedIn(evs []*pb.ServerEvent) bool {
	for _, e := range evs {
		if e.GetRequiresApproval() != nil {
			return true
		}
	}
	return false
}

// A line typed into a terminal across several send_input calls is judged
// when it is submitted.
func TestSplitTerminalInputEndToEnd(t *testing.T) {
	d, canary := canaryDaemon(t, "yolo")
	x := newSession(t, d)
	x.send(&pb.ClientMessage{Msg: &pb.ClientMessage_Hello{Hello: &pb.Hello{ConversationId: "pty"}}})
	res, _ := x.call("open", "create_session", `{}`)
	sid, _ := res.GetStructured().AsMap()["session_id"].(string)
	if sid == "" {
		t.Fatalf("create_session: %v", res)
	}
	// Type only once the shell shows its prompt: readline drops typeahead
	// it receives while it starts.
	waitOutput := func(want string) string {
		t.Helper()
		var out strings.Builder
		deadline := time.Now().Add(20 * time.Second)
		for !strings.Contains(out.String(), want) && time.Now().Before(deadline) {
			r, _ := x.call(fmt.Sprint("read-", time.Now().UnixNano()), "get_output", fmt.Sprintf(`{"session_id":%q,"wait_ms":500,"raw":true}`, sid))
			out.WriteString(r.GetContent()[0].GetText())
		}
		if !strings.Contains(out.String(), want) {
			t.Fatalf("the terminal did not show %q; it showed %q", want, tools.Clip(out.String(), 2000))
		}
		return out.String()
	}
	x.call("env", "send_input", fmt.Sprintf(`{"session_id":%q,"data":"echo ready-$((1+1))\n"}`, sid))
	waitOutput("ready-2")
	typed := func(id, data string) *pb.ToolResult {
		b, _ := json.Marshal(map[string]any{"session_id": sid, "data": data})
		var shown []*pb.RequiresApproval
		res, _ := x.call(id, "send_input", string(b), askedAndRefused(&shown))
		return res
	}
	for i, part := range []string{"rm -r", "f "} {
		if r := typed(fmt.Sprint("t0-", i), part); !r.GetSuccess() {
			t.Fatalf("typing a harmless prefix %q: %v", part, r)
		}
	}
	if r := typed("t2", canary+"\n"); r.GetError().GetCode() != pb.ErrorCode_ERROR_CODE_DENIED {
		t.Fatalf("the submitted line was not judged whole: %v", r)
	}
	// The refused input was not typed; the line still holds "rm -rf ".
	// ^C discards it — in YOLO without asking (issue 24: it asked) —
	// then the terminal runs the next line.
	ctrlC := func(id string) {
		t.Helper()
		b, _ := json.Marshal(map[string]any{"session_id": sid, "data": "\u0003"})
		if r, _ := x.call(id, "send_input", string(b)); !r.GetSuccess() {
			t.Fatalf("^C: %v", r)
		}
		// The terminal flushes its input at ^C: type on only once it
		// showed it.
		waitOutput("^C")
	}
	ctrlC("t3")
	b, _ := json.Marshal(map[string]any{"session_id": sid, "data": "echo still-$((40+2))\n"})
	if r, _ := x.call("t4", "send_input", string(b)); !r.GetSuccess() {
		t.Fatalf("next line: %v", r)
	}
	waitOutput("still-42")
	// ^C to a program in the foreground (not the shell) interrupts it,
	// unasked: the next line runs at once, not after a minute.
	b, _ = json.Marshal(map[string]any{"session_id": sid, "data": "echo started-$((2+3)); sleep 60\n"})
	if r, _ := x.call("t5", "send_input", string(b)); !r.GetSuccess() {
		t.Fatalf("sleep: %v", r)
	}
	waitOutput("started-5")
	ctrlC("t6")
	b, _ = json.Marshal(map[string]any{"session_id": sid, "data": "echo after-$((1+2))\n"})
	if r, _ := x.call("t7", "send_input", string(b)); !r.GetSuccess() {
		t.Fatalf("line after ^C: %v", r)
	}
	waitOutput("after-3")
	alive(t, canary)
}

// A committed .env stays a sensitive path for git_show: the file it shows
// is judged, in every mode.
func TestGitShowOfASensitiveFileEndToEnd(t *testing.T) {
	_, err := exec.LookPath("git")
	testenv.Need(t, err, "git (make net-deps)")
	d := daemontest.Start(t, daemontest.WithConfig(func(c *config.Config) { c.ApprovalMode = "yolo" }))
	for _, args := range [][]string{
		{"init", "-q"}, {"config", "user.email", "t@example.com"}, {"config", "user.name", "t"},
	} {
		if out, err := exec.Command("git", append([]string{"-C", d.Workspace}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	if err := os.WriteFile(filepath.Join(d.Workspace, ".env"), []byte("SECRET=canary\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"add", "-f", ".env"}, {"commit", "-qm", "oops"}} {
		if out, err := exec.Command("git", append([]string{"-C", d.Workspace}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	x := newSession(t, d)
	res, _ := x.call("show", "git_show", `{"ref":"HEAD","path":".env"}`)
	if res.GetError().GetCode() != pb.ErrorCode_ERROR_CODE_DENIED || strings.Contains(res.String(), "canary") {
		t.Fatalf("git_show of .env: %v", res)
	}
}
