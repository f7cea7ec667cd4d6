package service_test

import (
	"context"
	"testing"

	pb "github.com/toold/toold/gen/toold/v1"
	"github.com/toold/toold/pkg/authz"
	"github.com/toold/toold/pkg/executor"
	"github.com/toold/toold/pkg/tools"
)

// panicky is a tool that panics in the method its call names (argument
// "in"); the policy asks for every call, so Preview runs too.
type panicky struct{ *fakeTool }

func in(c *tools.Call) string { s, _ := c.Args["in"].(string); return s }

func (p panicky) Describe(c *tools.Call) tools.Effect {
	if in(c) == "Describe" {
		panic("describe bug")
	}
	return tools.Effect{Display: "panicky"}
}

func (p panicky) Preview(_ context.Context, c *tools.Call) (string, error) {
	if in(c) == "Preview" {
		panic("preview bug")
	}
	return "", nil
}

func (p panicky) StartsProcess(c *tools.Call) bool {
	if in(c) == "StartsProcess" {
		panic("starts-process bug")
	}
	return false
}

func (p panicky) ProgressResetsTimeout() bool { panic("progress-timed bug") }

func (p panicky) Run(ctx context.Context, c *tools.Call, s *tools.Sink) (*tools.Result, error) {
	if in(c) == "Run" {
		panic("run bug")
	}
	return &tools.Result{Text: "ran"}, nil
}

// askAll asks for every call of "panicky", so that its Preview runs.
type askAll struct{ fakePolicy }

func (a *askAll) Authorize(_ context.Context, r *authz.Request) (authz.Verdict, error) {
	if r.Tool != "panicky" {
		return authz.Verdict{Decision: authz.Allow, Risk: r.Risk}, nil
	}
	return authz.Verdict{Decision: authz.Ask, Risk: tools.RiskHigh, Reason: "always",
		Scopes: []authz.Scope{{ID: "once", Tool: "panicky", Operation: "panicky", Description: "this call only"}}}, nil
}

// A panic in any method toold calls on a tool ends that call INTERNAL and
// nothing else: the stream and the daemon go on serving.
func TestToolPanicsEndOnlyTheCall(t *testing.T) {
	p := panicky{simple("panicky", `{"type":"object","properties":{"in":{"type":"string"}}}`, nil)}
	h := start(t, executor.Config{Authorizer: &askAll{}}, p, &tools.Think{})
	c := h.open(nil)
	for _, method := range []string{"Describe", "Preview", "StartsProcess", "ProgressResetsTimeout", "Run"} {
		t.Run(method, func(t *testing.T) {
			id := "p-" + method
			c.call(id, "panicky", `{"in":"`+method+`"}`)
			if method != "Describe" && method != "Preview" {
				// (The preview is made before the approval is asked.)
				a := approvalOf(c, id)
				decide(c, &pb.ApprovalDecision{ApprovalId: a.GetApprovalId(), Approve: true})
			}
			if res, _ := c.end(id); res.GetError().GetCode() != pb.ErrorCode_ERROR_CODE_INTERNAL {
				t.Fatalf("panic in %s: %v", method, res)
			}
			c.call("t-"+method, "think", `{"thought":"still here"}`)
			if res, _ := c.end("t-" + method); !res.GetSuccess() {
				t.Fatalf("the stream did not go on: %v", res)
			}
		})
	}
}
