package daemon_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	pb "github.com/toold/toold/gen/toold/v1"
	"github.com/toold/toold/pkg/audit"
	"github.com/toold/toold/pkg/config"
	"github.com/toold/toold/pkg/daemon/daemontest"
)

// outsideRun is a run_command call asking to leave the sandbox (or not).
func outsideRun(command string, asks bool, env map[string]string) string {
	b, _ := json.Marshal(map[string]any{"command": command, "outside_sandbox": asks, "env": env})
	return string(b)
}

// Issue 25 items 6 and 7: one call outside the sandbox, live. The model's
// request runs nothing unapproved; a person's "once" runs exactly that
// command outside (the canary outside the workspace is written); the same
// command asks again, so does a changed command or environment; YOLO
// still asks; a conversation scope or edited arguments approve nothing;
// each answer has its own audit record. In AUTO, a write outside the
// workspace (which the sandbox refuses) asks with the same kind.
func TestOneCallOutsideTheSandboxEndToEnd(t *testing.T) {
	sandboxed(t)
	d := daemontest.Start(t, daemontest.WithConfig(func(c *config.Config) { c.ApprovalMode = "yolo" }))
	out := t.TempDir()
	canary := filepath.Join(out, "canary")
	write := "echo outside > " + canary
	x := newSession(t, d)
	absent := func(t *testing.T, when string) {
		t.Helper()
		if _, err := os.Stat(canary); !os.IsNotExist(err) {
			t.Fatalf("%s: the canary outside the workspace exists (%v)", when, err)
		}
	}
	var asked []*pb.RequiresApproval
	record := func(ans answer) answer {
		return func(a *pb.RequiresApproval) *pb.ApprovalDecision {
			asked = append(asked, a)
			return ans(a)
		}
	}
	checkAsk := func(t *testing.T, a *pb.RequiresApproval, command string, env map[string]string) {
		t.Helper()
		if a.GetKind() != pb.ApprovalKind_APPROVAL_KIND_OUTSIDE_SANDBOX || a.GetRule() != "builtin:outside-sandbox" {
			t.Fatalf("kind %v rule %s: %v", a.GetKind(), a.GetRule(), a)
		}
		if e := a.GetEffect(); e.GetCommand() != command || len(e.GetEnv()) != len(env) {
			t.Fatalf("shown %q env %v, want %q env %v", e.GetCommand(), e.GetEnv(), command, env)
		}
		for k, v := range env {
			if a.GetEffect().GetEnv()[k] != v {
				t.Fatalf("env %s shown as %q", k, a.GetEffect().GetEnv()[k])
			}
		}
		if s := a.GetScopes(); len(s) != 1 || s[0].GetKind() != pb.ApprovalScope_KIND_ONCE {
			t.Fatalf("scopes %v, want once only", s)
		}
	}

	// Not asked for: YOLO runs it in the sandbox, which refuses the write.
	res, _ := x.call("in", "run_command", outsideRun(write, false, nil))
	if code := res.GetStructured().AsMap()["exit_code"]; code == float64(0) {
		t.Fatalf("the sandbox let the write through: %v", res)
	}
	absent(t, "sandboxed")

	// Asked for, denied: nothing runs.
	res, _ = x.call("deny", "run_command", outsideRun(write, true, nil), record(deny("no")))
	if res.GetError().GetCode() != pb.ErrorCode_ERROR_CODE_REJECTED_BY_USER {
		t.Fatalf("denied: %v", res)
	}
	checkAsk(t, asked[len(asked)-1], write, nil)
	absent(t, "denied")

	// A conversation scope named by the client is refused by the stream
	// (the call keeps waiting: denied here); edited arguments approve
	// nothing.
	tried := false
	res, _ = x.call("conv", "run_command", outsideRun(write, true, nil), func(a *pb.RequiresApproval) *pb.ApprovalDecision {
		if !tried {
			tried = true
			x.send(&pb.ClientMessage{Msg: &pb.ClientMessage_Approval{Approval: &pb.ApprovalDecision{ApprovalId: a.GetApprovalId(), Approve: true, ScopeId: "conversation"}}})
			for {
				ev, err := x.s.Recv()
				if err != nil {
					t.Fatal(err)
				}
				if r := ev.GetRejected(); r != nil {
					if r.GetReferenceId() != a.GetApprovalId() {
						t.Fatalf("rejected %v", r)
					}
					break
				}
			}
		}
		return deny("scope refused")(a)
	})
	if res.GetError().GetCode() != pb.ErrorCode_ERROR_CODE_REJECTED_BY_USER {
		t.Fatalf("a conversation scope: %v", res)
	}
	absent(t, "conversation scope")
	res, _ = x.call("edit", "run_command", outsideRun(write, true, nil), func(a *pb.RequiresApproval) *pb.ApprovalDecision {
		return &pb.ApprovalDecision{ApprovalId: a.GetApprovalId(), Approve: true, EditedArgumentsJson: outsideRun(write+" && echo more >> "+canary, true, nil)}
	})
	if res.GetError().GetCode() != pb.ErrorCode_ERROR_CODE_REJECTED_BY_USER {
		t.Fatalf("edited arguments: %v", res)
	}
	absent(t, "edited arguments")

	// Approved once: it runs outside, exactly as shown.
	res, _ = x.call("once", "run_command", outsideRun(write, true, nil), record(approveOnce))
	if !res.GetSuccess() {
		t.Fatalf("approved once: %v", res)
	}
	if b, err := os.ReadFile(canary); err != nil || string(b) != "outside\n" {
		t.Fatalf("approved once: canary %q %v", b, err)
	}
	os.Remove(canary)

	// The same command again asks again (denied here); so does a changed
	// environment, and a changed command.
	res, _ = x.call("again", "run_command", outsideRun(write, true, nil), record(deny("not again")))
	if res.GetError().GetCode() != pb.ErrorCode_ERROR_CODE_REJECTED_BY_USER {
		t.Fatalf("again: %v", res)
	}
	absent(t, "the same command again")
	env := map[string]string{"GREETING": "hi"}
	res, _ = x.call("env", "run_command", outsideRun(write, true, env), record(deny("other env")))
	if res.GetError().GetCode() != pb.ErrorCode_ERROR_CODE_REJECTED_BY_USER {
		t.Fatalf("changed env: %v", res)
	}
	checkAsk(t, asked[len(asked)-1], write, env)
	res, _ = x.call("cmd", "run_command", outsideRun(write+"2", true, nil), record(deny("other command")))
	if res.GetError().GetCode() != pb.ErrorCode_ERROR_CODE_REJECTED_BY_USER {
		t.Fatalf("changed command: %v", res)
	}
	checkAsk(t, asked[len(asked)-1], write+"2", nil)
	absent(t, "changed")
	if _, err := os.Stat(canary + "2"); !os.IsNotExist(err) {
		t.Fatalf("the changed command ran: %v", err)
	}

	// What the sandbox exists for is still judged: denied outside too.
	res, _ = x.call("rm", "run_command", outsideRun("rm -rf ~", true, nil))
	if res.GetError().GetCode() != pb.ErrorCode_ERROR_CODE_DENIED {
		t.Fatalf("rm -rf ~ outside the sandbox: %v", res)
	}

	// Each answer has its own audit record, bound to what was shown.
	recs := auditKind(t, d, audit.KindOutsideSandbox)
	want := []string{"deny", "deny", "deny", "approve", "deny", "deny", "deny"} // denied, conversation scope then denied, edited, once, again, env, command
	if len(recs) != len(want) {
		t.Fatalf("%d outside-sandbox records, want %d: %+v", len(recs), len(want), recs)
	}
	for i, r := range recs {
		if r.GetDecision() != want[i] || r.GetArgsDigest() == "" || !strings.Contains(r.GetDetail(), write) {
			t.Errorf("record %d: %+v, want %s", i, r, want[i])
		}
	}
	if recs[3].GetArgsDigest() != recs[4].GetArgsDigest() || recs[4].GetArgsDigest() == recs[5].GetArgsDigest() {
		t.Errorf("the digest does not bind the exact command and environment: %s %s %s", recs[3].GetArgsDigest(), recs[4].GetArgsDigest(), recs[5].GetArgsDigest())
	}
}

// In AUTO, a command that writes outside the workspace (which the sandbox
// refuses) asks with the outside-sandbox kind, once only; approved, it
// writes outside.
func TestOutsideWriteAsksToLeaveTheSandboxEndToEnd(t *testing.T) {
	sandboxed(t)
	d := daemontest.Start(t)
	out := t.TempDir()
	canary := filepath.Join(out, "canary")
	x := newSession(t, d)
	var got *pb.RequiresApproval
	res, _ := x.call("w", "run_command", outsideRun("echo auto > "+canary, false, nil), func(a *pb.RequiresApproval) *pb.ApprovalDecision {
		got = a
		return approveOnce(a)
	})
	if got.GetKind() != pb.ApprovalKind_APPROVAL_KIND_OUTSIDE_SANDBOX || len(got.GetScopes()) != 1 {
		t.Fatalf("asked %v", got)
	}
	if b, err := os.ReadFile(canary); !res.GetSuccess() || err != nil || string(b) != "auto\n" {
		t.Fatalf("approved: %v, canary %q %v", res, b, err)
	}
	// A delete in the workspace asks as an ordinary call.
	os.WriteFile(filepath.Join(d.Workspace, "f"), nil, 0o644)
	x.call("rm", "run_command", outsideRun("rm -f f", false, nil), func(a *pb.RequiresApproval) *pb.ApprovalDecision {
		if a.GetKind() != pb.ApprovalKind_APPROVAL_KIND_CALL {
			t.Errorf("a delete in the workspace asked as %v", a.GetKind())
		}
		return deny("no")(a)
	})
}

// auditKind returns the audit records of one kind, as the operator reads
// them.
func auditKind(t *testing.T, d *daemontest.Daemon, kind string) []*pb.AuditRecord {
	t.Helper()
	resp, err := pb.NewAuditServiceClient(d.Conn).Tail(d.AsOperator(context.Background()), &pb.TailAuditRequest{Count: 10000})
	if err != nil {
		t.Fatal(err)
	}
	var out []*pb.AuditRecord
	for _, r := range resp.GetRecords() {
		if r.GetKind() == kind {
			out = append(out, r)
		}
	}
	return out
}
