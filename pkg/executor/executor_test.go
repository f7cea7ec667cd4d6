package executor_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/toold/toold/pkg/authz"
	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/events"
	"github.com/toold/toold/pkg/executor"
	"github.com/toold/toold/pkg/tools"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// recorder is a Host that keeps a call's events and cannot ask anyone.
type recorder struct {
	mu  sync.Mutex
	evs []events.Event
}

func (r *recorder) Emit(_ context.Context, ev events.Event) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.evs = append(r.evs, ev)
	return nil
}
func (r *recorder) Output(context.Context, string, tools.Stream, []byte) error { return nil }
func (r *recorder) Adopt(_ context.Context, _ string, _ tools.Stream, p []byte) error {
	tools.FreeBuffer(p)
	return nil
}
func (r *recorder) Approve(context.Context, string, *events.ApprovalRequest) (executor.Approval, error) {
	return executor.Approval{}, errdefs.New(errdefs.ErrDenied, "nobody to ask")
}
func (r *recorder) Ask(context.Context, string, *events.Question) (string, error) {
	return "", errdefs.New(errdefs.ErrDenied, "nobody to ask")
}

// block is a tool whose calls run until released.
type block struct {
	started chan struct{}
	release chan struct{}
}

func (b *block) Spec() tools.Spec {
	return tools.Spec{Name: "block", Source: "builtin", Operations: []tools.OperationSpec{{Name: "block", Risk: tools.RiskLow, Schema: []byte(`{"type":"object"}`)}}}
}
func (b *block) Describe(*tools.Call) tools.Effect { return tools.Effect{Display: "blocking"} }
func (b *block) Run(ctx context.Context, _ *tools.Call, _ *tools.Sink) (*tools.Result, error) {
	b.started <- struct{}{}
	select {
	case <-b.release:
		return &tools.Result{Text: "released"}, nil
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}

func newExecutor(t testing.TB, cfg executor.Config, ts ...tools.Tool) *executor.Executor {
	t.Helper()
	reg := tools.NewRegistry()
	if err := reg.Register(ts...); err != nil {
		t.Fatal(err)
	}
	cfg.Registry = reg
	if cfg.Authorizer == nil {
		cfg.Authorizer = authz.AllowAll{}
	}
	x, err := executor.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// Admission has one path and one wording for every transport: the
// daemon-wide limit, then draining; a shutdown whose grace runs out
// cancels what runs, and each call still gets its End.
func TestRunAdmissionAndShutdown(t *testing.T) {
	b := &block{started: make(chan struct{}, 2), release: make(chan struct{})}
	x := newExecutor(t, executor.Config{MaxCalls: 1}, b, &tools.Think{})
	ends := make(chan *events.End, 1)
	go func() {
		ends <- x.Run(context.Background(), &executor.CallRequest{CallID: "a", Name: "block"}, &recorder{})
	}()
	<-b.started

	end := x.Run(context.Background(), &executor.CallRequest{CallID: "b", Name: "think", ArgsJSON: `{"thought":"x"}`}, &recorder{})
	if !errors.Is(end.Err, errdefs.ErrResourceExhausted) {
		t.Fatalf("a call over the limit ended %v, want RESOURCE_EXHAUSTED", end.Err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	x.Shutdown(ctx) // the grace runs out: the blocked call is canceled
	if end := <-ends; !errors.Is(end.Err, errdefs.ErrCanceled) {
		t.Fatalf("the running call ended %v, want CANCELED", end.Err)
	}
	end = x.Run(context.Background(), &executor.CallRequest{CallID: "c", Name: "think", ArgsJSON: `{"thought":"x"}`}, &recorder{})
	if !errors.Is(end.Err, errdefs.ErrUnavailable) {
		t.Fatalf("a call after shutdown ended %v, want UNAVAILABLE", end.Err)
	}
	if _, err := x.Open(executor.OpenOptions{}); !errors.Is(err, errdefs.ErrUnavailable) {
		t.Fatalf("a stream after shutdown: %v, want UNAVAILABLE", err)
	}
}

// A stream's session: a call's events are logged with their seq, read by
// the attachment; CloseSend ends the reading once the calls ended.
func TestSessionLogAndCloseSend(t *testing.T) {
	x := newExecutor(t, executor.Config{}, &tools.Think{})
	defer x.Shutdown(context.Background())
	a, err := x.Open(executor.OpenOptions{ConversationID: "s"})
	if err != nil {
		t.Fatal(err)
	}
	if w := a.Welcome(); w.ConversationID != "s" || w.StreamID == "" || w.ConversationSecret == "" {
		t.Fatalf("welcome %+v", w)
	}
	if err := a.Submit(&executor.CallRequest{CallID: "t", Name: "think", ArgsJSON: `{"thought":"hi"}`}); err != nil {
		t.Fatal(err)
	}
	if err := a.Submit(&executor.CallRequest{Name: "think"}); !errors.Is(err, errdefs.ErrInvalidArgument) {
		t.Fatalf("a call without call_id: %v", err)
	}
	a.CloseSend()
	var got []events.Event
	for {
		evs, err := a.Read(context.Background(), nil, 0, 0)
		got = append(got, evs...)
		if errors.Is(err, events.ErrClosed) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	a.Close()
	if len(got) != 3 || got[0].Start == nil || got[1].Executing == nil || got[2].End == nil || got[2].End.Err != nil {
		t.Fatalf("events %+v", got)
	}
	for i, ev := range got {
		if ev.Seq != uint64(i+1) {
			t.Fatalf("event %d has seq %d", i, ev.Seq)
		}
	}
}

// A stream's running call is canceled when the shutdown grace runs out,
// and still ends with its End (CANCELED), as a call run outside a stream.
func TestShutdownCancelsStreamCalls(t *testing.T) {
	b := &block{started: make(chan struct{}, 2), release: make(chan struct{})}
	x := newExecutor(t, executor.Config{}, b)
	a, err := x.Open(executor.OpenOptions{ConversationID: "s"})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	for _, id := range []string{"a", "b"} {
		if err := a.Submit(&executor.CallRequest{CallID: id, Name: "block"}); err != nil {
			t.Fatal(err)
		}
	}
	<-b.started
	<-b.started
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	x.Shutdown(ctx) // returns once both calls ended
	ended := map[string]error{}
	readUntil(t, a, func(ev events.Event) bool {
		if ev.End != nil {
			ended[ev.CallID] = ev.End.Err
		}
		return len(ended) == 2
	})
	for id, err := range ended {
		if !errors.Is(err, errdefs.ErrCanceled) {
			t.Fatalf("call %s ended %v, want CANCELED", id, err)
		}
	}
}
