package executor_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/events"
	"github.com/toold/toold/pkg/executor"
	"github.com/toold/toold/pkg/tools"
)

// handoffs counts the calls of a receiver's handoff.
type handoffs struct{ n atomic.Int32 }

func (h *handoffs) handoff() { h.n.Add(1) }

// runInline starts the call on a and runs it as a stream's receiver does,
// with h's handoff.
func runInline(t *testing.T, a *executor.Attachment, h *handoffs, req *executor.CallRequest) (handed bool) {
	t.Helper()
	run, err := a.Start(req)
	if err != nil || run == nil {
		t.Fatalf("Start: %v (run %v)", err, run != nil)
	}
	return run(h.handoff)
}

// A Fast call runs on the receiving goroutine without a hand-off, and its
// Start, Executing and End reach the log together: the sender takes them
// in one read. A panic in a Fast tool's Run ends that call INTERNAL, on the
// receiver, which goes on with the next call.
func TestInlineFastCall(t *testing.T) {
	quick := &fnTool{name: "quick", fast: true, run: func(_ context.Context, c *tools.Call, _ *tools.Sink) (*tools.Result, error) {
		if in(c) == "panic" {
			panic("secret detail of a bug in a fast tool")
		}
		return &tools.Result{Text: "quick"}, nil
	}}
	// A budget no run reaches, however loaded the machine (the budget's
	// timer is TestInlineCancelAfterBudget's).
	x := newExecutor(t, executor.Config{InlineBudget: time.Hour}, quick)
	defer x.Shutdown(context.Background())
	a, err := x.Open(executor.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var h handoffs
	for _, tc := range []struct{ id, in string }{{"c1", "ok"}, {"c2", "panic"}, {"c3", "ok"}} {
		// The sender waits in Read while the call runs: it wakes once,
		// for all three events.
		read := make(chan []events.Event, 1)
		go func() {
			evs, err := a.Read(context.Background(), nil, 0, 0)
			if err != nil {
				t.Error(err)
			}
			read <- evs
		}()
		if runInline(t, a, &h, &executor.CallRequest{CallID: tc.id, Name: "quick", ArgsJSON: `{"in":"` + tc.in + `"}`}) {
			t.Fatalf("%s: the fast call handed receiving off", tc.id)
		}
		evs := <-read
		if len(evs) != 3 || evs[0].Start == nil || evs[1].Executing == nil || evs[2].End == nil ||
			evs[1].Seq != evs[0].Seq+1 || evs[2].Seq != evs[1].Seq+1 {
			t.Fatalf("%s: one read gave %+v; want its Start, Executing and End", tc.id, evs)
		}
		end := evs[2].End
		switch tc.in {
		case "panic":
			if !errors.Is(end.Err, errdefs.ErrInternal) || strings.Contains(end.Err.Error(), "secret detail") {
				t.Fatalf("the panicking fast call ended %v; want INTERNAL without the panic's text", end.Err)
			}
		default:
			if end.Err != nil || end.Result.Text != "quick" {
				t.Fatalf("%s ended %v, %+v", tc.id, end.Err, end.Result)
			}
		}
	}
	if h.n.Load() != 0 {
		t.Fatalf("handoff called %d times for fast calls", h.n.Load())
	}
}

// Instant calls run back to back on one receiver (which reuses a call's
// inline state once its End is logged) each log exactly their own Start,
// Executing and End, with their own results; a Fast call between them and
// a handed-off one change nothing of that.
func TestInstantCallsBackToBack(t *testing.T) {
	quick := &fnTool{name: "quick", fast: true}
	slow := &fnTool{name: "slow"} // not Fast: hands receiving off
	x := newExecutor(t, executor.Config{InlineBudget: time.Hour}, &tools.Think{}, quick, slow)
	defer x.Shutdown(context.Background())
	a, err := x.Open(executor.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var h handoffs
	names := []string{"think", "think", "quick", "think", "slow", "think", "think"}
	for i, name := range names {
		id := fmt.Sprintf("c%d", i)
		args := `{"thought":"thought ` + id + `"}`
		if name != "think" {
			args = `{}`
		}
		runInline(t, a, &h, &executor.CallRequest{CallID: id, Name: name, ArgsJSON: args})
		evs := readUntil(t, a, endOf(id))
		if len(evs) != 3 || evs[0].Start == nil || evs[1].Executing == nil || evs[2].End == nil {
			t.Fatalf("%s (%s): read %+v; want its Start, Executing and End", id, name, evs)
		}
		for _, ev := range evs {
			if ev.CallID != id {
				t.Fatalf("%s (%s): an event of %q among its own: %+v", id, name, ev.CallID, evs)
			}
		}
		want := "ran"
		if name == "think" {
			want = "thought " + id
		}
		if end := evs[2].End; end.Err != nil || end.Result.Text != want {
			t.Fatalf("%s (%s) ended %v, %+v; want %q", id, name, end.Err, end.Result, want)
		}
	}
	if h.n.Load() != 1 {
		t.Fatalf("handoff called %d times; want once, for the call that is not Fast", h.n.Load())
	}
}

// A call that is not Fast hands receiving off before its tool runs, and
// its Start is logged before it runs.
func TestInlineHandsOffBeforeASlowTool(t *testing.T) {
	var h handoffs
	var a *executor.Attachment
	slow := &fnTool{name: "slow", run: func(context.Context, *tools.Call, *tools.Sink) (*tools.Result, error) {
		if h.n.Load() != 1 {
			return nil, errors.New("the tool ran on the receiver")
		}
		// Its Start is readable now (else this read waits a minute).
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if evs, err := a.Read(ctx, nil, 1, 0); err != nil || len(evs) != 1 || evs[0].Start == nil {
			return nil, errors.New("the tool ran before its Start was logged")
		}
		return &tools.Result{Text: "slow"}, nil
	}}
	x := newExecutor(t, executor.Config{}, slow)
	defer x.Shutdown(context.Background())
	var err error
	if a, err = x.Open(executor.OpenOptions{}); err != nil {
		t.Fatal(err)
	}
	if !runInline(t, a, &h, &executor.CallRequest{CallID: "s", Name: "slow", ArgsJSON: `{}`}) {
		t.Fatal("run did not report the hand-off")
	}
	evs := readUntil(t, a, endOf("s"))
	if end := evs[len(evs)-1].End; end.Err != nil {
		t.Fatalf("the call ended %v", end.Err)
	}
	if h.n.Load() != 1 {
		t.Fatalf("handoff called %d times; want once", h.n.Load())
	}
}

// A Fast call that runs long anyway (a slow filesystem) hands receiving
// off after Config.InlineBudget, from a timer, so the stream still reads the
// client's Cancel: the call ends CANCELED, exactly once.
func TestInlineCancelAfterBudget(t *testing.T) {
	var h handoffs
	handed := make(chan struct{})
	stuck := &fnTool{name: "stuck", fast: true, run: func(ctx context.Context, _ *tools.Call, _ *tools.Sink) (*tools.Result, error) {
		<-ctx.Done()
		return nil, context.Cause(ctx)
	}}
	x := newExecutor(t, executor.Config{}, stuck)
	defer x.Shutdown(context.Background())
	a, err := x.Open(executor.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	run, err := a.Start(&executor.CallRequest{CallID: "k", Name: "stuck", ArgsJSON: `{}`})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan bool)
	go func() {
		done <- run(func() { h.handoff(); close(handed) })
	}()
	select {
	case <-handed: // the receiver moved on: it can read the Cancel
	case <-time.After(time.Minute):
		t.Fatal("a fast call that runs long never handed receiving off")
	}
	if err := a.Cancel("k", "stop"); err != nil {
		t.Fatal(err)
	}
	if !<-done {
		t.Fatal("run did not report the hand-off")
	}
	evs := readUntil(t, a, endOf("k"))
	if evs[0].Start == nil || !errors.Is(evs[len(evs)-1].End.Err, errdefs.ErrCanceled) {
		t.Fatalf("events %+v; want Start first and an End CANCELED", evs)
	}
	if h.n.Load() != 1 {
		t.Fatalf("handoff called %d times; want once", h.n.Load())
	}
}

// A Fast call that needs a person's approval hands receiving off before
// asking (the answer comes on the stream), and its Start goes before the
// question.
func TestInlineApproval(t *testing.T) {
	var h handoffs
	quick := &fnTool{name: "quick", fast: true}
	x := newExecutor(t, executor.Config{Authorizer: askFor("quick")}, quick)
	defer x.Shutdown(context.Background())
	a, err := x.Open(executor.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan bool)
	go func() { done <- runInline(t, a, &h, &executor.CallRequest{CallID: "q", Name: "quick", ArgsJSON: `{}`}) }()
	evs := readUntil(t, a, func(ev events.Event) bool { return ev.Approval != nil })
	if h.n.Load() != 1 || evs[0].Start == nil {
		t.Fatalf("asked with %d hand-offs, events %+v; want the hand-off and the Start first", h.n.Load(), evs)
	}
	if _, err := a.Approve(evs[len(evs)-1].Approval.ApprovalID, executor.Approval{Approve: true}); err != nil {
		t.Fatal(err)
	}
	if !<-done {
		t.Fatal("run did not report the hand-off")
	}
	evs = readUntil(t, a, endOf("q"))
	if end := evs[len(evs)-1].End; end.Err != nil || quick.ran() != 1 {
		t.Fatalf("ended %v after %d runs", end.Err, quick.ran())
	}
}

// The inline budget's timer is one per stream, re-armed lazily (see
// inlineWatch): a call that starts while it is still armed for calls that
// ended before is handed off all the same once it runs long, and so is a
// call begun on a second receiver of the same Attachment while the first
// one's call still runs on its receiver (that one gets a timer of its own).
// Each stuck call hands off exactly once and ends CANCELED.
func TestInlineBudgetSharedTimer(t *testing.T) {
	quick := &fnTool{name: "quick", fast: true, run: func(context.Context, *tools.Call, *tools.Sink) (*tools.Result, error) {
		return &tools.Result{Text: "quick"}, nil
	}}
	stuck := &fnTool{name: "stuck", fast: true, run: func(ctx context.Context, _ *tools.Call, _ *tools.Sink) (*tools.Result, error) {
		<-ctx.Done()
		return nil, context.Cause(ctx)
	}}
	x := newExecutor(t, executor.Config{InlineBudget: 20 * time.Millisecond}, quick, stuck)
	defer x.Shutdown(context.Background())
	a, err := x.Open(executor.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	sender := make(chan struct{})
	defer func() { cancel(); <-sender }()
	go func() { // the stream's sender
		defer close(sender)
		var buf []events.Event
		for {
			var err error
			if buf, err = a.Read(ctx, buf[:0], 0, 0); err != nil {
				return
			}
		}
	}()
	var q handoffs
	for i := range 20 {
		// Quick calls arm the timer; whether one hands off depends on
		// the machine's load, and is not the point.
		runInline(t, a, &q, &executor.CallRequest{CallID: "q" + string(rune('a'+i)), Name: "quick", ArgsJSON: `{}`})
	}
	stuckOn := func(id string) (*handoffs, chan struct{}, chan bool) {
		h := &handoffs{}
		handed := make(chan struct{})
		done := make(chan bool, 1)
		run, err := a.Start(&executor.CallRequest{CallID: id, Name: "stuck", ArgsJSON: `{}`})
		if err != nil || run == nil {
			t.Fatalf("Start %s: %v", id, err)
		}
		go func() { done <- run(func() { h.handoff(); close(handed) }) }()
		return h, handed, done
	}
	h1, handed1, done1 := stuckOn("s1")
	// A second receiver's call while s1 may still run on the first.
	h2, handed2, done2 := stuckOn("s2")
	for i, ch := range []chan struct{}{handed1, handed2} {
		select {
		case <-ch:
		case <-time.After(time.Minute):
			t.Fatalf("stuck call %d never handed receiving off", i+1)
		}
	}
	for _, id := range []string{"s1", "s2"} {
		if err := a.Cancel(id, "stop"); err != nil {
			t.Fatal(err)
		}
	}
	if !<-done1 || !<-done2 {
		t.Fatal("run did not report the hand-off")
	}
	if h1.n.Load() != 1 || h2.n.Load() != 1 {
		t.Fatalf("handoffs %d and %d; want one each", h1.n.Load(), h2.n.Load())
	}
}

// The inline budget's timer costs nothing on a call that cannot need it:
// an Instant call never arms it, and a Fast call that ends within its
// budget stops it as it leaves the receiver, so no timer fires between
// calls (a fire is a goroutine and a wake-up). While a Fast call runs the
// timer is armed (TestInlineBudgetSharedTimer: it still hands off).
func TestInlineTimerOnlyWhenTimed(t *testing.T) {
	var a *executor.Attachment
	armedInRun := map[string]bool{}
	var mu sync.Mutex
	record := func(name string) func(context.Context, *tools.Call, *tools.Sink) (*tools.Result, error) {
		return func(context.Context, *tools.Call, *tools.Sink) (*tools.Result, error) {
			mu.Lock()
			armedInRun[name] = a.InlineTimerArmed()
			mu.Unlock()
			return &tools.Result{Text: name}, nil
		}
	}
	instant := &fnTool{name: "instant", fast: true, instant: true, run: record("instant")}
	quick := &fnTool{name: "quick", fast: true, run: record("quick")}
	x := newExecutor(t, executor.Config{InlineBudget: time.Hour}, instant, quick)
	defer x.Shutdown(context.Background())
	var err error
	if a, err = x.Open(executor.OpenOptions{}); err != nil {
		t.Fatal(err)
	}
	var h handoffs
	for i, name := range []string{"instant", "quick", "instant", "quick", "quick", "instant"} {
		if runInline(t, a, &h, &executor.CallRequest{CallID: fmt.Sprint("c", i), Name: name, ArgsJSON: `{}`}) {
			t.Fatalf("call %d (%s) handed off", i, name)
		}
		mu.Lock()
		armed := armedInRun[name]
		mu.Unlock()
		if want := name == "quick"; armed != want {
			t.Fatalf("call %d (%s): timer armed while it ran = %v, want %v", i, name, armed, want)
		}
		if a.InlineTimerArmed() {
			t.Fatalf("call %d (%s) ended and left the timer armed", i, name)
		}
	}
}
