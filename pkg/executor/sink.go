package executor

import (
	"context"
	"io"
	"sync"
	"sync/atomic"

	"github.com/toold/toold/pkg/authz"
	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/events"
	"github.com/toold/toold/pkg/tools"
)

// callSink feeds a call's progress and output to its host, and is the
// executor's side of the call's tools.Sink (see tools). Its methods block
// while the client reads slowly (backpressure) and fail once the call's
// context ends.
type callSink struct {
	host        Host
	ctx         context.Context
	callID      string
	outputBytes atomic.Int64
	// activity, when set, is called on every progress and output (it resets
	// the idle timeout of a ProgressTimed tool).
	activity func()
	// executing says Started sends the Executing event (the tool starts a
	// process and the client wants Executing).
	executing bool
	started   sync.Once
	// stdin is the call's input, when its host can feed one.
	stdin *callInput
	// x and req make the call's grants (Grant); target and call are what
	// Authorize judges further effects of.
	x      *Executor
	req    *CallRequest
	target *tools.Target
	call   *tools.Call
	// ts is the call's tools.Sink (sink), kept here: one allocation less.
	ts tools.Sink
}

// sink returns the call's tools.Sink: every capability the host and the
// configuration give, nil for the others (see tools.Sink).
func (s *callSink) sink() *tools.Sink {
	ts := &s.ts
	*ts = tools.Sink{
		ProgressFunc: s.progress,
		OutputFunc:   s.output,
		AdoptFunc:    s.adopt,
		StartedFunc:  s.startedPID,
		Ask:          s.ask,
		Authorize:    s.authorize,
	}
	if s.stdin != nil {
		ts.Stdin = s.stdinReader
	}
	if s.x != nil && s.x.cfg.Granter != nil {
		ts.Grant = s.grant
	}
	return ts
}

// grant is tools.Sink.Grant: the executor's one path for grants.
func (s *callSink) grant(g tools.GrantRequest) (string, error) {
	scope := authz.Scope{Tool: g.Tool, Operation: g.Operation, Arguments: g.Arguments, Description: g.Description}
	grant, err := s.x.grant(s.ctx, s.req, scope, g.Once, g.TTL, g.By)
	return grant.ID, err
}

// authorize is tools.Sink.Authorize: a further effect of the running call
// (a redirect's host) is judged like the call itself, on the executor's
// authorize path with the stream's mode, traced, audited and asked.
func (s *callSink) authorize(ctx context.Context, effect tools.Effect) error {
	if s.target == nil || s.call == nil {
		return errdefs.New(errdefs.ErrInternal, "internal error; the details are in the toold log")
	}
	risk := effect.Risk
	if risk == tools.RiskUnknown {
		risk = s.target.Risk
	}
	return s.x.authorize(ctx, s.req, s.target, s.call, effect, risk, s.host)
}

// progress is tools.Sink.ProgressFunc.
func (s *callSink) progress(msg string, fraction float64, data map[string]any) error {
	if fraction > 1 {
		fraction = 1
	}
	if data != nil {
		fraction = -1
	}
	if s.activity != nil {
		s.activity()
	}
	return s.host.Emit(s.ctx, events.Event{CallID: s.callID, Progress: &events.Progress{Message: msg, Fraction: fraction, Data: data}})
}

// output is tools.Sink.OutputFunc.
func (s *callSink) output(stream tools.Stream, p []byte) error {
	s.outputBytes.Add(int64(len(p)))
	if s.activity != nil {
		s.activity()
	}
	return s.host.Output(s.ctx, s.callID, stream, p)
}

// adopt is tools.Sink.AdoptFunc: p passes to the host (Host.Adopt).
func (s *callSink) adopt(stream tools.Stream, p []byte) error {
	s.outputBytes.Add(int64(len(p)))
	if s.activity != nil {
		s.activity()
	}
	return s.host.Adopt(s.ctx, s.callID, stream, p)
}

// startedPID is tools.Sink.StartedFunc.
func (s *callSink) startedPID(pid int) {
	if !s.executing {
		return
	}
	s.started.Do(func() {
		_ = s.host.Emit(s.ctx, events.Event{CallID: s.callID, Executing: &events.Executing{PID: pid}})
	})
}

// stdinReader is tools.Sink.Stdin.
func (s *callSink) stdinReader() io.ReadCloser {
	return s.stdin.reader()
}

// ask is tools.Sink.Ask: questions go to the host.
func (s *callSink) ask(ctx context.Context, q tools.Question) (string, error) {
	return s.host.Ask(ctx, s.callID, &events.Question{
		RequestID:          newID("q-"),
		Prompt:             q.Prompt,
		Choices:            q.Choices,
		Approval:           q.Approval,
		AuthorizeOperation: q.AuthorizeOperation,
		AuthorizeArguments: q.AuthorizeArguments,
	})
}
