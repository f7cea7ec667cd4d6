package executor

import (
	"context"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toold/toold/pkg/authz"
	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/events"
	"github.com/toold/toold/pkg/tools"
)

// callSink feeds a call's progress and output to its host. Its methods block
// while the client reads slowly (backpressure) and fail once the call's
// context ends. It is a tools.Asker: questions go to the host.
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
	stdin *inputPipe
	// x and req make the call's grants (MakeGrant).
	x   *Executor
	req *CallRequest
}

var (
	_ tools.Sink        = (*callSink)(nil)
	_ tools.Asker       = (*callSink)(nil)
	_ tools.DataSink    = (*callSink)(nil)
	_ tools.ProcessSink = (*callSink)(nil)
	_ tools.InputSink   = (*callSink)(nil)
	_ authz.GrantMaker  = (*callSink)(nil)
)

// CanGrant implements authz.GrantMaker.
func (s *callSink) CanGrant() bool { return s.x != nil && s.x.cfg.Granter != nil }

// MakeGrant implements authz.GrantMaker: the executor's one path for grants.
func (s *callSink) MakeGrant(scope authz.Scope, once bool, ttl time.Duration, by string) (authz.Grant, error) {
	if !s.CanGrant() {
		return authz.Grant{}, errdefs.New(errdefs.ErrUnavailable, "this toold keeps no grants")
	}
	return s.x.grant(s.ctx, s.req, scope, once, ttl, by)
}

// Progress implements tools.Sink.
func (s *callSink) Progress(msg string, fraction float64) error {
	if fraction > 1 {
		fraction = 1
	}
	if s.activity != nil {
		s.activity()
	}
	return s.host.Emit(s.ctx, events.Event{CallID: s.callID, Progress: &events.Progress{Message: msg, Fraction: fraction}})
}

// ProgressData implements tools.DataSink.
func (s *callSink) ProgressData(msg string, data map[string]any) error {
	if s.activity != nil {
		s.activity()
	}
	return s.host.Emit(s.ctx, events.Event{CallID: s.callID, Progress: &events.Progress{Message: msg, Fraction: -1, Data: data}})
}

// Output implements tools.Sink.
func (s *callSink) Output(stream tools.Stream, p []byte) error {
	s.outputBytes.Add(int64(len(p)))
	if s.activity != nil {
		s.activity()
	}
	return s.host.Output(s.ctx, s.callID, stream, p)
}

// Started implements tools.ProcessSink.
func (s *callSink) Started(pid int) {
	if !s.executing {
		return
	}
	s.started.Do(func() {
		_ = s.host.Emit(s.ctx, events.Event{CallID: s.callID, Executing: &events.Executing{PID: pid}})
	})
}

// Stdin implements tools.InputSink.
func (s *callSink) Stdin() io.ReadCloser {
	if s.stdin == nil {
		return nil
	}
	s.stdin.use()
	return s.stdin
}

// Ask implements tools.Asker.
func (s *callSink) Ask(ctx context.Context, q tools.Question) (string, error) {
	return s.host.Ask(ctx, s.callID, &events.Question{
		RequestID:          newID("q-"),
		Prompt:             q.Prompt,
		Choices:            q.Choices,
		Approval:           q.Approval,
		AuthorizeOperation: q.AuthorizeOperation,
		AuthorizeArguments: q.AuthorizeArguments,
	})
}
