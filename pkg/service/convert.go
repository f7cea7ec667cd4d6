package service

import (
	"encoding/json"
	"math"
	"unicode/utf8"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	pb "github.com/toold/toold/gen/toold/v1"
	"github.com/toold/toold/pkg/authz"
	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/events"
	"github.com/toold/toold/pkg/tools"
)

// ErrorCode returns the stream error code for err (see errdefs.Table).
func ErrorCode(err error) pb.ErrorCode {
	return pb.ErrorCode(pb.ErrorCode_value[errdefs.CodeName(err)])
}

// GRPCCode returns the gRPC status code for err (see errdefs.Table).
func GRPCCode(err error) codes.Code { return errdefs.GRPCCode(err) }

func riskToPB(r tools.Risk) pb.RiskLevel {
	switch r {
	case tools.RiskLow:
		return pb.RiskLevel_RISK_LEVEL_LOW
	case tools.RiskMedium:
		return pb.RiskLevel_RISK_LEVEL_MEDIUM
	case tools.RiskHigh:
		return pb.RiskLevel_RISK_LEVEL_HIGH
	}
	return pb.RiskLevel_RISK_LEVEL_UNSPECIFIED
}

func modeToPB(m authz.Mode) pb.ApprovalMode {
	switch m {
	case authz.ModeYOLO:
		return pb.ApprovalMode_APPROVAL_MODE_YOLO
	case authz.ModeAuto:
		return pb.ApprovalMode_APPROVAL_MODE_AUTO
	case authz.ModeAsk:
		return pb.ApprovalMode_APPROVAL_MODE_ASK
	}
	return pb.ApprovalMode_APPROVAL_MODE_UNSPECIFIED
}

func modeFromPB(m pb.ApprovalMode) authz.Mode {
	switch m {
	case pb.ApprovalMode_APPROVAL_MODE_YOLO:
		return authz.ModeYOLO
	case pb.ApprovalMode_APPROVAL_MODE_AUTO:
		return authz.ModeAuto
	case pb.ApprovalMode_APPROVAL_MODE_ASK:
		return authz.ModeAsk
	}
	return authz.ModeUnset
}

func streamToPB(s tools.Stream) pb.OutputChunk_Stream {
	switch s {
	case tools.Stdout:
		return pb.OutputChunk_STREAM_STDOUT
	case tools.Stderr:
		return pb.OutputChunk_STREAM_STDERR
	case tools.PTY:
		return pb.OutputChunk_STREAM_PTY
	}
	return pb.OutputChunk_STREAM_UNSPECIFIED
}

// toolErrorToPB converts an error for the client. Messages of classified
// errors are written for the model; unclassified ones were already replaced
// by a generic INTERNAL message in errdefs.As.
func toolErrorToPB(err error) *pb.ToolError {
	e := errdefs.As(err)
	return &pb.ToolError{
		Code:        ErrorCode(e),
		Message:     e.Msg,
		Suggestions: e.Suggestions,
		Field:       e.Field,
		Rule:        e.Rule,
	}
}

// structOf converts a JSON-like map to a Struct; values that do not convert
// are dropped rather than failing the call.
func structOf(m map[string]any) *structpb.Struct {
	if len(m) == 0 {
		return nil
	}
	if s, ok := flatStructOf(m); ok {
		return s
	}
	s, err := structpb.NewStruct(normalize(m).(map[string]any))
	if err != nil {
		return nil
	}
	return s
}

// flatStructOf is structOf without normalize's JSON round trip for a map
// of the scalars most results carry (valid UTF-8 strings and keys, bools,
// ints, finite floats, nil): the values the round trip would give. ok is
// false for anything else, which structOf normalizes.
func flatStructOf(m map[string]any) (*structpb.Struct, bool) {
	fields := make(map[string]*structpb.Value, len(m))
	for k, v := range m {
		if !utf8.ValidString(k) {
			return nil, false
		}
		var pv *structpb.Value
		switch x := v.(type) {
		case nil:
			pv = structpb.NewNullValue()
		case string:
			if !utf8.ValidString(x) {
				return nil, false
			}
			pv = structpb.NewStringValue(x)
		case bool:
			pv = structpb.NewBoolValue(x)
		case int:
			pv = structpb.NewNumberValue(float64(x))
		case int64:
			pv = structpb.NewNumberValue(float64(x))
		case float64:
			if math.IsInf(x, 0) || math.IsNaN(x) {
				return nil, false
			}
			pv = structpb.NewNumberValue(x)
		default:
			return nil, false
		}
		fields[k] = pv
	}
	return &structpb.Struct{Fields: fields}, true
}

// normalize rewrites a value into the types structpb accepts, by a JSON
// round trip (json.Number, typed slices and structs become plain values).
func normalize(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		return map[string]any{}
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		return map[string]any{}
	}
	return out
}

func endToPB(e *events.End) *pb.ToolCallEnd {
	res := &pb.ToolResult{}
	fillResult(res, e, nil)
	return &pb.ToolCallEnd{Result: res}
}

// fillResult fills res, reset, from e. sc, when not nil, lends the
// messages of a common result (its duration and one text content), so that
// the stream's sender converts a call's End without allocating them.
func fillResult(res *pb.ToolResult, e *events.End, sc *sendScratch) {
	res.Reset()
	if sc != nil {
		nanos := e.Duration.Nanoseconds()
		secs := nanos / 1e9
		sc.dur.Reset()
		sc.dur.Seconds, sc.dur.Nanos = secs, int32(nanos-secs*1e9)
		res.Duration = &sc.dur
		res.Content = sc.content[:0]
	} else {
		res.Duration = durationpb.New(e.Duration)
	}
	// meta is made only when there is metadata (most calls have none: an
	// empty map per End was a tenth of the sender's allocations).
	var meta map[string]any
	set := func(k string, v any) {
		if meta == nil {
			meta = map[string]any{}
		}
		meta[k] = v
	}
	if r := e.Result; r != nil {
		if r.Text != "" {
			if sc != nil {
				sc.text.Reset()
				sc.textKind.Text = r.Text
				sc.text.Kind = &sc.textKind
				res.Content = append(res.Content, &sc.text)
			} else {
				res.Content = append(res.Content, &pb.Content{Kind: &pb.Content_Text{Text: r.Text}})
			}
		}
		if len(r.JSON) > 0 {
			res.Content = append(res.Content, &pb.Content{Kind: &pb.Content_Json{Json: string(r.JSON)}})
		}
		res.Structured = structOf(r.Structured)
		if t := r.Truncation; t != nil {
			res.Truncation = &pb.Truncation{
				Truncated:    true,
				ShownBytes:   t.ShownBytes,
				TotalBytes:   t.TotalBytes,
				ShownItems:   t.ShownItems,
				TotalItems:   t.TotalItems,
				Continuation: t.Continuation,
			}
		}
		for k, v := range r.Metadata {
			set(k, v)
		}
	}
	for k, v := range e.Metadata {
		set(k, v)
	}
	if e.Err != nil {
		res.Error = toolErrorToPB(e.Err)
		if len(res.Content) == 0 {
			res.Content = append(res.Content, &pb.Content{Kind: &pb.Content_Text{Text: "Error: " + res.Error.Message}})
		}
	} else {
		res.Success = true
	}
	for _, c := range e.Coercions {
		res.Coercions = append(res.Coercions, &pb.Coercion{Field: c.Field, From: c.From, To: c.To, Rule: c.Rule})
	}
	if len(e.Coercions) > 0 {
		set("coerced_arguments", len(e.Coercions))
	}
	if len(res.Content) == 0 {
		res.Content = nil // as a fresh conversion: no empty, non-nil slice
	}
	res.Metadata = structOf(meta)
}

func scopeToPB(s authz.Scope) *pb.ApprovalScope {
	k := pb.ApprovalScope_KIND_ONCE
	var ttl *durationpb.Duration
	if s.Conversation {
		k = pb.ApprovalScope_KIND_CONVERSATION
		ttl = durationpb.New(s.TTL)
	}
	return &pb.ApprovalScope{
		ScopeId:       s.ID,
		Kind:          k,
		Tool:          s.Tool,
		Operation:     s.Operation,
		PathPrefix:    s.PathPrefix,
		CommandPrefix: s.CommandPrefix,
		Host:          s.Host,
		Ttl:           ttl,
		Description:   s.Description,
	}
}

func effectToPB(e tools.Effect, summary, diff string, cmds []authz.ParsedCommand) *pb.Effect {
	out := &pb.Effect{
		Reads:   e.Reads,
		Writes:  e.Writes,
		Command: e.Command,
		Diff:    diff,
		Hosts:   e.Hosts,
		Summary: summary,
		Env:     e.Env,
	}
	if e.Command != "" && e.Dir != "." {
		out.WorkingDir = e.Dir
	}
	for _, c := range cmds {
		out.Commands = append(out.Commands, &pb.ParsedCommand{
			Args: c.Args, Wrappers: c.Wrappers, Redirects: c.Redirects, Decision: c.Decision, Rule: c.Rule, Env: c.Env,
		})
	}
	return out
}

func approvalToPB(a *events.ApprovalRequest) *pb.RequiresApproval {
	out := &pb.RequiresApproval{
		ApprovalId: a.ApprovalID,
		Reason:     a.Reason,
		Rule:       a.Rule,
		Risk:       riskToPB(a.Risk),
		Effect:     effectToPB(a.Effect, a.Summary, a.Diff, a.Commands),
	}
	for _, s := range a.Scopes {
		out.Scopes = append(out.Scopes, scopeToPB(s))
	}
	if !a.ExpiresAt.IsZero() {
		out.ExpiresAt = timestamppb.New(a.ExpiresAt)
	}
	out.Kind = pb.ApprovalKind_APPROVAL_KIND_CALL
	if a.OutsideSandbox {
		out.Kind = pb.ApprovalKind_APPROVAL_KIND_OUTSIDE_SANDBOX
	}
	return out
}

// eventToPB converts a queued event to the wire.
func eventToPB(ev *events.Event) *pb.ServerEvent {
	return eventToPBInto(&pb.ServerEvent{}, &timestamppb.Timestamp{}, nil, ev)
}

// sendScratch is what a stream's sender converts events into, reused from
// one Send to the next (Send has marshaled a message when it returns:
// gRPC keeps no reference, nor do toold's interceptors and stats
// handlers): the ServerEvent and its timestamp, and the messages of a
// call's Start, Executing and End with a text result — every message of a
// Fast call, which the sender then converts without an allocation (there
// were about fifteen a call). Rarer events and parts are made anew.
type sendScratch struct {
	ev       pb.ServerEvent
	ts       timestamppb.Timestamp
	start    pb.ToolCallStart
	startW   pb.ServerEvent_Start
	exec     pb.Executing
	execW    pb.ServerEvent_Executing
	end      pb.ToolCallEnd
	endW     pb.ServerEvent_End
	res      pb.ToolResult
	dur      durationpb.Duration
	text     pb.Content
	textKind pb.Content_Text
	content  [2]*pb.Content
}

// convert converts ev into the scratch messages; what it returns is valid
// until the next convert.
func (sc *sendScratch) convert(ev *events.Event) *pb.ServerEvent {
	return eventToPBInto(&sc.ev, &sc.ts, sc, ev)
}

// eventToPBInto is eventToPB into out and ts, which it resets, and, when
// sc is not nil, into its messages for a Start, Executing or End.
func eventToPBInto(out *pb.ServerEvent, ts *timestamppb.Timestamp, sc *sendScratch, ev *events.Event) *pb.ServerEvent {
	out.Reset()
	ts.Reset()
	ts.Seconds, ts.Nanos = ev.Time.Unix(), int32(ev.Time.Nanosecond())
	out.CallId, out.Seq, out.Time = ev.CallID, ev.Seq, ts
	switch {
	case ev.Start != nil:
		s := ev.Start
		var start *pb.ToolCallStart
		if sc != nil {
			start = &sc.start
			start.Reset()
		} else {
			start = &pb.ToolCallStart{}
		}
		start.RequestedName, start.Tool, start.Operation = s.RequestedName, s.Tool, s.Operation
		start.Display, start.Risk, start.TraceId = s.Display, riskToPB(s.Risk), s.TraceID
		if sc != nil {
			sc.startW.Start = start
			out.Event = &sc.startW
		} else {
			out.Event = &pb.ServerEvent_Start{Start: start}
		}
	case ev.Progress != nil:
		p := ev.Progress
		pp := &pb.Progress{Message: p.Message}
		if p.Fraction >= 0 && p.Output == nil {
			f := p.Fraction
			pp.Fraction = &f
		}
		if o := p.Output; o != nil {
			pp.Output = &pb.OutputChunk{Stream: streamToPB(o.Stream), Data: o.Data, Offset: o.Offset}
		} else if p.Data != nil {
			pp.Data = structOf(p.Data)
		}
		out.Event = &pb.ServerEvent_Progress{Progress: pp}
	case ev.End != nil:
		if sc != nil {
			fillResult(&sc.res, ev.End, sc)
			sc.end.Reset()
			sc.end.Result = &sc.res
			sc.endW.End = &sc.end
			out.Event = &sc.endW
		} else {
			out.Event = &pb.ServerEvent_End{End: endToPB(ev.End)}
		}
	case ev.Executing != nil:
		if sc != nil {
			sc.exec.Reset()
			sc.exec.Pid = int32(ev.Executing.PID)
			sc.execW.Executing = &sc.exec
			out.Event = &sc.execW
		} else {
			out.Event = &pb.ServerEvent_Executing{Executing: &pb.Executing{Pid: int32(ev.Executing.PID)}}
		}
	case ev.Approval != nil:
		out.Event = &pb.ServerEvent_RequiresApproval{RequiresApproval: approvalToPB(ev.Approval)}
	case ev.Question != nil:
		q := ev.Question
		out.Event = &pb.ServerEvent_InputRequired{InputRequired: &pb.InputRequired{
			RequestId: q.RequestID, Prompt: q.Prompt, Choices: q.Choices,
			Approval: q.Approval, AuthorizeOperation: q.AuthorizeOperation, AuthorizeArgumentsJson: q.AuthorizeArguments,
		}}
	case ev.Welcome != nil:
		w := ev.Welcome
		out.Event = &pb.ServerEvent_Welcome{Welcome: &pb.Welcome{
			ConversationId: w.ConversationID, ConversationSecret: w.ConversationSecret, ApprovalMode: modeToPB(w.Mode),
			ServerVersion: w.ServerVersion, Workspace: w.Workspace, MaxTimeout: durationpb.New(w.MaxTimeout),
			StreamId: w.StreamID, Resumed: w.Resumed, ReplayFromSeq: w.ReplayFrom,
		}}
	case ev.Keepalive != nil:
		out.Event = &pb.ServerEvent_Keepalive{Keepalive: &pb.Keepalive{}}
	case ev.Rejected != nil:
		e := errdefs.As(ev.Rejected.Err)
		out.Event = &pb.ServerEvent_Rejected{Rejected: &pb.MessageRejected{
			Code: ErrorCode(e), Message: e.Msg, ReferenceId: ev.Rejected.ReferenceID,
		}}
	}
	return out
}
