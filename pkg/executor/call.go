package executor

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"runtime/debug"
	"time"

	"go.opentelemetry.io/otel/attribute"
	otelcodes "go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/toold/toold/pkg/authz"
	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/events"
	"github.com/toold/toold/pkg/tools"
)

// Span and attribute names of the per-call trace.
const (
	spanCall      = "toold.call"
	spanValidate  = "toold.validate"
	spanAuthorize = "toold.authorize"
	spanExecute   = "toold.execute"

	attrTool         = attribute.Key("toold.tool")
	attrOperation    = attribute.Key("toold.operation")
	attrRequested    = attribute.Key("toold.requested_name")
	attrCallID       = attribute.Key("toold.call_id")
	attrConversation = attribute.Key("toold.conversation_id")
	attrOutcome      = attribute.Key("toold.outcome")
	attrErrorCode    = attribute.Key("toold.error_code")
	attrBytes        = attribute.Key("toold.result_bytes")
	attrOutputBytes  = attribute.Key("toold.output_bytes")
	attrRisk         = attribute.Key("toold.risk")
	attrDecision     = attribute.Key("toold.decision")
	attrRule         = attribute.Key("toold.rule")
	attrCoercions    = attribute.Key("toold.coercions")
)

var propagator = propagation.TraceContext{}

// childSpan starts a child of the call's span. When the call's span does not
// record (no exporter, or not sampled) its children would not either; then
// the call's span itself stands in for them (ending a span that does not
// record does nothing), and nothing is allocated.
func (x *Executor) childSpan(ctx context.Context, name string) (context.Context, trace.Span) {
	parent := trace.SpanFromContext(ctx)
	if x.cfg.Tracer == nil || !parent.IsRecording() {
		return ctx, parent
	}
	return x.cfg.Tracer.Start(ctx, name)
}

// startCallSpan starts the call's span. Without a tracer (no exporter) it
// only gives the call a span context of its own, with ids generated here
// (child of the client's or the stream's trace when there is one), so events
// and logs still carry a trace id; nothing is recorded or allocated beyond
// that.
func (x *Executor) startCallSpan(parent context.Context, req *CallRequest) (context.Context, trace.Span) {
	if x.cfg.Tracer != nil {
		// Its attributes are set when it ends, all at once (finishSpan).
		return x.cfg.Tracer.Start(parent, spanCall)
	}
	psc := trace.SpanContextFromContext(parent)
	cfg := trace.SpanContextConfig{TraceID: psc.TraceID(), TraceState: psc.TraceState()}
	if !cfg.TraceID.IsValid() {
		binary.BigEndian.PutUint64(cfg.TraceID[:8], rand.Uint64())
		binary.BigEndian.PutUint64(cfg.TraceID[8:], rand.Uint64())
	}
	binary.BigEndian.PutUint64(cfg.SpanID[:], rand.Uint64()|1)
	ctx := trace.ContextWithSpanContext(parent, trace.NewSpanContext(cfg))
	return ctx, trace.SpanFromContext(ctx)
}

// CallRequest is one tool call as a transport received it.
type CallRequest struct {
	CallID         string
	ConversationID string
	// Name is the tool name as the model wrote it.
	Name string
	// Args, when not nil, are the decoded arguments; otherwise ArgsJSON is
	// decoded (empty means no arguments).
	Args     map[string]any
	ArgsJSON string
	// Timeout is what the call asked for; zero means the server default.
	// It is capped at the server's maximum.
	Timeout time.Duration
	// Mode is the approval mode in force for the call.
	Mode authz.Mode
	// TraceContext is the client's W3C trace context for the call, if any.
	TraceContext map[string]string
	// Received is when the call arrived (its Start event's time).
	Received time.Time
	// OmitExecuting suppresses the Executing event.
	OmitExecuting bool
	// Client names the client, for logs and grants ("toolctl/0.1").
	Client string
	// Dialect is the agent tool set the call is made in ("claude-code",
	// "codex", …; see tools.Dialect); "" or "toold" is toold's own. Its
	// names and arguments are mapped at resolution, and the result is
	// reshaped for that agent's model once the tool ran.
	Dialect string

	// stdin is the call's input when a stream runs it.
	stdin *callInput
	// inline is set when the call runs on its stream's receiver (see
	// inline.go).
	inline *inlineCall
	// instant is set once the call resolved to an Instant operation.
	instant bool
}

// Approval is a person's answer to an approval request.
type Approval struct {
	Approve bool
	// ScopeID is one of the offered scopes' IDs; empty means once.
	ScopeID string
	// Reason is why a person denied.
	Reason string
	// TTL, when positive, shortens a conversation grant.
	TTL time.Duration
	// SaveRule asks to append the approved scope to the policy file as a
	// rule (see Observe.RuleSaver).
	SaveRule bool
	// EditedArgs, when not nil, are arguments the person changed: they are
	// validated and judged again, run instead, and the model is told.
	EditedArgs map[string]any
}

// Host is what a call needs from the transport it came on: a way to emit its
// events and to ask the person. A stream's session is one host (its events
// go to the conversation's log); the MCP server is another.
type Host interface {
	// Emit delivers one of the call's events (Start, Executing, Progress,
	// RequiresApproval, InputRequired); it blocks while the client reads
	// slowly and fails when ctx ends or the client is gone.
	Emit(ctx context.Context, ev events.Event) error
	// Output delivers bytes of the call's output stream, coalesced.
	Output(ctx context.Context, callID string, s tools.Stream, p []byte) error
	// Adopt is Output for p taken from tools.OutputBuffer: the host owns
	// p from the call on, whatever it returns, and gives it back with
	// tools.FreeBuffer when done (a stream's event log keeps it as the
	// chunk; a host that only shows output copies and frees it).
	Adopt(ctx context.Context, callID string, s tools.Stream, p []byte) error
	// Approve shows the request to the person and returns their answer. It
	// returns when they answer or ctx ends. A host whose client cannot
	// answer returns an ErrDenied error saying how to allow the call.
	Approve(ctx context.Context, callID string, req *events.ApprovalRequest) (Approval, error)
	// Ask asks the person a question and returns the answer text, under
	// the same rules as Approve.
	Ask(ctx context.Context, callID string, q *events.Question) (string, error)
}

// The pipeline: resolve the name, decode, coerce and validate the
// arguments, describe the effect, authorize (asking the host when policy
// says ask), execute under the call's timeout, and shape the result. Each
// step is a span under the call's span.
//
// execute runs one call. ctx is the call's context: canceling it (with a
// cause such as ErrCanceledByClient) stops the call. It emits the call's
// events through host, Start first, and returns the End, which the caller
// delivers (every call ends with exactly one End), and record, which the
// caller runs once the End is on its way: the call's end in the audit log,
// its history row and its metrics, kept off the client's wait.
func (x *Executor) execute(ctx context.Context, req *CallRequest, host Host) (*events.End, func()) {
	if req.Received.IsZero() {
		req.Received = time.Now()
	}
	parent := ctx
	if tc := req.TraceContext; len(tc) > 0 {
		parent = propagator.Extract(ctx, propagation.MapCarrier(tc))
	}
	ctx, span := x.startCallSpan(parent, req)
	defer span.End()

	start := &events.Start{RequestedName: req.Name}
	if sc := span.SpanContext(); sc.HasTraceID() {
		start.TraceID = sc.TraceID().String()
	}
	end := &events.End{}
	sink := &callSink{host: host, ctx: ctx, callID: req.CallID, stdin: req.stdin, x: x, req: req}

	target, call, coercions, err := x.prepare(ctx, req)
	end.Coercions = coercions
	var effect tools.Effect
	if target != nil {
		req.instant = target.Instant()
		start.Tool, start.Operation, start.Risk = target.ToolName, target.Operation, target.Risk
	}
	if !req.instant {
		// On the receiver, the budget is timed from here (inline.go);
		// an Instant operation cannot wait and needs no timer.
		req.inline.timeBudget()
	}
	if err == nil {
		effect, err = guard(call, "Describe", func() (tools.Effect, error) { return target.Tool.Describe(call), nil })
		if effect.Risk != tools.RiskUnknown {
			start.Risk = effect.Risk
		}
		start.Display = effect.Display
	}
	if start.Display == "" {
		start.Display = displayFallback(start, req.Name)
	}
	_ = host.Emit(ctx, events.Event{CallID: req.CallID, Time: req.Received, Start: start})

	if err == nil {
		ctx, err = x.preHook(ctx, req, target, call, &effect) // observe.go
	}
	if err == nil {
		err = x.authorize(ctx, req, target, call, effect, start.Risk, host)
	}
	if err == nil {
		starts := false
		if ps, ok := target.Tool.(tools.ProcessStarter); ok {
			starts, err = guard(call, "StartsProcess", func() (bool, error) { return ps.StartsProcess(call), nil })
		}
		// A tool that starts a process says Executing itself, with the
		// process id (see callSink.Started).
		sink.executing = !req.OmitExecuting && starts
		if err == nil {
			err = x.callStarted(ctx, req, call, effectFree(target, effect)) // observe.go: refused when it cannot be recorded
		}
		if err == nil && !req.OmitExecuting && !starts {
			_ = host.Emit(ctx, events.Event{CallID: req.CallID, Executing: &events.Executing{}})
		}
		if err == nil {
			if !target.Fast() {
				// It may run for long: the stream receives elsewhere.
				req.inline.mayWait()
			}
			endCheckpoint := x.checkpoint(ctx, req, effect)
			end.Result, err = x.run(ctx, req, target, call, sink)
			endCheckpoint()
			// The dialect's result shape (a no-op without one).
			res, runErr := end.Result, err
			end.Result, err = guard(call, "Shape", func() (*tools.Result, error) { return target.Shape(res, runErr) })
		}
		if sink.stdin != nil {
			end.Metadata = sink.stdin.finish(end.Metadata)
		}
	}
	end.Err = err
	end.Duration = time.Since(req.Received)
	record := x.callEnded(ctx, req, start, call, end) // observe.go: post-hooks; audit, history, metrics in record
	x.finishSpan(span, req, start, end, sink)
	x.logEnd(req, start, end)
	return end, record
}

// prepare resolves the name, decodes and coerces the arguments, and
// validates them, in the "validate" span.
func (x *Executor) prepare(ctx context.Context, req *CallRequest) (*tools.Target, *tools.Call, []tools.Coercion, error) {
	_, span := x.childSpan(ctx, spanValidate)
	defer span.End()
	args := req.Args
	if args == nil {
		var err error
		if args, err = tools.DecodeArguments(req.ArgsJSON); err != nil {
			spanError(span, err)
			return nil, nil, nil, err
		}
	}
	target, err := x.cfg.Registry.ResolveCall(req.ConversationID, req.Dialect, req.Name, args)
	if err != nil {
		spanError(span, err)
		return nil, nil, nil, err
	}
	prepared, err := target.Prepare(args)
	coercions := append(target.Repairs(), prepared...)
	if span.IsRecording() {
		span.SetAttributes(attrCoercions.Int(len(coercions)))
	}
	if err != nil {
		spanError(span, err)
		return target, nil, coercions, err
	}
	call := &tools.Call{
		ID:             req.CallID,
		ConversationID: req.ConversationID,
		Tool:           target.ToolName,
		Operation:      target.Operation,
		Args:           args,
	}
	return target, call, coercions, nil
}

// guard calls fn, a method of a tool or of the policy; a panic there is a
// bug in it and ends the call INTERNAL (the details go to the log), never
// the daemon. Every call into a tool goes through it.
func guard[T any](call *tools.Call, where string, fn func() (T, error)) (v T, err error) {
	defer func() {
		if r := recover(); r != nil {
			var zero T
			v, err = zero, panicError(call, where, r)
		}
	}()
	return fn()
}

func panicError(call *tools.Call, where string, r any) error {
	return &errdefs.Error{Class: errdefs.ErrInternal, Msg: "internal error; the details are in the toold log",
		Cause: fmt.Errorf("panic in %s of %s.%s: %v\n%s", where, call.Tool, call.Operation, r, debug.Stack())}
}

func displayFallback(s *events.Start, requested string) string {
	switch {
	case s.Tool == "":
		return "Calling " + tools.Clip(requested, 60)
	case s.Operation == s.Tool:
		return "Calling " + s.Tool
	}
	return "Calling " + s.Tool + "." + s.Operation
}

// authorize asks the policy, in the "authorize" span; on ask it asks the
// person through the host and waits.
func (x *Executor) authorize(ctx context.Context, req *CallRequest, target *tools.Target, call *tools.Call, effect tools.Effect, risk tools.Risk, host Host) error {
	ctx, span := x.childSpan(ctx, spanAuthorize)
	defer span.End()
	areq := &authz.Request{
		ConversationID: req.ConversationID,
		CallID:         req.CallID,
		Mode:           req.Mode,
		Tool:           target.ToolName,
		Operation:      target.Operation,
		Args:           call.Args,
		Effect:         effect,
		Risk:           risk,
	}
	v, err := guard(call, "Authorize", func() (authz.Verdict, error) { return x.cfg.Authorizer.Authorize(ctx, areq) })
	if err != nil {
		spanError(span, err)
		return err
	}
	v = obsFrom(ctx).decided(v, target) // observe.go: a pre-hook's allow or ask
	if err := x.auditDecision(ctx, req, target, v); err != nil {
		spanError(span, err)
		return err
	}
	if span.IsRecording() {
		span.SetAttributes(attrDecision.String(v.Decision.String()), attrRule.String(v.Rule))
		decision := []attribute.KeyValue{
			attrDecision.String(v.Decision.String()),
			attrRule.String(v.Rule),
			attribute.String("toold.reason", v.Reason),
			attrRisk.String(v.Risk.String()),
		}
		if v.Grant != nil {
			decision = append(decision, attribute.String("toold.grant", v.Grant.ID))
		}
		span.AddEvent("decision", trace.WithAttributes(decision...))
	}
	// Per call, so debug: the decision is in the audit log and the trace.
	if x.cfg.Logger.Enabled(ctx, slog.LevelDebug) {
		x.cfg.Logger.DebugContext(ctx, "policy decision", "call_id", req.CallID, "conversation_id", req.ConversationID,
			"tool", target.ToolName, "operation", target.Operation, "decision", v.Decision.String(),
			"rule", v.Rule, "reason", v.Reason, "risk", v.Risk.String())
	}

	switch v.Decision {
	case authz.Allow:
		takePaths(call, v)
		return nil
	case authz.Deny:
		err := &errdefs.Error{Class: errdefs.ErrDenied, Msg: deniedMessage(v), Rule: v.Rule}
		spanError(span, err)
		return err
	case authz.Ask:
		if err := x.askApproval(ctx, req, target, call, effect, v, host, span); err != nil {
			spanError(span, err)
			return err
		}
		takePaths(call, v)
		// Only a person's approval of this kind runs a command outside
		// the sandbox, and only this call.
		call.Unsandboxed = v.OutsideSandbox
		return nil
	}
	err = errdefs.New(errdefs.ErrInternal, "internal error; the details are in the toold log")
	spanError(span, err)
	return err
}

func deniedMessage(v authz.Verdict) string {
	msg := "denied by policy"
	if v.Rule != "" {
		msg += " (rule " + v.Rule + ")"
	}
	if v.Reason != "" {
		msg += ": " + v.Reason
	}
	return msg
}

// takePaths gives call what policy's verdict v says of its paths: those
// outside the workspace it allowed (Outside) and those it found plain
// (Judged). Every verdict a call runs (or previews) under sets both.
func takePaths(call *tools.Call, v authz.Verdict) {
	call.Outside, call.Judged = v.Outside, v.Judged
}

// askApproval sends the approval request through the host and waits for the
// person, a cancel, the stream's end or the approval timeout. Nothing runs
// unless the answer approves.
func (x *Executor) askApproval(ctx context.Context, req *CallRequest, target *tools.Target, call *tools.Call, effect tools.Effect, v authz.Verdict, host Host, span trace.Span) error {
	ar := &events.ApprovalRequest{
		ApprovalID: newID("appr-"),
		Effect:     effect,
		Summary:    v.Summary,
		Commands:   v.Commands,
		Reason:     v.Reason,
		Rule:       v.Rule,
		Risk:       v.Risk,
		Scopes:     v.Scopes,

		OutsideSandbox: v.OutsideSandbox,
	}
	if v.OutsideSandbox {
		// Once only, whatever the policy offered.
		ar.Scopes = nil
		for _, sc := range v.Scopes {
			if !sc.Conversation {
				ar.Scopes = append(ar.Scopes, sc)
			}
		}
	}
	if len(ar.Scopes) == 0 {
		ar.Scopes = []authz.Scope{{ID: "once", Tool: target.ToolName, Operation: target.Operation, Description: "this call only"}}
	}
	if p, ok := target.Tool.(tools.Previewer); ok {
		// The preview may read what the call would touch, outside the
		// workspace too, to show the person a diff; it changes nothing.
		takePaths(call, v)
		diff, err := guard(call, "Preview", func() (string, error) { return p.Preview(ctx, call) })
		if err != nil {
			return err
		}
		ar.Diff = diff
	}
	actx := ctx
	if t := x.cfg.ApprovalTimeout; t > 0 {
		ar.ExpiresAt = time.Now().Add(t)
		var cancel context.CancelFunc
		actx, cancel = context.WithTimeoutCause(ctx, t, errApprovalTimeout)
		defer cancel()
	}
	answered := x.approvalAsked(ctx, target) // observe.go
	ans, err := host.Approve(actx, req.CallID, ar)
	if err != nil {
		answered("none")
		if actx.Err() != nil {
			return x.contextError(actx, 0, err)
		}
		return err
	}
	answered(map[bool]string{true: "approve", false: "deny"}[ans.Approve])
	if ar.OutsideSandbox {
		if err := x.outsideSandboxAnswer(ctx, req, target, ar, &ans); err != nil {
			return err
		}
	}
	x.auditApproval(ctx, req, target, ans, ans.ScopeID)
	answer := []attribute.KeyValue{
		attribute.Bool("toold.approved", ans.Approve),
		attribute.String("toold.scope", ans.ScopeID),
		attribute.String("toold.answered_by", req.Client),
	}
	span.AddEvent("approval", trace.WithAttributes(answer...))
	x.cfg.Logger.InfoContext(ctx, "approval answered", "call_id", req.CallID, "conversation_id", req.ConversationID,
		"approved", ans.Approve, "scope", ans.ScopeID, "reason", ans.Reason, "client", req.Client)
	if !ans.Approve {
		msg := "the user rejected this call"
		if ans.Reason != "" {
			msg += ": " + ans.Reason
		}
		return &errdefs.Error{Class: errdefs.ErrRejected, Msg: msg}
	}
	scope, ok := findScope(ar.Scopes, ans.ScopeID)
	if err := x.richerAnswer(ctx, req, target, call, ans, scope, ok); err != nil { // observe.go
		return err
	}
	if !ok || !scope.Conversation {
		return nil
	}
	if x.cfg.Granter == nil {
		return nil
	}
	ttl := scope.TTL
	if ans.TTL > 0 && (ttl <= 0 || ans.TTL < ttl) {
		ttl = ans.TTL
	}
	_, err = x.grant(ctx, req, scope, false, ttl, req.Client)
	return err
}

// grant makes a grant in the call's conversation: the one path for the
// grants of approvals and of tools (user_collaboration, through its sink,
// see callSink.MakeGrant), recorded in the trace, the audit log and the
// log.
func (x *Executor) grant(ctx context.Context, req *CallRequest, scope authz.Scope, once bool, ttl time.Duration, by string) (authz.Grant, error) {
	g := x.cfg.Granter
	if g == nil {
		return authz.Grant{}, errdefs.New(errdefs.ErrUnavailable, "this toold keeps no grants")
	}
	grant, err := g.Grant(req.ConversationID, scope, once, ttl, by)
	if err != nil {
		return authz.Grant{}, err
	}
	trace.SpanFromContext(ctx).AddEvent("grant", trace.WithAttributes(attribute.String("toold.grant", grant.ID), attribute.String("toold.scope", scope.Description)))
	x.auditGrant(ctx, req, grant, scope)
	x.cfg.Logger.InfoContext(ctx, "grant recorded", "grant_id", grant.ID, "conversation_id", req.ConversationID,
		"tool", scope.Tool, "operation", scope.Operation, "path_prefix", scope.PathPrefix,
		"command_prefix", scope.CommandPrefix, "once", once, "granted_by", by, "expires_at", grant.ExpiresAt)
	return grant, nil
}

func findScope(scopes []authz.Scope, id string) (authz.Scope, bool) {
	if id == "" {
		for _, s := range scopes {
			if !s.Conversation {
				return s, true
			}
		}
		return authz.Scope{}, true
	}
	for _, s := range scopes {
		if s.ID == id {
			return s, true
		}
	}
	return authz.Scope{}, false
}

// run runs the tool under the call's timeout, in the "execute" span. A
// panic in the tool ends this call INTERNAL; the daemon lives on.
func (x *Executor) run(ctx context.Context, req *CallRequest, target *tools.Target, call *tools.Call, sink *callSink) (res *tools.Result, err error) {
	ctx, span := x.childSpan(ctx, spanExecute)
	defer span.End()
	timeout := x.cfg.DefaultTimeout
	if req.Timeout > 0 {
		timeout = req.Timeout
	}
	timeout = min(timeout, x.cfg.MaxTimeout)
	resets := false
	if pt, ok := target.Tool.(tools.ProgressTimed); ok {
		if resets, err = guard(call, "ProgressResetsTimeout", func() (bool, error) { return pt.ProgressResetsTimeout(), nil }); err != nil {
			spanError(span, err)
			return nil, err
		}
	}
	switch {
	case target.Instant():
		// It cannot wait: no timeout to arm (tools.OperationSpec.Instant).
	case resets && timeout < x.cfg.MaxTimeout:
		// The timeout counts time without progress; the maximum caps it all.
		var cancelCap context.CancelFunc
		ctx, cancelCap = context.WithTimeoutCause(ctx, x.cfg.MaxTimeout, errCallTimeout)
		defer cancelCap()
		var cancelIdle context.CancelCauseFunc
		ctx, cancelIdle = context.WithCancelCause(ctx)
		defer cancelIdle(nil)
		idle := time.AfterFunc(timeout, func() { cancelIdle(errIdleTimeout) })
		defer idle.Stop()
		sink.activity = func() { idle.Reset(timeout) }
		timeout = x.cfg.MaxTimeout
	default:
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, timeout, errCallTimeout)
		defer cancel()
	}
	sink.ctx = ctx

	sink.target, sink.call = target, call
	var ts *tools.Sink
	if target.Instant() {
		ts = &sink.ts // no capabilities: it computes, nothing more (tools.OperationSpec.Instant)
	} else {
		ts = sink.sink()
	}
	res, err = guard(call, "Run", func() (*tools.Result, error) { return target.Tool.Run(ctx, call, ts) })
	if err != nil && ctx.Err() != nil {
		err = x.contextError(ctx, timeout, err)
	}
	if err != nil {
		spanError(span, err)
	}
	return res, err
}

// contextError says why a call's context ended, for the model.
func (x *Executor) contextError(ctx context.Context, timeout time.Duration, cause error) error {
	switch why := context.Cause(ctx); {
	case errors.Is(why, errCallTimeout):
		return errdefs.Wrap(errdefs.ErrTimeout, cause,
			"the call did not finish within its timeout of %s and was stopped; narrow the request or ask for a longer timeout (at most %s)", timeout, x.cfg.MaxTimeout)
	case errors.Is(why, errIdleTimeout):
		return errdefs.Wrap(errdefs.ErrTimeout, cause,
			"the call made no progress within its timeout and was stopped; retry, or ask for a longer timeout (at most %s)", x.cfg.MaxTimeout)
	case errors.Is(why, errApprovalTimeout):
		return errdefs.Wrap(errdefs.ErrApprovalTimeout, cause, "nobody answered the approval request within %s; nothing was done", x.cfg.ApprovalTimeout)
	case errors.Is(why, ErrCanceledByClient):
		return errdefs.Wrap(errdefs.ErrCanceled, cause, "the call was canceled by the client")
	case errors.Is(why, errShutdown):
		return errdefs.Wrap(errdefs.ErrCanceled, cause, "the call was canceled because toold is shutting down")
	default:
		return errdefs.Wrap(errdefs.ErrDisconnected, cause, "the call was canceled because its stream ended")
	}
}

func spanError(span trace.Span, err error) {
	e := errdefs.As(err)
	span.SetStatus(otelcodes.Error, e.Msg)
	span.SetAttributes(attrErrorCode.String(errdefs.CodeName(e)))
}

// finishSpan sets the call span's attributes, all in one SetAttributes:
// each call of it (and attributes given to Start) grows the span's
// attribute slice; five of them were 4 of the 34 allocations and 575 of
// the 7,500 bytes that recording a call's spans costs
// (BenchmarkCallSpans, bench/profiles-2026-11-28-acct.md).
func (x *Executor) finishSpan(span trace.Span, req *CallRequest, start *events.Start, end *events.End, sink *callSink) {
	if !span.IsRecording() {
		return
	}
	var n int
	if end.Result != nil {
		n = len(end.Result.Text) + len(end.Result.JSON)
	}
	outcome := "ok"
	if end.Err != nil {
		outcome = "error"
	}
	var attrs [10]attribute.KeyValue
	a := append(attrs[:0], attrCallID.String(req.CallID), attrConversation.String(req.ConversationID), attrRequested.String(req.Name),
		attrRisk.String(start.Risk.String()),
		attrBytes.Int(n), attrOutputBytes.Int64(sink.outputBytes.Load()), attrOutcome.String(outcome))
	if start.Tool != "" { // resolved
		a = append(a, attrTool.String(start.Tool), attrOperation.String(start.Operation))
	}
	if end.Err != nil {
		e := errdefs.As(end.Err)
		span.SetStatus(otelcodes.Error, e.Msg)
		a = append(a, attrErrorCode.String(errdefs.CodeName(e)))
	}
	span.SetAttributes(a...)
}

func (x *Executor) logEnd(req *CallRequest, start *events.Start, end *events.End) {
	// A successful call is a debug line (one per call would be most of
	// the log at a sustained load: audit, history and traces have it); a
	// failed one an info line, an internal error an error line.
	level := slog.LevelDebug
	switch {
	case end.Err != nil && errors.Is(end.Err, errdefs.ErrInternal):
		level = slog.LevelError
	case end.Err != nil:
		level = slog.LevelInfo
	}
	if !x.cfg.Logger.Enabled(context.Background(), level) {
		return
	}
	attrs := []any{
		"call_id", req.CallID,
		"conversation_id", req.ConversationID,
		"tool", start.Tool,
		"operation", start.Operation,
		"duration", end.Duration,
	}
	if start.TraceID != "" {
		attrs = append(attrs, "trace_id", start.TraceID)
	}
	if end.Err == nil {
		x.cfg.Logger.Debug("call ok", attrs...)
		return
	}
	e := errdefs.As(end.Err)
	attrs = append(attrs, "code", errdefs.CodeName(e), "message", e.Msg)
	if errors.Is(e, errdefs.ErrInternal) && e.Cause != nil {
		x.cfg.Logger.Error("call failed: internal error", append(attrs, "cause", e.Cause.Error())...)
		return
	}
	x.cfg.Logger.Info("call failed", attrs...)
}

// checkpoint opens the checkpoint window of a call that may change the
// workspace: one that runs a command (every change in the workspace while
// it runs is its own) or writes paths (the changes at and below them). A
// call that does neither is not recorded. It returns the function that
// closes the window.
func (x *Executor) checkpoint(ctx context.Context, req *CallRequest, effect tools.Effect) func() {
	cp := x.cfg.Checkpoints
	switch {
	case cp == nil:
		return func() {}
	case effect.Command != "":
		return cp.Begin(ctx, req.ConversationID, req.CallID, nil)
	case len(effect.Writes) > 0:
		return cp.Begin(ctx, req.ConversationID, req.CallID, effect.Writes)
	}
	return func() {}
}
