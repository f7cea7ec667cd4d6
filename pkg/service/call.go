package service

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	"go.opentelemetry.io/otel/attribute"
	otelcodes "go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	pb "github.com/toold/toold/gen/toold/v1"
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
	attrCoercions    = attribute.Key("toold.coercions")
)

var propagator = propagation.TraceContext{}

// callInfo is what the pipeline needs from the stream, captured when the
// call was admitted.
type callInfo struct {
	msg            *pb.ToolCall
	conversationID string
	mode           authz.Mode
	omitExecuting  bool
	received       time.Time
}

// run is the pipeline of one call: resolve, decode, coerce, validate,
// describe, authorize, execute, shape. It always pushes exactly one Start
// first and one End last.
func (st *stream) run(ctx context.Context, ci *callInfo) {
	c := ci.msg
	id := c.GetCallId()
	parent := ctx
	if tc := c.GetTraceContext(); len(tc) > 0 {
		parent = propagator.Extract(ctx, propagation.MapCarrier(tc))
	}
	ctx, span := st.srv.cfg.Tracer.Start(parent, spanCall, trace.WithAttributes(
		attrCallID.String(id),
		attrConversation.String(ci.conversationID),
		attrRequested.String(c.GetName()),
	))
	defer span.End()

	start := &events.Start{RequestedName: c.GetName()}
	if sc := span.SpanContext(); sc.HasTraceID() {
		start.TraceID = sc.TraceID().String()
	}
	end := &events.End{}
	sink := &callSink{st: st, ctx: ctx, callID: id}

	target, call, coercions, err := st.prepare(ctx, ci)
	end.Coercions = coercions
	var effect tools.Effect
	if target != nil {
		start.Tool, start.Operation, start.Risk = target.ToolName, target.Operation, target.Risk
		span.SetAttributes(attrTool.String(target.ToolName), attrOperation.String(target.Operation))
	}
	if err == nil {
		effect, err = describe(target.Tool, call)
		if effect.Risk != tools.RiskUnknown {
			start.Risk = effect.Risk
		}
		start.Display = effect.Display
	}
	if start.Display == "" {
		start.Display = displayFallback(start, c.GetName())
	}
	span.SetAttributes(attrRisk.String(start.Risk.String()))
	st.push(events.Event{CallID: id, Time: ci.received, Start: start})

	if err == nil {
		err = st.authorize(ctx, ci, target, call, effect, start.Risk)
	}
	if err == nil {
		if !ci.omitExecuting {
			st.push(events.Event{CallID: id, Executing: &events.Executing{}})
		}
		end.Result, err = st.execute(ctx, ci, target, call, sink)
	}
	end.Err = err
	end.Duration = time.Since(ci.received)
	st.finishSpan(span, end, sink)
	st.logEnd(ci, start, end)
	st.push(events.Event{CallID: id, End: end})
}

// prepare resolves the name, decodes and coerces the arguments, and
// validates them, in the "validate" span.
func (st *stream) prepare(ctx context.Context, ci *callInfo) (*tools.Target, *tools.Call, []tools.Coercion, error) {
	_, span := st.srv.cfg.Tracer.Start(ctx, spanValidate)
	defer span.End()
	c := ci.msg
	var args map[string]any
	switch a := c.GetArguments().(type) {
	case *pb.ToolCall_ArgumentsJson:
		var err error
		if args, err = tools.DecodeArguments(a.ArgumentsJson); err != nil {
			spanError(span, err)
			return nil, nil, nil, err
		}
	case *pb.ToolCall_ArgumentsStruct:
		args = a.ArgumentsStruct.AsMap()
	default:
		args = map[string]any{}
	}
	target, err := st.srv.cfg.Registry.Resolve(c.GetName(), args)
	if err != nil {
		spanError(span, err)
		return nil, nil, nil, err
	}
	coercions, err := target.Prepare(args)
	span.SetAttributes(attrCoercions.Int(len(coercions)))
	if err != nil {
		spanError(span, err)
		return target, nil, coercions, err
	}
	call := &tools.Call{
		ID:             c.GetCallId(),
		ConversationID: ci.conversationID,
		Tool:           target.ToolName,
		Operation:      target.Operation,
		Args:           args,
	}
	return target, call, coercions, nil
}

// describe asks the tool what the call would do; a panic there is a bug in
// the tool and ends the call INTERNAL.
func describe(t tools.Tool, call *tools.Call) (eff tools.Effect, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &errdefs.Error{Class: errdefs.ErrInternal, Msg: "internal error; the details are in the toold log",
				Cause: fmt.Errorf("panic in Describe of %s.%s: %v\n%s", call.Tool, call.Operation, r, debug.Stack())}
		}
	}()
	return t.Describe(call), nil
}

func displayFallback(s *events.Start, requested string) string {
	switch {
	case s.Tool == "":
		return "Calling " + tools.Preview(requested, 60)
	case s.Operation == s.Tool:
		return "Calling " + s.Tool
	}
	return "Calling " + s.Tool + "." + s.Operation
}

// authorize asks the policy, in the "authorize" span.
func (st *stream) authorize(ctx context.Context, ci *callInfo, target *tools.Target, call *tools.Call, effect tools.Effect, risk tools.Risk) error {
	ctx, span := st.srv.cfg.Tracer.Start(ctx, spanAuthorize)
	defer span.End()
	v, err := st.srv.cfg.Authorizer.Authorize(ctx, &authz.Request{
		ConversationID: ci.conversationID,
		CallID:         call.ID,
		Mode:           ci.mode,
		Tool:           target.ToolName,
		Operation:      target.Operation,
		Args:           call.Args,
		Effect:         effect,
		Risk:           risk,
	})
	if err != nil {
		spanError(span, err)
		return err
	}
	span.SetAttributes(attrDecision.String(v.Decision.String()))
	span.AddEvent("decision", trace.WithAttributes(
		attrDecision.String(v.Decision.String()),
		attribute.String("toold.rule", v.Rule),
		attribute.String("toold.reason", v.Reason),
	))
	switch v.Decision {
	case authz.Allow:
		return nil
	case authz.Deny:
		err := &errdefs.Error{Class: errdefs.ErrDenied, Msg: v.Reason, Rule: v.Rule}
		spanError(span, err)
		return err
	default:
		// Approval requests are answered in-band; until the policy engine
		// offers them, an ask cannot be satisfied and fails closed.
		err := &errdefs.Error{Class: errdefs.ErrDenied, Rule: v.Rule,
			Msg: "this call needs a person's approval, which this stream cannot give: " + v.Reason}
		spanError(span, err)
		return err
	}
}

// execute runs the tool under the call's timeout, in the "execute" span. A
// panic in the tool ends this call INTERNAL; the daemon lives on.
func (st *stream) execute(ctx context.Context, ci *callInfo, target *tools.Target, call *tools.Call, sink *callSink) (res *tools.Result, err error) {
	ctx, span := st.srv.cfg.Tracer.Start(ctx, spanExecute)
	defer span.End()
	timeout := st.srv.cfg.DefaultTimeout
	if d := ci.msg.GetTimeout(); d != nil && d.AsDuration() > 0 {
		timeout = d.AsDuration()
	}
	timeout = min(timeout, st.srv.cfg.MaxTimeout)
	ctx, cancel := context.WithTimeoutCause(ctx, timeout, errCallTimeout)
	defer cancel()

	func() {
		defer func() {
			if r := recover(); r != nil {
				res = nil
				err = &errdefs.Error{Class: errdefs.ErrInternal, Msg: "internal error; the details are in the toold log",
					Cause: fmt.Errorf("panic in %s.%s: %v\n%s", call.Tool, call.Operation, r, debug.Stack())}
			}
		}()
		res, err = target.Tool.Run(ctx, call, sink)
	}()
	if err != nil && ctx.Err() != nil {
		err = st.contextError(ctx, timeout, err)
	}
	if err != nil {
		spanError(span, err)
	}
	return res, err
}

// contextError says why a call's context ended, for the model.
func (st *stream) contextError(ctx context.Context, timeout time.Duration, cause error) error {
	switch why := context.Cause(ctx); {
	case errors.Is(why, errCallTimeout):
		return errdefs.Wrap(errdefs.ErrTimeout, cause,
			"the call did not finish within its timeout of %s and was stopped; narrow the request or ask for a longer timeout (at most %s)", timeout, st.srv.cfg.MaxTimeout)
	case errors.Is(why, errCanceledByClient):
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
	span.SetAttributes(attrErrorCode.String(ErrorCode(e).String()))
}

func (st *stream) finishSpan(span trace.Span, end *events.End, sink *callSink) {
	var n int
	if end.Result != nil {
		n = len(end.Result.Text) + len(end.Result.JSON)
	}
	span.SetAttributes(attrBytes.Int(n), attrOutputBytes.Int64(sink.outputBytes.Load()))
	if end.Err != nil {
		span.SetAttributes(attrOutcome.String("error"))
		spanError(span, end.Err)
		return
	}
	span.SetAttributes(attrOutcome.String("ok"))
}

func (st *stream) logEnd(ci *callInfo, start *events.Start, end *events.End) {
	attrs := []any{
		"call_id", ci.msg.GetCallId(),
		"conversation_id", ci.conversationID,
		"tool", start.Tool,
		"operation", start.Operation,
		"duration", end.Duration,
	}
	if start.TraceID != "" {
		attrs = append(attrs, "trace_id", start.TraceID)
	}
	if end.Err == nil {
		st.log.Info("call ok", attrs...)
		return
	}
	e := errdefs.As(end.Err)
	attrs = append(attrs, "code", ErrorCode(e).String(), "message", e.Msg)
	if errors.Is(e, errdefs.ErrInternal) && e.Cause != nil {
		st.log.Error("call failed: internal error", append(attrs, "cause", e.Cause.Error())...)
		return
	}
	st.log.Info("call failed", attrs...)
}
