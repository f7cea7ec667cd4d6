package service

import (
	"encoding/json"

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
	s, err := structpb.NewStruct(normalize(m).(map[string]any))
	if err != nil {
		return nil
	}
	return s
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
	res := &pb.ToolResult{Duration: durationpb.New(e.Duration)}
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
			res.Content = append(res.Content, &pb.Content{Kind: &pb.Content_Text{Text: r.Text}})
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
	res.Metadata = structOf(meta)
	return &pb.ToolCallEnd{Result: res}
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
	return eventToPBInto(&pb.ServerEvent{}, &timestamppb.Timestamp{}, ev)
}

// eventToPBInto is eventToPB into out and ts, which it resets: the stream's
// sender reuses one of each (Send has marshaled a message when it returns).
func eventToPBInto(out *pb.ServerEvent, ts *timestamppb.Timestamp, ev *events.Event) *pb.ServerEvent {
	out.Reset()
	ts.Reset()
	ts.Seconds, ts.Nanos = ev.Time.Unix(), int32(ev.Time.Nanosecond())
	out.CallId, out.Seq, out.Time = ev.CallID, ev.Seq, ts
	switch {
	case ev.Start != nil:
		s := ev.Start
		out.Event = &pb.ServerEvent_Start{Start: &pb.ToolCallStart{
			RequestedName: s.RequestedName, Tool: s.Tool, Operation: s.Operation,
			Display: s.Display, Risk: riskToPB(s.Risk), TraceId: s.TraceID,
		}}
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
		out.Event = &pb.ServerEvent_End{End: endToPB(ev.End)}
	case ev.Executing != nil:
		out.Event = &pb.ServerEvent_Executing{Executing: &pb.Executing{Pid: int32(ev.Executing.PID)}}
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
