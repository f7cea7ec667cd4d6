// Package authz decides whether a tool call may run: allow, deny, or ask a
// person first.
//
// The executor calls an Authorizer after a call's arguments are validated
// and before it runs. This file defines the decision types and the
// interface; the policy engine (modes, rules, risk, path guard, grants)
// implements it.
package authz

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/toold/toold/pkg/tools"
)

// Mode says when a call needs a person's approval.
type Mode int

// Approval modes, from loosest to strictest. ModeUnset means "the server's".
const (
	ModeUnset Mode = iota
	ModeYOLO
	ModeAuto
	ModeAsk
)

func (m Mode) String() string {
	switch m {
	case ModeYOLO:
		return "yolo"
	case ModeAuto:
		return "auto"
	case ModeAsk:
		return "ask"
	}
	return "unset"
}

// ParseMode parses "yolo", "auto" or "ask" (any case; empty is auto). The
// daemon parses its configured mode once, where it starts; everything after
// that compares Mode values, never strings.
func ParseMode(s string) (Mode, error) {
	switch strings.ToLower(s) {
	case "yolo":
		return ModeYOLO, nil
	case "auto", "":
		return ModeAuto, nil
	case "ask":
		return ModeAsk, nil
	}
	return ModeUnset, fmt.Errorf("unknown approval mode %q (want yolo, auto or ask)", s)
}

// Stricter returns the stricter of the server's mode and a stream's request:
// a stream may tighten the mode, never loosen it.
func Stricter(server, requested Mode) Mode {
	return max(server, requested)
}

// Decision is the outcome of authorizing a call.
type Decision int

// Decisions.
const (
	Allow Decision = iota + 1
	Ask
	Deny
)

func (d Decision) String() string {
	switch d {
	case Allow:
		return "allow"
	case Ask:
		return "ask"
	case Deny:
		return "deny"
	}
	return "unknown"
}

// Request is a call to authorize.
type Request struct {
	ConversationID string
	CallID         string
	Mode           Mode
	Tool           string
	Operation      string
	Args           map[string]any
	Effect         tools.Effect
	// Risk is the operation's base risk, or Effect.Risk when set.
	Risk tools.Risk
	// Dir, when set, is the absolute directory a command line runs in (a
	// terminal session's current directory); relative paths in
	// Effect.Command are resolved from it as well as from the workspace
	// root. Empty means the workspace root.
	Dir string
	// OutsideSandbox says Effect.Command will not run in toold's sandbox —
	// an agent's own tool that toolctl hook asks about, or a call a person
	// approved to run unsandboxed — so the judge is the boundary for it,
	// whatever the engine's Containment says.
	OutsideSandbox bool
}

// Verdict is the decision on a call and why.
type Verdict struct {
	Decision Decision
	// Reason is for the model (on deny) and for people (on ask).
	Reason string
	// Rule names what decided: a policy rule's name, "builtin:NAME" for a
	// check toold always makes (sensitive paths, unparseable commands,
	// writes outside the workspace), "grant:ID" for a grant, or "mode:auto"
	// (yolo, ask) when the approval mode decided. The Engine always sets it.
	Rule string
	// Risk is the call's judged risk.
	Risk tools.Risk
	// For Ask: what to show and what may be granted. Summary says in one
	// line what would happen; Commands are the parsed parts of a command
	// line (also set on allow and deny, for Explain).
	Summary  string
	Commands []ParsedCommand
	Scopes   []Scope
	// Outside lists the absolute paths outside the workspace that this
	// decision lets the call touch (after an allow, or after the person
	// approves an ask). Tools refuse any other path outside.
	Outside []string
	// Judged lists the paths of the effect (Reads, Writes) that were
	// plain when the call was judged (tools.JudgedPath), after an allow or
	// an ask; the executor passes them to the tool (tools.Call.Judged).
	Judged []tools.JudgedPath
	// Grant is the grant that allowed the call, if one did.
	Grant *Grant
	// OutsideSandbox says the call's command would run outside toold's
	// sandbox once a person approves it: the model asked for that
	// (tools.Effect.OutsideSandbox), or the sandbox would refuse what it
	// does (a write outside the workspace). Decision is then Ask, in every
	// mode, or Deny; Scopes offer this call only; no grant covers it. The
	// executor asks with an approval of its own kind and runs the approved
	// call with tools.Call.Unsandboxed.
	OutsideSandbox bool
}

// Scope is one way a person may approve a call; it says exactly what a
// grant would allow.
type Scope struct {
	// ID identifies the scope within its approval request.
	ID string
	// Conversation is true for a grant that lasts TTL in the conversation;
	// false approves this call once.
	Conversation bool
	Tool         string
	Operation    string
	// PathPrefix or CommandPrefix narrow a conversation grant.
	PathPrefix    string
	CommandPrefix string
	// Arguments, when set, binds a grant to one exact call: the canonical
	// JSON of its arguments (user_collaboration's authorize_arguments).
	Arguments string
	// Host, when set, narrows a conversation grant to reaching this one
	// host (as normalized for hosts rules: lowercase, no port).
	Host        string
	TTL         time.Duration
	Description string
}

// ParsedCommand is one simple command of a command line, after unwrapping.
type ParsedCommand struct {
	// Args are the command's words after quote removal and unwrapping;
	// Args[0] is the command name. A word that is expanded when the command
	// runs ($VAR, $(...)) is shown as written.
	Args []string
	// Wrappers are the wrappers that were unwrapped, outermost first
	// ("sudo -u bob", "bash -c", "timeout 10").
	Wrappers []string
	// Redirects are the redirections of the command ("> out.txt", "2>&1").
	Redirects []string
	// Decision is "allow", "ask" or "deny", and Rule the rule that made it
	// (as Verdict.Rule).
	Decision string
	Rule     string
	// Env lists variable assignments that apply to the command ("GOOS=linux").
	Env []string
	// Reason says why the command got its decision.
	Reason string
}

// Authorizer decides on calls. Implementations are safe for concurrent use.
type Authorizer interface {
	Authorize(ctx context.Context, req *Request) (Verdict, error)
}

// AllowAll allows every call. It is the pass-through used until a policy is
// configured, and in tests of the pipeline.
type AllowAll struct{}

var _ Authorizer = AllowAll{}

// Authorize implements Authorizer.
func (AllowAll) Authorize(_ context.Context, req *Request) (Verdict, error) {
	return Verdict{Decision: Allow, Reason: "no policy configured", Risk: req.Risk}, nil
}

// Grant is a person's approval that lets matching calls of one conversation
// run without asking again, until it expires or, when Once, until one call
// used it.
type Grant struct {
	ID             string
	ConversationID string
	// Scope says what the grant covers (tool, operation, path or command
	// prefix).
	Scope Scope
	// Once grants are consumed by the first call they allow.
	Once      bool
	CreatedAt time.Time
	ExpiresAt time.Time
	// GrantedBy says who approved ("client toolctl/0.1", "user_collaboration").
	GrantedBy string
}

// Granter records and manages grants. An Authorizer that supports approvals
// implements it; the executor calls Grant when a person approves a call for
// the conversation.
type Granter interface {
	// Grant records a grant for the conversation and returns it.
	Grant(conversationID string, scope Scope, once bool, ttl time.Duration, grantedBy string) (Grant, error)
	// Grants lists the live grants of a conversation, or of all
	// conversations when conversationID is empty, oldest first.
	Grants(conversationID string) []Grant
	// Revoke removes a grant; it reports whether it existed.
	Revoke(id string) bool
}

// Explainer says how a call would be decided, without side effects: no grant
// is consumed and nothing is logged as a decision.
type Explainer interface {
	Explain(ctx context.Context, req *Request) (Verdict, error)
}

// OutsideSandbox returns an Explainer that judges every call as running
// outside toold's sandbox (Request.OutsideSandbox). The PolicyService
// explains through it: its callers (toolctl hook, for agents that run
// commands themselves) ask about commands toold will not contain.
func OutsideSandbox(x Explainer) Explainer {
	if x == nil {
		return nil
	}
	return outsideSandbox{x}
}

type outsideSandbox struct{ x Explainer }

func (o outsideSandbox) Explain(ctx context.Context, req *Request) (Verdict, error) {
	if req == nil {
		return o.x.Explain(ctx, req)
	}
	r := *req
	r.OutsideSandbox = true
	return o.x.Explain(ctx, &r)
}
