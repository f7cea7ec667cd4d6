package executor

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/toold/toold/pkg/audit"
	"github.com/toold/toold/pkg/authz"
	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/events"
	"github.com/toold/toold/pkg/history"
	"github.com/toold/toold/pkg/hooks"
	"github.com/toold/toold/pkg/telemetry"
	"github.com/toold/toold/pkg/tools"
)

// Observe is what makes calls accountable and observable. Every field is
// optional.
type Observe struct {
	// Hooks run before a call is authorized and after it ends.
	Hooks *hooks.Runner
	// Audit receives a record of every decision, approval, grant, hook
	// verdict, call start and call end. A call whose decision or start
	// cannot be recorded ends with the log's error (UNAVAILABLE) before it
	// runs, unless AuditContinue.
	Audit *audit.Log
	// AuditContinue lets calls run when the audit log cannot record them
	// (audit.on_failure: continue); the failures are logged.
	AuditContinue bool
	// History receives one entry per call at its end.
	History HistoryRecorder
	// Metrics count calls, durations and approvals.
	Metrics *telemetry.Metrics
	// RuleSaver appends an approved scope as a rule to the policy file
	// ("approve and save as rule"); nil refuses such answers.
	RuleSaver RuleSaver
}

// HistoryRecorder stores call history (a *history.Store).
type HistoryRecorder interface {
	Record(ctx context.Context, e history.Entry) (int64, error)
}

// RuleSaver saves an approved scope as a policy rule, with the approved
// call as its example (authz.AppendRule on the policy file).
type RuleSaver interface {
	SaveRule(scope authz.Scope, example map[string]any) (string, error)
}

// callObs is one call's accounting, carried in its context.
type callObs struct {
	started  time.Time
	argsJSON []byte
	// argsOf is the call whose arguments argsJSON is made of by the
	// recorder (argsLate), not on the call's path: a call without an
	// effect, or one that ended before it started.
	argsOf   *tools.Call
	decision string
	rule     string
	approver string
	// hook is the pre-hooks' verdict, applied to the policy's.
	hook        hooks.Result
	hookContext []string
	// changed tells the model what a person or a hook changed.
	changed []string
	// allowed is the policy's allow decision, not yet in the audit log:
	// callStarted writes it with the call.start in one AppendAll (the
	// call runs only once both are written), or recordEnd before the
	// call.end when the call ended before starting.
	allowed *audit.Record
	// startRec is the call.start of an effect-free call, enqueued with
	// its call.end (see callStarted).
	startRec *audit.Record
	// recs holds what allowed and startRec point to: one object for both
	// records of an effect-free call, made when the audit log is on.
	recs *callRecs
	// effect is set once the call's call.start was written before it ran
	// (a call with an effect): its call.end is queued in the audit log
	// when its End is logged, not deferred with its other records.
	effect bool
}

type obsKey struct{}

// callRecs are a call's records held until they are written (callObs).
type callRecs struct{ allowed, start audit.Record }

// held returns o's records' storage, made on first use.
func (o *callObs) held() *callRecs {
	if o.recs == nil {
		o.recs = new(callRecs)
	}
	return o.recs
}

func obsFrom(ctx context.Context) *callObs {
	o, _ := ctx.Value(obsKey{}).(*callObs)
	return o
}

// spanHooks is the span of a call's pre- or post-hooks.
const spanHooks = "toold.hooks"

// preHook runs the pre-tool hooks matching the call (in the "toold.hooks"
// span) and returns the context carrying the call's accounting. A hook's
// deny ends the call DENIED with its reason; amended arguments are coerced
// and validated against the schema again and the effect described again;
// allow and ask are applied to the policy's verdict in decided.
func (x *Executor) preHook(ctx context.Context, req *CallRequest, target *tools.Target, call *tools.Call, effect *tools.Effect) (context.Context, error) {
	o := &callObs{started: time.Now()}
	ctx = context.WithValue(ctx, obsKey{}, o)
	ob := x.cfg.Observe
	if ob.Hooks.Empty() {
		return ctx, nil
	}
	req.inline.mayWait() // hooks are processes
	hctx, span := x.childSpan(ctx, spanHooks)
	defer span.End()
	res, err := ob.Hooks.Pre(hctx, hooks.Call{Conversation: req.ConversationID, CallID: req.CallID, Name: flatName(target),
		Tool: target.ToolName, Operation: target.Operation, Input: call.Args, PermissionMode: permissionMode(req.Mode)})
	x.recordHooks(ctx, span, req, target, res)
	if err != nil {
		return ctx, x.contextError(ctx, 0, err)
	}
	o.hook = res
	o.hookContext = append(o.hookContext, res.Context...)
	if res.Decision == hooks.Deny {
		err := &errdefs.Error{Class: errdefs.ErrDenied, Msg: "blocked by a pre-tool hook: " + res.Reason, Rule: "hook"}
		spanError(span, err)
		return ctx, err
	}
	if res.Input != nil {
		if err := x.amend(call, target, res.Input, effect); err != nil {
			err := &errdefs.Error{Class: errdefs.ErrInvalidArgument, Msg: "a pre-tool hook changed the arguments into ones the schema refuses: " + errdefs.As(err).Msg, Cause: err}
			spanError(span, err)
			return ctx, err
		}
		o.changed = append(o.changed, "a pre-tool hook changed the arguments to "+compactJSON(res.Input))
	}
	return ctx, nil
}

// amend replaces the call's arguments with args, coerced and validated
// against the tool's schema, and describes the call's effect again.
func (x *Executor) amend(call *tools.Call, target *tools.Target, args map[string]any, effect *tools.Effect) error {
	if _, err := target.Prepare(args); err != nil {
		return err
	}
	call.Args = args
	e, err := guard(call, "Describe", func() (tools.Effect, error) { return target.Tool.Describe(call), nil })
	if err != nil {
		return err
	}
	*effect = e
	return nil
}

func (x *Executor) recordHooks(ctx context.Context, span trace.Span, req *CallRequest, target *tools.Target, res hooks.Result) {
	ob := x.cfg.Observe
	for _, h := range res.Ran {
		verdict := string(h.Decision)
		if h.Failed != "" {
			verdict = "failed"
		}
		if span.IsRecording() {
			span.AddEvent("hook", trace.WithAttributes(
				attribute.String("toold.hook", h.Hook), attribute.String("toold.hook.event", h.Event),
				attribute.Int("toold.hook.exit_code", h.ExitCode), attribute.String("toold.hook.verdict", verdict),
				attribute.String("toold.hook.failed", h.Failed), attribute.Bool("toold.hook.amended", h.Amended),
				attribute.Int64("toold.hook.duration_us", h.Duration.Microseconds())))
		}
		ob.Metrics.HookRan(ctx, h.Hook, h.Event, verdict, h.Duration)
		detail := h.Event + " " + h.Hook
		if h.Failed != "" {
			detail += ": " + h.Failed
		}
		if h.Amended {
			detail += ": amended the arguments"
		}
		_ = x.auditAppend(ctx, audit.Record{Kind: audit.KindHook, Conversation: req.ConversationID, CallID: req.CallID,
			Tool: target.ToolName, Operation: target.Operation, Decision: verdict, Detail: detail})
	}
}

// decided applies the pre-hooks' verdict to the policy's and records the
// decision: a hook's allow skips the policy's ask (never its deny), a
// hook's ask turns the policy's allow into a question.
func (o *callObs) decided(v authz.Verdict, target *tools.Target) authz.Verdict {
	if o == nil {
		return v
	}
	switch {
	case o.hook.Decision == hooks.Allow && v.Decision == authz.Ask && !v.OutsideSandbox:
		// A hook allows what policy asks, but never running a command
		// outside the sandbox: only a person does that.
		v.Decision, v.Rule, v.Reason = authz.Allow, "hook", "a pre-tool hook allowed it: "+o.hook.Reason
	case o.hook.Decision == hooks.Ask && v.Decision == authz.Allow:
		v.Decision, v.Rule = authz.Ask, "hook"
		v.Reason = "a pre-tool hook asks: " + o.hook.Reason
		if len(v.Scopes) == 0 {
			v.Scopes = []authz.Scope{{ID: "once", Tool: target.ToolName, Operation: target.Operation, Description: "this call only"}}
		}
	}
	o.decision, o.rule = v.Decision.String(), v.Rule
	return v
}

// auditDecision records the policy's (hook-adjusted) decision; the error
// is the log's when the call must not go on unrecorded.
func (x *Executor) auditDecision(ctx context.Context, req *CallRequest, target *tools.Target, v authz.Verdict) error {
	if x.cfg.Observe.Audit == nil {
		return nil // nothing to record (and no record made: it would escape below)
	}
	r := audit.Record{Kind: audit.KindDecision, Conversation: req.ConversationID, CallID: req.CallID, Tool: target.ToolName,
		Operation: target.Operation, Decision: v.Decision.String(), Rule: v.Rule, Detail: v.Reason}
	if v.Grant != nil {
		r.GrantID = v.Grant.ID
	}
	if o := obsFrom(ctx); o != nil && v.Decision == authz.Allow {
		h := o.held()
		h.allowed = r
		o.allowed = &h.allowed // written with the call.start (callStarted)
		return nil
	}
	return x.auditAppend(ctx, r)
}

// approvalAsked counts a waiting approval; the returned func records the
// answer (approve, deny, timeout, error) and its wait.
func (x *Executor) approvalAsked(ctx context.Context, target *tools.Target) func(answer string) {
	m := x.cfg.Observe.Metrics
	m.ApprovalWaiting(ctx, 1)
	t := time.Now()
	return func(answer string) {
		m.ApprovalWaiting(ctx, -1)
		m.ApprovalAnswered(ctx, target.ToolName, answer, time.Since(t))
	}
}

// auditApproval records a person's answer, synced: an approval must not be
// lost to a power cut.
func (x *Executor) auditApproval(ctx context.Context, req *CallRequest, target *tools.Target, ans Approval, scope string) {
	if o := obsFrom(ctx); o != nil && ans.Approve {
		o.approver = req.Client
	}
	d := "deny"
	if ans.Approve {
		d = "approve"
	}
	detail := ans.Reason
	if ans.SaveRule {
		detail = strings.TrimSpace(detail + " (save as rule)")
	}
	if ans.EditedArgs != nil {
		detail = strings.TrimSpace(detail + " (edited arguments)")
	}
	x.auditAppendSync(ctx, audit.Record{Kind: audit.KindApproval, Conversation: req.ConversationID, CallID: req.CallID,
		Tool: target.ToolName, Operation: target.Operation, Decision: d, Who: req.Client, Scope: scope, Detail: detail})
}

// auditGrant records a grant made from an approval.
func (x *Executor) auditGrant(ctx context.Context, req *CallRequest, g authz.Grant, scope authz.Scope) {
	x.auditAppendSync(ctx, audit.Record{Kind: audit.KindGrant, Conversation: req.ConversationID, CallID: req.CallID,
		Tool: scope.Tool, Operation: scope.Operation, GrantID: g.ID, Who: req.Client, Scope: scope.Description})
}

// callStarted records that the call is about to run, with the digest of
// its (final) arguments; the error is the log's when the call must not run
// unrecorded.
//
// A decision must be durable before its effect: the call's allow decision
// and call.start are written (one AppendAll) before a call with an effect
// runs. A call without one (effectFree: a Fast operation that describes no
// write, command or host — think, a read) does not wait for the audit log:
// it runs at once, and its decision, call.start and call.end are enqueued
// together once its End is on its way (recordEnd), reaching the file with
// the next write, within the log's SyncInterval (docs/audit.md).
func (x *Executor) callStarted(ctx context.Context, req *CallRequest, call *tools.Call, effectFree bool) error {
	o := obsFrom(ctx)
	if o == nil {
		return nil
	}
	l := x.cfg.Observe.Audit
	if effectFree {
		// Its arguments' JSON and digest are made by the recorder
		// (argsLate): nothing happened that they would have to precede,
		// and a Fast operation does not change its arguments.
		o.argsOf = call
		if l != nil {
			h := o.held()
			h.start = audit.Record{Kind: audit.KindCallStart, Conversation: req.ConversationID, CallID: req.CallID,
				Tool: call.Tool, Operation: call.Operation}
			o.startRec = &h.start // enqueued after the End (recordEnd)
		}
		return nil
	}
	o.argsJSON, _ = json.Marshal(call.Args)
	if l == nil {
		return nil
	}
	start := audit.Record{Kind: audit.KindCallStart, Conversation: req.ConversationID, CallID: req.CallID,
		Tool: call.Tool, Operation: call.Operation, ArgsDigest: audit.Digest(o.argsJSON)}
	o.effect = true
	if o.allowed == nil {
		return x.auditAppend(ctx, start)
	}
	decision := *o.allowed
	o.allowed = nil
	err := l.AppendAll(decision, start)
	if err == nil {
		x.cfg.Observe.Metrics.AuditAppended(ctx, decision.Kind)
		x.cfg.Observe.Metrics.AuditAppended(ctx, start.Kind)
	}
	return x.auditFailed(ctx, start, err)
}

// callEnded runs the post-hooks (their context is added to the result),
// tells the model what was changed, and queues the call's records in the
// recorder (recorder.go): its metrics, its history row and, for a call
// without an effect, its audit records. The returned record queues the
// call.end of a call with an effect in the audit log; the caller runs it
// once the End is logged.
func (x *Executor) callEnded(ctx context.Context, req *CallRequest, start *events.Start, call *tools.Call, end *events.End) (record func()) {
	ob := x.cfg.Observe
	o := obsFrom(ctx)
	if o == nil {
		o = &callObs{started: req.Received}
	}
	if o.argsJSON == nil && o.argsOf == nil {
		o.argsOf = call // argsLate; nil: the call did not decode
	}
	if end.Err == nil && end.Result != nil && call != nil && !ob.Hooks.Empty() {
		req.inline.mayWait() // hooks are processes
		hctx, span := x.childSpan(ctx, spanHooks)
		res, err := ob.Hooks.Post(hctx, hooks.Call{Conversation: req.ConversationID, CallID: req.CallID, Name: flatName(&tools.Target{ToolName: start.Tool, Operation: start.Operation}),
			Tool: start.Tool, Operation: start.Operation, Input: call.Args, PermissionMode: permissionMode(req.Mode)},
			hooks.Response{Success: true, Content: end.Result.Text, Structured: end.Result.Structured, ExitCode: exitCode(end.Result)})
		if err == nil {
			x.recordHooksPost(ctx, span, req, start, res)
			o.hookContext = append(o.hookContext, res.Context...)
		}
		span.End()
	}
	if end.Result != nil && (len(o.hookContext) > 0 || len(o.changed) > 0) {
		var b strings.Builder
		b.WriteString(end.Result.Text)
		for _, c := range o.changed {
			fmt.Fprintf(&b, "\n\n[toold] %s", c)
		}
		for _, c := range o.hookContext {
			fmt.Fprintf(&b, "\n\n[hook] %s", c)
		}
		end.Result.Text = b.String()
	}
	// What follows records the call; the End does not wait for it. The
	// recorder's job is queued before the End is logged, so that a
	// client that has the End finds the call in a flushed history.
	if o.effect && ob.Audit != nil {
		x.rec.add(func() { x.recordEnd(ctx, req, start, end, o, false) })
		return func() { x.auditEnd(ctx, req, start, end, o) }
	}
	x.rec.add(func() { x.recordEnd(ctx, req, start, end, o, true) })
	return func() {}
}

// outcome is an ended call's outcome and error code (history, metrics,
// audit).
func outcome(end *events.End) (outcome, code string) {
	if end.Err != nil {
		return "error", strings.TrimPrefix(errdefs.CodeName(errdefs.As(end.Err)), "ERROR_CODE_")
	}
	return "success", ""
}

// recordEnd records an ended call: metrics, its history row, and with
// withAudit the audit log's call end (with the digests of its arguments and
// result), last. The recorder runs it (recorder.go).
func (x *Executor) recordEnd(ctx context.Context, req *CallRequest, start *events.Start, end *events.End, o *callObs, withAudit bool) {
	ob := x.cfg.Observe
	if ob.History != nil { // the row stores them; auditEnd makes them itself
		o.argsLate()
	}
	outcome, code := outcome(end)
	ob.Metrics.CallEnded(ctx, start.Tool, start.Operation, outcome, code, end.Duration)
	summary := ""
	if end.Result != nil {
		summary = end.Result.Text
	} else if end.Err != nil {
		summary = errdefs.As(end.Err).Msg
	}
	ec := exitCode(end.Result)
	if ob.History != nil {
		e := history.Entry{Conversation: req.ConversationID, CallID: req.CallID, Name: req.Name, Tool: start.Tool,
			Operation: start.Operation, Arguments: string(o.argsJSON), Decision: o.decision, Rule: o.rule, Approver: o.approver,
			Outcome: outcome, Code: code, ExitCode: ec, Summary: summary, Started: req.Received, Ended: req.Received.Add(end.Duration)}
		if _, err := ob.History.Record(context.WithoutCancel(ctx), e); err != nil {
			x.cfg.Logger.Error("history: recording the call failed", "call_id", req.CallID, "err", err)
		}
	}
	if withAudit {
		x.auditEnd(ctx, req, start, end, o)
	}
}

// auditEnd queues the call's call.end in the audit log (with the digests
// of its arguments and result), after its decision and call.start when
// they are not written yet (an effect-free call, or one that ended before
// it started).
func (x *Executor) auditEnd(ctx context.Context, req *CallRequest, start *events.Start, end *events.End, o *callObs) {
	if x.cfg.Observe.Audit == nil {
		return
	}
	o.argsLate()
	outcome, code := outcome(end)
	r := audit.Record{Kind: audit.KindCallEnd, Conversation: req.ConversationID, CallID: req.CallID, Tool: start.Tool,
		Operation: start.Operation, Outcome: outcome, Code: code, ExitCode: exitCode(end.Result)}
	if o.argsJSON != nil {
		r.ArgsDigest = audit.Digest(o.argsJSON)
	}
	if end.Result != nil {
		r.ResultDigest = audit.ResultDigest(end.Result.Text, end.Result.JSON)
	}
	// The call has happened, so nothing waits for these records' write:
	// Enqueue leaves it to the next call's or the log's writer. A failure
	// is logged; a lost record is counted in the log. One hold of the
	// log's lock for the call's records (the lock is what 64 concurrent
	// calls contend for).
	var buf [3]audit.Record
	rs := buf[:0]
	if o.allowed != nil { // the call ended before it started, or is effect-free
		rs = append(rs, *o.allowed)
		o.allowed = nil
	}
	if o.startRec != nil {
		rs = append(rs, *o.startRec)
		o.startRec = nil
	}
	x.auditEnqueue(ctx, append(rs, r)...)
}

// argsLate makes the arguments' JSON of a call whose call.start did not
// need it before the call ran, and the digest in that call.start.
func (o *callObs) argsLate() {
	if o.argsOf == nil {
		return
	}
	o.argsJSON, _ = json.Marshal(o.argsOf.Args)
	o.argsOf = nil
	if o.startRec != nil {
		o.startRec.ArgsDigest = audit.Digest(o.argsJSON)
	}
}

// effectFree reports whether a call changes nothing and reaches nothing
// outside toold: a Fast operation (tools.OperationSpec.Fast) whose effect
// names no write, command or host.
func effectFree(target *tools.Target, e tools.Effect) bool {
	return target.Fast() && len(e.Writes) == 0 && e.Command == "" && len(e.Hosts) == 0
}

// auditEnqueue enqueues rs (audit.Log.EnqueueAll); a failure is logged.
func (x *Executor) auditEnqueue(ctx context.Context, rs ...audit.Record) {
	err := x.cfg.Observe.Audit.EnqueueAll(rs...)
	if err == nil {
		for _, r := range rs {
			x.cfg.Observe.Metrics.AuditAppended(ctx, r.Kind)
		}
		return
	}
	last := rs[len(rs)-1]
	x.cfg.Logger.ErrorContext(ctx, "audit log append failed; the call had ended", "kind", last.Kind, "call_id", last.CallID, "dir", x.cfg.Observe.Audit.Dir(), "err", err)
}

func (x *Executor) recordHooksPost(ctx context.Context, span trace.Span, req *CallRequest, start *events.Start, res hooks.Result) {
	x.recordHooks(ctx, span, req, &tools.Target{ToolName: start.Tool, Operation: start.Operation}, res)
}

// auditAppend appends r. A failure is logged, and returned (an
// errdefs.ErrUnavailable error) unless Observe.AuditContinue: the callers
// that come before a call runs refuse it then.
func (x *Executor) auditAppend(ctx context.Context, r audit.Record) error {
	return x.auditRecord(ctx, r, false)
}

func (x *Executor) auditAppendSync(ctx context.Context, r audit.Record) {
	_ = x.auditRecord(ctx, r, true)
}

func (x *Executor) auditRecord(ctx context.Context, r audit.Record, sync bool) error {
	l := x.cfg.Observe.Audit
	if l == nil {
		return nil
	}
	var err error
	if sync {
		_, err = l.AppendSync(r)
	} else {
		_, err = l.Append(r)
	}
	if err == nil {
		x.cfg.Observe.Metrics.AuditAppended(ctx, r.Kind)
	}
	return x.auditFailed(ctx, r, err)
}

// auditFailed logs a failed append of r (nil: nothing) and returns it
// unless Observe.AuditContinue.
func (x *Executor) auditFailed(ctx context.Context, r audit.Record, err error) error {
	l := x.cfg.Observe.Audit
	if err != nil {
		cause := err
		if e := errdefs.As(err); e.Cause != nil {
			cause = e.Cause
		}
		if x.cfg.Observe.AuditContinue {
			x.cfg.Logger.ErrorContext(ctx, "audit log append failed; the call goes on unrecorded (audit.on_failure: continue)", "kind", r.Kind, "call_id", r.CallID, "dir", l.Dir(), "err", cause)
			return nil
		}
		x.cfg.Logger.ErrorContext(ctx, "audit log append failed; the call is refused (audit.on_failure: refuse)", "kind", r.Kind, "call_id", r.CallID, "dir", l.Dir(), "err", cause)
		return err
	}
	return nil
}

// flatName is the name a hook sees as tool_name: the operation's own
// name for a consolidated tool, else the tool's.
func flatName(t *tools.Target) string {
	if t.Operation != "" {
		return t.Operation
	}
	return t.ToolName
}

// permissionMode maps toold's approval modes onto Claude Code's
// permission_mode values.
func permissionMode(m authz.Mode) string {
	if m == authz.ModeYOLO {
		return "bypassPermissions"
	}
	return "default"
}

func exitCode(r *tools.Result) *int {
	if r == nil || r.Structured == nil {
		return nil
	}
	switch v := r.Structured["exit_code"].(type) {
	case int:
		return &v
	case int64:
		n := int(v)
		return &n
	case float64:
		n := int(v)
		return &n
	}
	return nil
}

func compactJSON(v any) string {
	b, _ := json.Marshal(v)
	return tools.Clip(string(b), 300)
}

// richerAnswer applies what an approval may say beyond yes: edited
// arguments (validated against the schema and judged again — a deny then
// stands, an ask is what the person just answered — and the model is told
// what changed), and saving the approved scope as a policy rule with this
// call as its example.
func (x *Executor) richerAnswer(ctx context.Context, req *CallRequest, target *tools.Target, call *tools.Call, ans Approval, scope authz.Scope, scopeOK bool) error {
	if ans.EditedArgs != nil {
		before := compactJSON(call.Args)
		var effect tools.Effect
		if err := x.amend(call, target, ans.EditedArgs, &effect); err != nil {
			e := errdefs.As(err)
			return &errdefs.Error{Class: errdefs.ErrInvalidArgument, Field: e.Field, Rule: e.Rule,
				Msg: "the arguments the person edited do not fit the schema, so nothing was run: " + e.Msg, Cause: err}
		}
		v, err := guard(call, "Authorize", func() (authz.Verdict, error) {
			return x.cfg.Authorizer.Authorize(ctx, &authz.Request{ConversationID: req.ConversationID, CallID: req.CallID, Mode: req.Mode,
				Tool: target.ToolName, Operation: target.Operation, Args: call.Args, Effect: effect, Risk: effect.Risk})
		})
		if err != nil {
			return err
		}
		x.auditAppendSync(ctx, audit.Record{Kind: audit.KindDecision, Conversation: req.ConversationID, CallID: req.CallID,
			Tool: target.ToolName, Operation: target.Operation, Decision: v.Decision.String(), Rule: v.Rule,
			Detail: "edited arguments judged again: " + v.Reason})
		if v.Decision == authz.Deny {
			return &errdefs.Error{Class: errdefs.ErrDenied, Msg: "the arguments the person edited are " + deniedMessage(v), Rule: v.Rule}
		}
		takePaths(call, v)
		if o := obsFrom(ctx); o != nil {
			o.changed = append(o.changed, fmt.Sprintf("the person approved this call with edited arguments: %s (you sent %s)", compactJSON(call.Args), before))
		}
	}
	if !ans.SaveRule {
		return nil
	}
	rs := x.cfg.Observe.RuleSaver
	if rs == nil || !scopeOK {
		x.cfg.Logger.WarnContext(ctx, "approval asked to save a rule, but no policy file can take it", "call_id", req.CallID)
		return nil
	}
	if !scope.Savable() {
		x.cfg.Logger.WarnContext(ctx, "approval asked to save a rule for a scope that has no rule form (this call only, or one exact call); nothing saved", "call_id", req.CallID)
		return nil
	}
	if scope.Tool == "" {
		scope.Tool, scope.Operation = target.ToolName, target.Operation
	}
	name, err := rs.SaveRule(scope, call.Args)
	if err != nil {
		x.cfg.Logger.ErrorContext(ctx, "saving the approved scope as a rule failed", "call_id", req.CallID, "err", err)
		return nil // the approval of this call stands
	}
	x.auditAppendSync(ctx, audit.Record{Kind: audit.KindGrant, Conversation: req.ConversationID, CallID: req.CallID,
		Tool: scope.Tool, Operation: scope.Operation, Who: req.Client, Scope: "rule", Rule: name,
		Detail: "saved as a policy rule: " + scope.Description})
	return nil
}
