package main

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"

	pb "github.com/toold/toold/gen/toold/v1"
	"github.com/toold/toold/pkg/authz"
	"github.com/toold/toold/pkg/daemon/daemontest"
)

// TestPolicyExplain explains allowed, asked and denied calls of a real
// toold whose policy judges commands sub-command by sub-command.
func TestPolicyExplain(t *testing.T) {
	t.Parallel()
	d, pol, g := startGuarded(t)
	grant, err := pol.Grant("conv-g", authz.Scope{ID: "conv", Conversation: true, Tool: "guarded", Operation: "guarded",
		PathPrefix: "src/", TTL: 5 * time.Minute, Description: "guarded under src/ for 5m"}, false, 5*time.Minute, "tester")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		stdin  string
		args   []string
		code   int
		stdout []string
		stderr []string
		// operator: toolctl finds the operator credential (the grants of
		// a named conversation are consulted only for its holder or the
		// operator).
		operator bool
	}{
		{name: "allow", args: []string{"guarded", "command=ls -l"}, stdout: []string{
			"decision: allow (high risk)\nreason:   every sub-command is allowed\ntool:     guarded\nmode:     auto\nsummary:  Run guarded: ls -l\ncommand:  ls -l\n          allow ls -l  rule allow-rest\nwrites:   src/main.go\nhosts:    example.com\n",
		}},
		{name: "ask", args: []string{"guarded", "command=git status && sudo rm -rf build"}, stdout: []string{
			"decision: ask (high risk)\nreason:   rm deletes files\nrule:     ask-rm\n",
			"command:  git status && sudo rm -rf build\n",
			"          allow git status    rule allow-rest\n",
			"          ask   rm -rf build  rule ask-rm · via sudo\n",
			"offers:   once: this call only\n          for the conversation: guarded under src/ for 5m\n",
		}},
		{name: "deny", args: []string{"guarded", "command=ls && shutdown now"}, stdout: []string{
			"decision: deny (high risk)\nreason:   shutdown is never allowed\nrule:     deny-shutdown\n",
			"          deny  shutdown now  rule deny-shutdown\n",
		}},
		{name: "a grant applies", operator: true, args: []string{"guarded", "command=rm -rf build", "--conversation", "conv-g"}, stdout: []string{
			"decision: allow (high risk)\nreason:   a grant allows it\nrule:     ask-rm\n",
			"grant:    " + grant.ID + " in conversation conv-g: guarded under src/ for 5m, granted by tester, expires in ",
		}},
		{name: "a conversation's grant is not told to another client", args: []string{"guarded", "command=rm -rf build", "--conversation", "conv-g"},
			stdout: []string{"decision: ask (high risk)\nreason:   rm deletes files\n"}},
		{name: "another conversation's grant does not", args: []string{"guarded", "command=rm -rf build", "--conversation", "conv-h"},
			stdout: []string{"decision: ask"}},
		{name: "stricter mode", args: []string{"think", "thought=hi", "--mode", "ASK"}, stdout: []string{"decision: allow (low risk)\nreason:   not guarded\ntool:     think\nmode:     ask\n"}},
		{name: "looser mode is not applied", args: []string{"think", "thought=hi", "--mode", "yolo"}, stdout: []string{"mode:     auto\n"}},
		{name: "args from stdin", stdin: `{"command": "rm x"}`, args: []string{"guarded", "--args", "-"}, stdout: []string{"decision: ask", "command:  rm x\n"}},
		{name: "dotted name", args: []string{"file_operations.read_file", "path=go.mod"}, stdout: []string{"tool:     file_operations.read_file\n"}},
		{name: "unknown tool", args: []string{"guardd", "command=ls"}, code: exitFailure, stderr: []string{"error: TOOL_NOT_FOUND: ", "suggestions: guarded"}},
		{name: "invalid arguments", args: []string{"guarded", "command:=1"}, code: exitFailure, stderr: []string{"error: INVALID_ARGUMENTS: ", "field: /command"}},
		{name: "bad mode", args: []string{"guarded", "--mode", "lax"}, code: exitUsage, stderr: []string{`--mode "lax": want yolo, auto or ask`}},
		{name: "bad pair", args: []string{"guarded", "command"}, code: exitUsage, stderr: []string{"want key=value or key:=JSON"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := cli{stdin: tt.stdin}
			if tt.operator {
				c.env = map[string]string{"TOOLD_STATE_DIR": d.Main.Config.StateDir}
			}
			r := c.run(t, append([]string{"--socket", d.Socket, "policy", "explain"}, tt.args...)...)
			r.check(t, tt.code, tt.stdout, tt.stderr)
		})
	}
	if g.ran.Load() != 0 {
		t.Error("explaining ran the tool")
	}
	if len(pol.Grants("")) != 1 {
		t.Error("explaining changed the grants")
	}
}

// TestPolicyExplainJSON checks that --json prints the ExplainResponse.
func TestPolicyExplainJSON(t *testing.T) {
	t.Parallel()
	d, _, _ := startGuarded(t)
	tests := []struct {
		name     string
		args     []string
		code     int
		decision pb.Decision
		cmds     []string // decisions of the sub-commands
		scopes   int
		errCode  pb.ErrorCode
	}{
		{"allow", []string{"guarded", "command=ls"}, exitOK, pb.Decision_DECISION_ALLOW, []string{"allow"}, 0, 0},
		{"ask", []string{"guarded", "command=ls && rm -rf build"}, exitOK, pb.Decision_DECISION_ASK, []string{"allow", "ask"}, 2, 0},
		{"deny", []string{"guarded", "command=rm x && shutdown now"}, exitOK, pb.Decision_DECISION_DENY, []string{"ask", "deny"}, 0, 0},
		{"unknown tool", []string{"nope"}, exitFailure, pb.Decision_DECISION_UNSPECIFIED, nil, 0, pb.ErrorCode_ERROR_CODE_TOOL_NOT_FOUND},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := runAt(t, d.Socket, append([]string{"policy", "explain", "--json"}, tt.args...)...)
			r.check(t, tt.code, nil, nil)
			resp := &pb.ExplainResponse{}
			if err := protojson.Unmarshal([]byte(r.stdout), resp); err != nil {
				t.Fatalf("stdout is not an ExplainResponse: %v\n%s", err, r.stdout)
			}
			var cmds []string
			for _, c := range resp.GetEffect().GetCommands() {
				cmds = append(cmds, c.GetDecision())
			}
			if resp.GetDecision() != tt.decision || strings.Join(cmds, ",") != strings.Join(tt.cmds, ",") ||
				len(resp.GetScopes()) != tt.scopes || resp.GetError().GetCode() != tt.errCode {
				t.Errorf("response %v", resp)
			}
			if tt.errCode != 0 && !strings.Contains(r.stderr, "error: "+codeName(tt.errCode)) {
				t.Errorf("stderr lacks the error:\n%s", r.stderr)
			}
		})
	}
}

// TestPolicyWithoutExplainer runs the policy commands against a toold whose
// policy neither explains nor keeps grants.
func TestPolicyWithoutExplainer(t *testing.T) {
	t.Parallel()
	// A daemon whose authorizer can neither explain nor keep grants.
	d := startDaemon(t, nil, nil, daemontest.WithAuthorizer(authz.AllowAll{}, authz.Capabilities{}))
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"policy", "explain", "think", "thought=x"}, "explain: toold at " + d.Socket + " cannot: the configured authorizer cannot explain decisions"},
		{[]string{"grants"}, "list grants: toold at " + d.Socket + " cannot: the configured authorizer keeps no grants"},
		{[]string{"grants", "revoke", "g-1"}, "revoke grant: toold at " + d.Socket + " cannot"},
	}
	for _, tt := range tests {
		r := runAt(t, d.Socket, tt.args...)
		r.check(t, exitFailure, nil, []string{tt.want})
	}
}

// TestPolicyUsage checks the policy command's own usage errors.
func TestPolicyUsage(t *testing.T) {
	t.Parallel()
	r := cli{}.run(t, "--socket", "/nonexistent/toold.sock", "policy", "explian")
	r.check(t, exitUsage, nil, []string{`unknown command "explian" for "toolctl policy"`})
	r = cli{}.run(t, "--socket", "/nonexistent/toold.sock", "policy", "explain")
	r.check(t, exitUsage, nil, []string{"requires at least 1 arg"})
	r = cli{}.run(t, "policy")
	r.check(t, exitOK, []string{"explain", "Say how toold would decide a call"}, nil)
}
