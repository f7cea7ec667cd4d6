package authz

// Capabilities names what a policy can do besides deciding calls, each
// passed explicitly to what uses it. A nil field is a capability the policy
// does not have, and that is decided where the policy is built (the daemon's
// wiring), never discovered later by a type assertion that would silently
// turn a protection off: a policy without Sensitivity shows sensitive files
// in walks because its builder said so.
type Capabilities struct {
	// Granter records the grants of approvals and of user_collaboration.
	Granter Granter
	// Sensitivity tells the file tools which entries to withhold from
	// directory walks (list_dir, glob, grep_search).
	Sensitivity Sensitivity
	// UseChecker checks again, when a file tool runs, what it is about to
	// touch.
	UseChecker UseChecker
	// Hosts judges hosts for the network guard of web_fetch and of the
	// commands' egress proxy.
	Hosts HostJudge
	// Explainer says what policy would decide without deciding
	// (PolicyService.Explain, toolctl hook).
	Explainer Explainer
}

// HostJudge judges the hosts a tool reaches: whether an explicit rule
// opens a private address to it (HostRuleAllows), and how a call that
// reaches a host would be decided (Explain).
type HostJudge interface {
	Explainer
	HostRuleAllows(tool, op, host string) bool
}

var _ HostJudge = (*Engine)(nil)

// Capabilities returns every capability of the engine.
func (e *Engine) Capabilities() Capabilities {
	return Capabilities{Granter: e, Sensitivity: e, UseChecker: e, Hosts: e, Explainer: e}
}
