package service

import (
	"context"
	"sync/atomic"

	"github.com/toold/toold/pkg/events"
	"github.com/toold/toold/pkg/tools"
)

// callSink feeds a call's progress and output into its stream's queue. Its
// methods block while the queue is full (backpressure) and fail once the
// call's context ends.
type callSink struct {
	st          *stream
	ctx         context.Context
	callID      string
	outputBytes atomic.Int64
}

var _ tools.Sink = (*callSink)(nil)

// Progress implements tools.Sink.
func (s *callSink) Progress(msg string, fraction float64) error {
	if fraction > 1 {
		fraction = 1
	}
	return s.st.q.Push(s.ctx, events.Event{CallID: s.callID, Progress: &events.Progress{Message: msg, Fraction: fraction}})
}

// Output implements tools.Sink.
func (s *callSink) Output(stream tools.Stream, p []byte) error {
	s.outputBytes.Add(int64(len(p)))
	return s.st.q.Output(s.ctx, s.callID, stream, p)
}
