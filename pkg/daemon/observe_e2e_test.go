package daemon_test

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	pb "github.com/toold/toold/gen/toold/v1"
	"github.com/toold/toold/pkg/audit"
	"github.com/toold/toold/pkg/authz"
	"github.com/toold/toold/pkg/config"
	"github.com/toold/toold/pkg/daemon/daemontest"
	"github.com/toold/toold/pkg/hooks"
)

func hookScript(t *testing.T, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("..", "..", "testdata", "hooks", name))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Hooks, audit, history and metrics through a real daemon: a pre-hook's
// deny, amend and added context reach the model; the post-hook's context
// too; the audit log verifies and holds the decision, hook and call
// records; history and /metrics show the calls.
func TestHooksAuditHistoryEndToEnd(t *testing.T) {
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("no /usr/bin/python3")
	}
	d := daemontest.Start(t, daemontest.WithConfig(func(c *config.Config) {
		c.DebugAddr = "127.0.0.1:0"
		c.Hooks = hooks.Config{
			Pre: []hooks.Hook{
				{Name: "validator", Match: []string{"run_command"}, Command: "/usr/bin/python3 " + hookScript(t, "bash_validator.py")},
				{Name: "decide", Match: []string{"file_operations.*"}, Command: "/usr/bin/python3 " + hookScript(t, "decide.py")},
			},
			Post: []hooks.Hook{{Name: "post", Match: []string{"read_file"}, Command: "bash " + hookScript(t, "post_context.sh")}},
		}
	}))
	for _, f := range []string{"secret.txt", "README.md", "main.go"} {
		os.WriteFile(filepath.Join(d.Workspace, f), []byte(strings.Repeat("line\n", 300)), 0o600)
	}
	s := newSession(t, d)
	s.send(&pb.ClientMessage{Msg: &pb.ClientMessage_Hello{Hello: &pb.Hello{ConversationId: "obs", ClientName: "e2e"}}})

	res, _ := s.call("1", "read_file", `{"path":"secret.txt"}`)
	if res.GetError().GetCode() != pb.ErrorCode_ERROR_CODE_DENIED || !strings.Contains(res.GetError().GetMessage(), "holds secrets") {
		t.Fatalf("hook deny: %v", res)
	}
	res, _ = s.call("2", "read_file", `{"path":"README.md","limit":3}`)
	if !res.GetSuccess() || !strings.Contains(textOf(res), "[hook] docs are public") || !strings.Contains(textOf(res), "[hook] post hook saw 2") {
		t.Fatalf("hook context: %v", res)
	}
	res, _ = s.call("3", "read_file", `{"path":"main.go","limit":250}`)
	if !res.GetSuccess() || !strings.Contains(textOf(res), `[toold] a pre-tool hook changed the arguments to {"limit":100,"path":"main.go"}`) {
		t.Fatalf("hook amend: %v", res)
	}
	if n := strings.Count(textOf(res), "\tline\n"); n != 100 {
		t.Fatalf("amended limit not applied: %d lines", n)
	}
	res, _ = s.call("4", "run_command", `{"command":"grep -r foo ."}`)
	if res.GetError().GetCode() != pb.ErrorCode_ERROR_CODE_DENIED || !strings.Contains(res.GetError().GetMessage(), "Use 'rg'") {
		t.Fatalf("validator: %v", res)
	}
	res, _ = s.call("5", "read_file", `{"path":"main.go","limit":"lots"}`)
	if res.GetError().GetCode() != pb.ErrorCode_ERROR_CODE_INVALID_ARGUMENTS {
		t.Fatalf("bad args: %v", res)
	}

	ctx := context.Background()
	// A call's end is recorded (audit, history, metrics) once its End is
	// on its way to the client: wait for the last one.
	waitCallEnds(t, d.Main.Audit().Dir(), 5)
	v, err := pb.NewAuditServiceClient(d.Conn).Verify(d.AsOperator(ctx), &pb.VerifyAuditRequest{})
	if err != nil || !v.Ok {
		t.Fatalf("verify: %v %v", err, v)
	}
	recs, err := audit.Tail(d.Main.Audit().Dir(), 1000)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	var end3 audit.Record
	for _, r := range recs {
		kinds[r.Kind]++
		if r.Kind == audit.KindCallEnd && r.CallID == "3" {
			end3 = r
		}
	}
	// hooks: 1 (deny) + 2 pre and post for call 2 + 1 for call 3 + post 3 + validator 4.
	if kinds[audit.KindDecision] != 2 || kinds[audit.KindCallStart] != 2 || kinds[audit.KindCallEnd] != 5 || kinds[audit.KindHook] != 6 {
		t.Fatalf("audit kinds %v", kinds)
	}
	if end3.ArgsDigest != audit.Digest([]byte(`{"limit":100,"path":"main.go"}`)) || end3.ResultDigest == "" || end3.Outcome != "success" {
		t.Fatalf("call.end %+v", end3)
	}

	h, err := pb.NewHistoryServiceClient(d.Conn).Query(d.AsOperator(ctx), &pb.QueryHistoryRequest{ConversationId: "obs"})
	if err != nil || len(h.Entries) != 5 {
		t.Fatalf("history: %v %v", err, h)
	}
	if e := h.Entries[2]; e.CallId != "3" || e.Decision != "allow" || e.ArgumentsJson != `{"limit":100,"path":"main.go"}` || e.Outcome != "success" {
		t.Fatalf("history entry %v", e)
	}
	if e := h.Entries[4]; e.CallId != "1" || e.Outcome != "error" || e.ErrorCode != "DENIED" {
		t.Fatalf("history entry %v", e)
	}

	wants := []string{
		`toold_calls_total{code="DENIED",operation="read_file",outcome="error",tool="file_operations"} 1`,
		`toold_calls_total{code="",operation="read_file",outcome="success",tool="file_operations"} 2`,
		`toold_hook_duration_seconds_count{event="PreToolUse",hook="decide",verdict="deny"} 1`,
		`toold_audit_records_total{kind="call.end"} 5`,
	}
	// The last record's count follows its append: poll.
	for deadline := time.Now().Add(10 * time.Second); ; {
		r, err := http.Get("http://" + d.Main.DebugAddr() + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(r.Body)
		r.Body.Close()
		var missing []string
		for _, want := range wants {
			if !strings.Contains(string(body), want) {
				missing = append(missing, want)
			}
		}
		if len(missing) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/metrics lacks %v", missing)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// An approval may edit the arguments (validated, judged again, the model
// told) and save its scope as a rule in the policy file.
func TestRicherApprovals(t *testing.T) {
	ws := t.TempDir()
	policy := filepath.Join(t.TempDir(), "policy.yaml")
	os.WriteFile(policy, []byte("# team policy\nrules: []\n"), 0o600)
	// ASK: AUTO runs echo, printf and date without asking.
	d := daemontest.Start(t, daemontest.WithWorkspace(ws), daemontest.WithConfig(func(c *config.Config) { c.PolicyFile = policy; c.ApprovalMode = "ask" }))
	s := newSession(t, d)
	s.send(&pb.ClientMessage{Msg: &pb.ClientMessage_Hello{Hello: &pb.Hello{ConversationId: "rich", ClientName: "alice"}}})

	edit := func(args string, save bool) answer {
		return func(a *pb.RequiresApproval) *pb.ApprovalDecision {
			scope := ""
			for _, sc := range a.GetScopes() {
				if sc.GetCommandPrefix() != "" {
					scope = sc.GetScopeId()
				}
			}
			return &pb.ApprovalDecision{ApprovalId: a.GetApprovalId(), Approve: true, ScopeId: scope, SaveAsRule: save, EditedArgumentsJson: args}
		}
	}
	res, _ := s.call("1", "run_command", `{"command":"echo from-the-model"}`, edit(`{"command":"echo edited"}`, true))
	if !res.GetSuccess() || !strings.Contains(textOf(res), "edited") || strings.Contains(textOf(res), "from-the-model\n") ||
		!strings.Contains(textOf(res), `[toold] the person approved this call with edited arguments: {"command":"echo edited"}`) {
		t.Fatalf("edited: %v", res)
	}
	p, err := authz.LoadPolicy(policy)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(policy)
	if names := p.RuleNames(); !strings.HasPrefix(names[len(names)-1], "approved-terminal_operations") || !strings.Contains(string(b), "# team policy") || !strings.Contains(string(b), "command: echo edited") {
		t.Fatalf("saved rule: %v\n%s", names, b)
	}
	// Edited into something the policy denies: nothing runs.
	res, _ = s.call("2", "run_command", `{"command":"printf hi"}`, edit(`{"command":"rm -rf /"}`, false))
	if res.GetError().GetCode() != pb.ErrorCode_ERROR_CODE_DENIED {
		t.Fatalf("edited into a denied call: %v", res)
	}
	// Edited into arguments the schema refuses.
	res, _ = s.call("3", "run_command", `{"command":"date"}`, edit(`{"command":42}`, false))
	if res.GetError().GetCode() != pb.ErrorCode_ERROR_CODE_INVALID_ARGUMENTS {
		t.Fatalf("edited into bad arguments: %v", res)
	}
	recs, _ := audit.Tail(d.Main.Audit().Dir(), 100)
	var approvals, rules int
	for _, r := range recs {
		if r.Kind == audit.KindApproval && r.Who == "alice" {
			approvals++
		}
		if r.Kind == audit.KindGrant && r.Scope == "rule" {
			rules++
		}
	}
	if approvals != 3 || rules != 1 {
		t.Fatalf("audit: %d approvals by alice, %d rules saved", approvals, rules)
	}
}

// "This call only" saved as a rule would allow the whole operation: it is
// not saved.
func TestOnceApprovalIsNotSavedAsRule(t *testing.T) {
	policy := filepath.Join(t.TempDir(), "policy.yaml")
	os.WriteFile(policy, []byte("rules: []\n"), 0o600)
	d := daemontest.Start(t, daemontest.WithConfig(func(c *config.Config) { c.PolicyFile = policy; c.ApprovalMode = "ask" }))
	s := newSession(t, d)
	once := func(a *pb.RequiresApproval) *pb.ApprovalDecision {
		return &pb.ApprovalDecision{ApprovalId: a.GetApprovalId(), Approve: true, SaveAsRule: true}
	}
	if res, _ := s.call("1", "run_command", `{"command":"echo once"}`, once); !res.GetSuccess() {
		t.Fatalf("approved once: %v", res)
	}
	p, err := authz.LoadPolicy(policy)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range p.RuleNames() {
		if strings.HasPrefix(n, "approved-") {
			t.Fatalf("a once-only approval was saved as rule %s", n)
		}
	}
}

// textOf joins a result's text contents.
func textOf(r *pb.ToolResult) string {
	var b strings.Builder
	for _, c := range r.GetContent() {
		b.WriteString(c.GetText())
	}
	return b.String()
}

// Revoking a grant through the PolicyService is in the audit log.
func TestRevocationAudited(t *testing.T) {
	// ASK: AUTO runs echo without asking.
	d := daemontest.Start(t, daemontest.WithConfig(func(c *config.Config) { c.ApprovalMode = "ask" }))
	s := newSession(t, d)
	s.send(&pb.ClientMessage{Msg: &pb.ClientMessage_Hello{Hello: &pb.Hello{ConversationId: "rev", ClientName: "bob"}}})
	conv := func(a *pb.RequiresApproval) *pb.ApprovalDecision {
		for _, sc := range a.GetScopes() {
			if sc.GetKind() == pb.ApprovalScope_KIND_CONVERSATION {
				return &pb.ApprovalDecision{ApprovalId: a.GetApprovalId(), Approve: true, ScopeId: sc.GetScopeId()}
			}
		}
		return &pb.ApprovalDecision{ApprovalId: a.GetApprovalId(), Approve: true}
	}
	if res, _ := s.call("1", "run_command", `{"command":"echo hi"}`, conv); !res.GetSuccess() {
		t.Fatalf("call: %v", res)
	}
	pc := pb.NewPolicyServiceClient(d.Conn)
	op := d.AsOperator(context.Background()) // the grants are the operator's (or the conversation's)
	gs, err := pc.ListGrants(op, &pb.ListGrantsRequest{ConversationId: "rev"})
	if err != nil || len(gs.GetGrants()) == 0 {
		t.Fatalf("grants: %v %v", err, gs)
	}
	id := gs.GetGrants()[0].GetGrantId()
	if _, err := pc.RevokeGrant(op, &pb.RevokeGrantRequest{GrantId: id}); err != nil {
		t.Fatal(err)
	}
	recs, _ := audit.Tail(d.Main.Audit().Dir(), 100)
	var granted, revoked bool
	for _, r := range recs {
		granted = granted || (r.Kind == audit.KindGrant && r.GrantID == id && r.Who == "bob")
		revoked = revoked || (r.Kind == audit.KindRevocation && r.GrantID == id && r.Conversation == "rev")
	}
	if !granted || !revoked {
		t.Fatalf("audit: granted %v revoked %v: %+v", granted, revoked, recs)
	}
}

// waitCallEnds waits until the audit log in dir holds n call.end records.
func waitCallEnds(t *testing.T, dir string, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		recs, err := audit.Tail(dir, 1000)
		if err != nil {
			t.Fatal(err)
		}
		got := 0
		for _, r := range recs {
			if r.Kind == audit.KindCallEnd {
				got++
			}
		}
		if got >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d call.end records in the audit log, want %d", got, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
