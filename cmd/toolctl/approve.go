package main

import (
	"context"
	"fmt"
	"strings"

	pb "github.com/toold/toold/gen/toold/v1"
)

// asker answers the questions a call asks its client while it runs: policy
// approvals (RequiresApproval) and questions of a tool (InputRequired).
//
// The call loop calls it from its own goroutine, one question at a time,
// and sends the answer; events of the call wait meanwhile. Implementations
// must return promptly once ctx is done (the user pressed Ctrl-C), with a
// denial. A later interactive implementation asks the person at the
// terminal; denyAsker is the one toolctl has now.
type asker interface {
	// approve decides a RequiresApproval of the call callID. The returned
	// decision's approval_id must be req's.
	approve(ctx context.Context, callID string, req *pb.RequiresApproval) *pb.ApprovalDecision
	// answer returns the text answer to an InputRequired of the call
	// callID; ok false means there is none, and the call is canceled.
	answer(ctx context.Context, callID string, req *pb.InputRequired) (text string, ok bool)
}

// denyReason is what the model is told when toolctl denies an approval.
const denyReason = "toolctl cannot answer approvals yet"

// denyAsker shows what is asked and denies every approval; it answers no
// question. show writes one message for the person (on stderr).
type denyAsker struct {
	show func(msg string)
}

var _ asker = denyAsker{}

func (d denyAsker) approve(_ context.Context, _ string, req *pb.RequiresApproval) *pb.ApprovalDecision {
	d.show(describeApproval(req) + "\ndenied: " + denyReason + " (run toold in YOLO mode or add an allow rule)")
	return &pb.ApprovalDecision{ApprovalId: req.GetApprovalId(), Approve: false, Reason: denyReason}
}

func (d denyAsker) answer(_ context.Context, _ string, req *pb.InputRequired) (string, bool) {
	d.show("the call asks: " + req.GetPrompt() + "\ntoolctl cannot answer questions yet; canceling the call")
	return "", false
}

// describeApproval says in a few lines what an approval request is about.
func describeApproval(req *pb.RequiresApproval) string {
	var b strings.Builder
	e := req.GetEffect()
	summary := e.GetSummary()
	if summary == "" {
		summary = "a call"
	}
	fmt.Fprintf(&b, "approval requested (%s risk): %s", riskName(req.GetRisk()), summary)
	line := func(label, v string) {
		if v != "" {
			fmt.Fprintf(&b, "\n  %s: %s", label, v)
		}
	}
	line("reason", req.GetReason())
	line("rule", req.GetRule())
	line("command", e.GetCommand())
	line("reads", strings.Join(e.GetReads(), ", "))
	line("writes", strings.Join(e.GetWrites(), ", "))
	line("hosts", strings.Join(e.GetHosts(), ", "))
	return b.String()
}
