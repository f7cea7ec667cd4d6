package executor

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/toold/toold/pkg/audit"
	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/events"
	"github.com/toold/toold/pkg/tools"
)

// outsideSandboxAnswer completes a person's answer to an approval of the
// outside-sandbox kind (events.ApprovalRequest.OutsideSandbox) before it
// counts: it is audited with a record of its own, bound to the exact
// command, directory and environment the person was shown, and it approves
// this call only — a conversation scope is refused (the policy offers none;
// a client that names one approves nothing), and so are edited arguments
// (what runs outside must be exactly what was shown: deny, and the model
// may ask again) and saving a rule.
func (x *Executor) outsideSandboxAnswer(ctx context.Context, req *CallRequest, target *tools.Target, ar *events.ApprovalRequest, ans *Approval) error {
	e := ar.Effect
	exact, _ := json.Marshal(struct {
		Command string            `json:"command"`
		Dir     string            `json:"working_dir"`
		Env     map[string]string `json:"env"`
	}{e.Command, e.Dir, e.Env})
	names := make([]string, 0, len(e.Env))
	for k := range e.Env {
		names = append(names, k)
	}
	slices.Sort(names)
	dir := e.Dir
	if dir == "" {
		dir = "."
	}
	detail := fmt.Sprintf("outside the sandbox: %s (in %s; environment set: %s)", tools.Clip(e.Command, 500), dir, strings.Join(names, ", "))
	if len(names) == 0 {
		detail = fmt.Sprintf("outside the sandbox: %s (in %s)", tools.Clip(e.Command, 500), dir)
	}
	var refuse string
	if ans.Approve {
		switch sc, ok := findScope(ar.Scopes, ans.ScopeID); {
		case !ok || sc.Conversation:
			refuse = "a call outside the sandbox is approved once, for this call only; the client named the scope " + ans.ScopeID
		case ans.EditedArgs != nil:
			refuse = "a call outside the sandbox runs exactly as shown; the person edited the arguments, so nothing was run (the model may ask again with them)"
		}
	}
	d := "deny"
	if ans.Approve && refuse == "" {
		d = "approve"
	}
	if refuse != "" {
		detail += "; refused: " + refuse
	} else if ans.Reason != "" {
		detail += "; " + ans.Reason
	}
	x.auditAppendSync(ctx, audit.Record{Kind: audit.KindOutsideSandbox, Conversation: req.ConversationID, CallID: req.CallID,
		Tool: target.ToolName, Operation: target.Operation, Decision: d, Who: req.Client, Scope: "once",
		ArgsDigest: audit.Digest(exact), Detail: detail})
	x.cfg.Logger.WarnContext(ctx, "approval to run outside the sandbox answered", "call_id", req.CallID, "conversation_id", req.ConversationID,
		"decision", d, "client", req.Client, "command", tools.Clip(e.Command, 200), "working_dir", dir, "env", names)
	if refuse != "" {
		return &errdefs.Error{Class: errdefs.ErrRejected, Msg: refuse}
	}
	ans.SaveRule = false
	return nil
}
