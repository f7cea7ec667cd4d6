package authz

// One call outside the sandbox. The model cannot turn toold's sandbox off:
// run_command's outside_sandbox argument (tools.Effect.OutsideSandbox) only
// asks, and a command line the sandbox would refuse (a write outside the
// workspace) asks the same way. Either becomes an approval of its own kind
// (Verdict.OutsideSandbox): judged as if the judge were the boundary, asked
// in every mode (YOLO included), offered once only, never covered by a
// grant.

import (
	"strings"

	"github.com/toold/toold/pkg/tools"
)

// ruleOutsideSandbox names the decision that asks to run one call outside
// the sandbox.
const ruleOutsideSandbox = "builtin:outside-sandbox"

// leavesSandbox reports whether the judged call, of a tool that can run its
// command outside the sandbox (tools.Effect.CanLeaveSandbox), can only do
// what it means there, and why: the call asks for it and some layer of the
// sandbox is in force, or the sandbox holds the command line and refuses a
// write it makes outside the workspace (which a person is asked about):
// the whole sandbox, or its writes layer alone (Landlock, where the
// machine offers no namespaces).
func (j *judgement) leavesSandbox() (bool, string) {
	if j.req.Effect.Command == "" || j.req.OutsideSandbox || !j.req.Effect.CanLeaveSandbox {
		return false, ""
	}
	c := j.contain
	if j.req.Effect.OutsideSandbox && (c.Writes || c.Reads || c.Network) {
		return true, "the model asks to run this command outside toold's sandbox"
	}
	if !j.contained && !c.Writes {
		return false, ""
	}
	// The writes layer (the whole sandbox, or Landlock alone where the
	// machine offers no more) refuses a write outside the workspace.
	for _, f := range j.facets {
		if f.decision == Ask && f.rule == ruleOutsideWrite {
			return true, "the command writes outside the workspace, which the sandbox refuses, so it can only run outside it"
		}
	}
	return false, ""
}

// outsideVerdict is the verdict on a call that would run outside the
// sandbox, from its judgement as if the judge were the boundary (no grant
// applied): a deny stays a deny; anything else asks, once.
func (j *judgement) outsideVerdict(why string) Verdict {
	v := j.verdict()
	v.Grant = nil
	if v.Decision == Deny {
		v.Reason = v.Reason + " (judged as it would run: outside toold's sandbox)"
		return v
	}
	reason := why + "; a person must approve this one call, with the sandbox off"
	if v.Decision == Ask && v.Reason != "" {
		reason += "; besides, " + v.Reason
	}
	v.Decision, v.Rule, v.Reason, v.Risk = Ask, ruleOutsideSandbox, reason, tools.RiskHigh
	v.OutsideSandbox = true
	desc := "this call only, OUTSIDE the sandbox: `" + tools.Clip(strings.TrimSpace(j.req.Effect.Command), 80) + "`"
	v.Scopes = []Scope{{ID: "once", Tool: j.req.Tool, Operation: j.req.Operation, Description: desc}}
	return v
}
