package executor

import (
	"context"

	"github.com/toold/toold/pkg/authz"
	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/tools"
)

// Explanation is what policy would decide on a call, without running it.
type Explanation struct {
	Tool, Operation string
	Effect          tools.Effect
	Verdict         authz.Verdict
	// Err is set when the call could not be judged (unknown tool, invalid
	// arguments); the model would get it as the call's error.
	Err error
}

// Explain resolves, validates and describes the call as Run would, and asks
// explainer what policy would decide, granting nothing. The tool's methods
// run under the same panic guard as a call's.
func (x *Executor) Explain(ctx context.Context, explainer authz.Explainer, req *CallRequest) *Explanation {
	out := &Explanation{}
	target, call, _, err := x.prepare(ctx, req)
	if target != nil {
		out.Tool, out.Operation = target.ToolName, target.Operation
	}
	if err == nil {
		out.Effect, err = guard(call, "Describe", func() (tools.Effect, error) { return target.Tool.Describe(call), nil })
	}
	if err != nil {
		out.Err = err
		return out
	}
	if explainer == nil {
		out.Err = errdefs.New(errdefs.ErrUnavailable, "the configured policy cannot explain decisions")
		return out
	}
	risk := target.Risk
	if out.Effect.Risk != tools.RiskUnknown {
		risk = out.Effect.Risk
	}
	out.Verdict, out.Err = guard(call, "Explain", func() (authz.Verdict, error) {
		return explainer.Explain(ctx, &authz.Request{
			ConversationID: req.ConversationID, CallID: req.CallID, Mode: req.Mode,
			Tool: target.ToolName, Operation: target.Operation, Args: call.Args, Effect: out.Effect, Risk: risk,
		})
	})
	return out
}
