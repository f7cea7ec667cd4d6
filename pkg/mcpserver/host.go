package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/events"
	"github.com/toold/toold/pkg/executor"
	"github.com/toold/toold/pkg/tools"
)

// host is the executor.Host of one MCP tool call: events become progress
// notifications (when the client asked for progress), and questions for
// the person become elicitations (when the client declares that
// capability): a request to the client in the 2025-11-25 era, an
// input-required result the client answers by calling again in the
// 2026-07-28 era (elicit says which).
type host struct {
	token  any // the call's progress token; nil when the client sent none
	tool   string
	client string
	caps   *sdk.ClientCapabilities
	elicit func(context.Context, *sdk.ElicitParams) (*sdk.ElicitResult, error)
	// status, when set, is told every progress message (a task's
	// statusMessage); nil for a call that answers in its request.
	status func(string)

	mu      sync.Mutex
	ss      *sdk.ServerSession // where progress goes: the latest request's session
	last    float64            // the last progress value sent; each must be larger
	traceID string             // the call's trace, from its Start event
}

// MetaTraceID is the _meta key of a result's trace id: toold's trace of the
// call (the caller's, when the request carried a traceparent).
const MetaTraceID = "toold/trace_id"

// withTrace adds the call's trace id to the result's _meta.
func (h *host) withTrace(res *sdk.CallToolResult) *sdk.CallToolResult {
	h.mu.Lock()
	id := h.traceID
	h.mu.Unlock()
	if id != "" {
		if res.Meta == nil {
			res.Meta = sdk.Meta{}
		}
		res.Meta[MetaTraceID] = id
	}
	return res
}

var _ executor.Host = (*host)(nil)

func newHost(req *sdk.CallToolRequest, tool string) *host {
	client := "an MCP client"
	if ci := req.ClientInfo(); ci != nil && ci.Name != "" {
		client = ci.Name
	}
	ss := req.Session
	return &host{ss: ss, token: req.Params.GetProgressToken(), tool: tool, client: client, caps: req.ClientCapabilities(), elicit: ss.Elicit}
}

// session returns the session progress goes to.
func (h *host) session() *sdk.ServerSession {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.ss
}

// setSession moves progress to a later request's session (a 2026-07-28
// client's retry of a call that asked for input).
func (h *host) setSession(ss *sdk.ServerSession, token any) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ss = ss
	if token != nil {
		h.token = token
	}
}

// Emit implements executor.Host: Progress events become
// notifications/progress; the others have no MCP counterpart (the result
// carries the end).
func (h *host) Emit(ctx context.Context, ev events.Event) error {
	if ev.Start != nil && ev.Start.TraceID != "" {
		h.mu.Lock()
		h.traceID = ev.Start.TraceID
		h.mu.Unlock()
	}
	if ev.Progress == nil {
		return nil
	}
	return h.notify(ctx, ev.Progress.Message, ev.Progress.Fraction)
}

// outputPreview caps the output text one progress notification carries.
const outputPreview = 1024

// Adopt implements executor.Host: the chunk is shown as Output shows it
// and its buffer given back.
func (h *host) Adopt(ctx context.Context, callID string, s tools.Stream, p []byte) error {
	defer tools.FreeBuffer(p)
	return h.Output(ctx, callID, s, p)
}

// Output implements executor.Host: output chunks are shown as progress
// messages (at most 1 KiB each); the whole output is in the result.
func (h *host) Output(ctx context.Context, _ string, s tools.Stream, p []byte) error {
	if len(p) == 0 {
		return nil
	}
	// Only what is shown is converted (a chunk is up to 256 KiB).
	text := string(p[:min(len(p), outputPreview+1)])
	if len(text) > outputPreview {
		text = text[:outputPreview]
		for !utf8.ValidString(text) {
			text = text[:len(text)-1]
		}
		text += "…"
	}
	name := map[tools.Stream]string{tools.Stdout: "stdout", tools.Stderr: "stderr", tools.PTY: "pty"}[s]
	return h.notify(ctx, "["+name+"] "+text, -1)
}

// notify sends a progress notification. Progress values must increase: a
// known fraction is sent as percent of 100 when that increases the value,
// otherwise the value grows by one and no total is given.
func (h *host) notify(ctx context.Context, msg string, fraction float64) error {
	if h.status != nil && msg != "" {
		h.status(msg)
	}
	h.mu.Lock()
	if h.token == nil {
		h.mu.Unlock()
		return nil
	}
	ss := h.ss
	p := &sdk.ProgressNotificationParams{ProgressToken: h.token, Message: msg}
	if fraction >= 0 && fraction*100 > h.last {
		p.Progress, p.Total = fraction*100, 100
	} else {
		p.Progress = h.last + 1
	}
	h.last = p.Progress
	h.mu.Unlock()
	if err := ss.NotifyProgress(ctx, p); err != nil && !errors.Is(err, sdk.ErrConnectionClosed) {
		return err
	}
	// The request that carried the token may have ended (a 2026-07-28 call
	// between the client's rounds): progress is advisory, the call goes on.
	return nil
}

// canElicit reports whether the client declared form elicitation.
func (h *host) canElicit() bool {
	if h.caps == nil || h.caps.Elicitation == nil {
		return false
	}
	e := h.caps.Elicitation
	return e.Form != nil || e.URL == nil // both unset means form, for older clients
}

// Decisions offered in an approval elicitation, besides the conversation
// scopes.
const (
	approveOnce = "approve once"
	deny        = "deny"
)

// Approve implements executor.Host: it asks the person through an
// elicitation showing what would happen, with a choice of approving once,
// approving for the conversation (each scope the policy offers), or
// denying. Without the elicitation capability the call is denied with a
// message saying how to allow it.
func (h *host) Approve(ctx context.Context, _ string, req *events.ApprovalRequest) (executor.Approval, error) {
	if !h.canElicit() {
		return executor.Approval{}, errdefs.New(errdefs.ErrDenied,
			"toold's policy asks a person to approve this call (%s), but %s cannot show approval requests: it does not declare the MCP elicitation capability. "+
				"To run it, add a policy rule that allows %s, start toold with --approval-mode yolo for a trusted agent, or use an MCP client that supports elicitation",
			orText(req.Reason, "risk "+req.Risk.String()), h.client, h.tool)
	}
	choices := []string{approveOnce}
	scopeOf := map[string]string{approveOnce: ""}
	for _, sc := range req.Scopes {
		if !sc.Conversation {
			scopeOf[approveOnce] = sc.ID
			continue
		}
		c := "approve for this conversation: " + orText(sc.Description, sc.ID)
		choices = append(choices, c)
		scopeOf[c] = sc.ID
	}
	choices = append(choices, deny)
	schema := map[string]any{
		"type": "object",
		"properties": map[string]any{
			"decision": map[string]any{"type": "string", "title": "Decision", "enum": choices, "default": approveOnce},
			"reason":   map[string]any{"type": "string", "title": "Reason (when denying; shown to the model)"},
		},
		"required": []string{"decision"},
	}
	res, err := h.elicit(ctx, &sdk.ElicitParams{Mode: "form", Message: approvalMessage(h.tool, req), RequestedSchema: schema})
	if err != nil {
		if ctx.Err() != nil {
			return executor.Approval{}, context.Cause(ctx)
		}
		return executor.Approval{}, errdefs.Wrap(errdefs.ErrDenied, err, "the approval request to %s failed, so the call was not run: %v", h.client, err)
	}
	switch res.Action {
	case "accept":
		d, _ := res.Content["decision"].(string)
		reason, _ := res.Content["reason"].(string)
		if d == deny {
			return executor.Approval{Reason: reason}, nil
		}
		id, ok := scopeOf[d]
		if !ok {
			return executor.Approval{}, errdefs.New(errdefs.ErrDenied, "the approval answer %q is none of the offered choices; nothing was run", d)
		}
		return executor.Approval{Approve: true, ScopeID: id}, nil
	case "decline":
		return executor.Approval{Reason: "declined in " + h.client}, nil
	}
	return executor.Approval{Reason: "the approval request was dismissed in " + h.client}, nil
}

// approvalMessage says what the call would do, for the person; an
// approval of the outside-sandbox kind says so first (the executor offers
// it once only, so no conversation choice is shown).
func approvalMessage(tool string, req *events.ApprovalRequest) string {
	var b strings.Builder
	fmt.Fprintf(&b, "toold asks for approval to run %s", tool)
	if d := orText(req.Summary, req.Effect.Display); d != "" {
		fmt.Fprintf(&b, ": %s", d)
	}
	if req.OutsideSandbox {
		b.WriteString("\nOUTSIDE toold's sandbox: approving runs this one command exactly as shown without the sandbox " +
			"(your files beyond the workspace, your credentials, the network); it is asked every time, never for the conversation")
	}
	fmt.Fprintf(&b, "\nRisk: %s", req.Risk)
	if req.Reason != "" {
		fmt.Fprintf(&b, "\nWhy toold asks: %s", req.Reason)
	}
	if req.Rule != "" {
		fmt.Fprintf(&b, " (rule %s)", req.Rule)
	}
	if req.Effect.Command != "" {
		fmt.Fprintf(&b, "\nCommand: %s", req.Effect.Command)
		if d := req.Effect.Dir; d != "" && d != "." {
			fmt.Fprintf(&b, "\nIn: %s", d)
		}
	}
	if len(req.Effect.Env) > 0 {
		names := make([]string, 0, len(req.Effect.Env))
		for k := range req.Effect.Env {
			names = append(names, k)
		}
		slices.Sort(names)
		for i, k := range names {
			names[i] = k + "=" + req.Effect.Env[k]
		}
		fmt.Fprintf(&b, "\nEnvironment: %s", strings.Join(names, " "))
	}
	if len(req.Effect.Writes) > 0 {
		fmt.Fprintf(&b, "\nWrites: %s", strings.Join(req.Effect.Writes, ", "))
	}
	if len(req.Effect.Reads) > 0 {
		fmt.Fprintf(&b, "\nReads: %s", strings.Join(req.Effect.Reads, ", "))
	}
	if len(req.Effect.Hosts) > 0 {
		fmt.Fprintf(&b, "\nReaches: %s", strings.Join(req.Effect.Hosts, ", "))
	}
	if req.Diff != "" {
		fmt.Fprintf(&b, "\n\n%s", tools.Clip(req.Diff, 4000))
	}
	return b.String()
}

// Ask implements executor.Host: the question becomes an elicitation with a
// text field (or a choice, when the tool offers choices). Without the
// elicitation capability the call's question is denied, saying so.
func (h *host) Ask(ctx context.Context, _ string, q *events.Question) (string, error) {
	if !h.canElicit() {
		return "", errdefs.New(errdefs.ErrDenied,
			"%s needs an answer from the person (%q), but %s cannot ask: it does not declare the MCP elicitation capability; ask the person yourself and call again with the answer",
			h.tool, tools.Clip(q.Prompt, 200), h.client)
	}
	field := map[string]any{"type": "string", "title": "Answer"}
	if len(q.Choices) > 0 {
		field["enum"] = q.Choices
	}
	res, err := h.elicit(ctx, &sdk.ElicitParams{
		Mode:    "form",
		Message: q.Prompt,
		RequestedSchema: map[string]any{
			"type":       "object",
			"properties": map[string]any{"answer": field},
			"required":   []string{"answer"},
		},
	})
	if err != nil {
		if ctx.Err() != nil {
			return "", context.Cause(ctx)
		}
		return "", errdefs.Wrap(errdefs.ErrDenied, err, "asking the person through %s failed: %v", h.client, err)
	}
	if res.Action != "accept" {
		return "", errdefs.New(errdefs.ErrRejected, "the person declined to answer in %s", h.client)
	}
	a, ok := res.Content["answer"].(string)
	if !ok {
		return "", errdefs.New(errdefs.ErrDenied, "the answer from %s had no text; nothing was run", h.client)
	}
	return a, nil
}

func orText(s, alt string) string {
	if s != "" {
		return s
	}
	return alt
}
