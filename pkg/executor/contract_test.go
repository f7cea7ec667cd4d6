package executor_test

// The executor's contract, tested below its adapters: approvals, questions,
// panics, resuming a dropped stream and conversations, with a func-field
// fake Host (for Run) or a session's Attachment (for streams). The wire
// (codec, refusals, conversion, keepalives) is tested in pkg/service.

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toold/toold/pkg/authz"
	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/events"
	"github.com/toold/toold/pkg/executor"
	"github.com/toold/toold/pkg/tools"
)

// fakeHost is a Host whose answers are its func fields; a nil one answers
// DENIED ("nobody to ask"). It keeps every event emitted.
type fakeHost struct {
	approve func(ctx context.Context, callID string, req *events.ApprovalRequest) (executor.Approval, error)
	ask     func(ctx context.Context, callID string, q *events.Question) (string, error)

	mu  sync.Mutex
	evs []events.Event
	out []byte
}

func (h *fakeHost) Emit(_ context.Context, ev events.Event) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.evs = append(h.evs, ev)
	return nil
}

func (h *fakeHost) Adopt(ctx context.Context, id string, s tools.Stream, p []byte) error {
	defer tools.FreeBuffer(p)
	return h.Output(ctx, id, s, p)
}

func (h *fakeHost) Output(_ context.Context, _ string, _ tools.Stream, p []byte) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.out = append(h.out, p...)
	return nil
}

func (h *fakeHost) Approve(ctx context.Context, callID string, req *events.ApprovalRequest) (executor.Approval, error) {
	if h.approve == nil {
		return executor.Approval{}, errdefs.New(errdefs.ErrDenied, "nobody to ask")
	}
	return h.approve(ctx, callID, req)
}

func (h *fakeHost) Ask(ctx context.Context, callID string, q *events.Question) (string, error) {
	if h.ask == nil {
		return "", errdefs.New(errdefs.ErrDenied, "nobody to ask")
	}
	return h.ask(ctx, callID, q)
}

// authorizer is a func-field fake authz.Authorizer.
type authorizer func(ctx context.Context, r *authz.Request) (authz.Verdict, error)

func (f authorizer) Authorize(ctx context.Context, r *authz.Request) (authz.Verdict, error) {
	return f(ctx, r)
}

// askFor asks for every call of the named tool and allows the rest.
func askFor(tool string) authorizer {
	return func(_ context.Context, r *authz.Request) (authz.Verdict, error) {
		if r.Tool != tool {
			return authz.Verdict{Decision: authz.Allow, Risk: r.Risk}, nil
		}
		return authz.Verdict{Decision: authz.Ask, Risk: tools.RiskHigh, Reason: "asks always",
			Scopes: []authz.Scope{{ID: "once", Tool: tool, Operation: tool, Description: "this call only"}}}, nil
	}
}

// fnTool is a tool whose Run is a func field; it counts its runs.
type fnTool struct {
	name    string
	run     func(ctx context.Context, c *tools.Call, s *tools.Sink) (*tools.Result, error)
	fast    bool // tools.OperationSpec.Fast
	instant bool // tools.OperationSpec.Instant

	mu   sync.Mutex
	runs int
}

func (f *fnTool) Spec() tools.Spec {
	return tools.Spec{Name: f.name, Source: "builtin", Operations: []tools.OperationSpec{{Name: f.name, Risk: tools.RiskMedium, Schema: []byte(`{"type":"object"}`), Fast: f.fast, Instant: f.instant}}}
}
func (f *fnTool) Describe(*tools.Call) tools.Effect { return tools.Effect{Display: f.name} }
func (f *fnTool) Run(ctx context.Context, c *tools.Call, s *tools.Sink) (*tools.Result, error) {
	f.mu.Lock()
	f.runs++
	f.mu.Unlock()
	if f.run == nil {
		return &tools.Result{Text: "ran"}, nil
	}
	return f.run(ctx, c, s)
}

func (f *fnTool) ran() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.runs
}

// A zero value that would be unsafe refuses to construct: no registry, or
// no authorizer (nil is not allow-all).
func TestNewRefusesMissingParts(t *testing.T) {
	reg := tools.NewRegistry()
	for name, cfg := range map[string]executor.Config{
		"no registry":   {Authorizer: authz.AllowAll{}},
		"no authorizer": {Registry: reg},
	} {
		t.Run(name, func(t *testing.T) {
			x, err := executor.New(cfg)
			if x != nil || !errors.Is(err, errdefs.ErrInvalidArgument) {
				t.Fatalf("New: %v, %v; want a refusal", x, err)
			}
		})
	}
}

// An approval is asked through the Host with what the policy said, and
// the call runs only when a person approves it.
func TestApprovalThroughHost(t *testing.T) {
	tests := []struct {
		name    string
		approve func(ctx context.Context, callID string, req *events.ApprovalRequest) (executor.Approval, error)
		timeout time.Duration
		want    error
		msg     string
		runs    int
	}{
		{"approved", func(context.Context, string, *events.ApprovalRequest) (executor.Approval, error) {
			return executor.Approval{Approve: true, ScopeID: "once"}, nil
		}, 0, nil, "", 1},
		{"rejected with a reason", func(context.Context, string, *events.ApprovalRequest) (executor.Approval, error) {
			return executor.Approval{Reason: "not now"}, nil
		}, 0, errdefs.ErrRejected, "not now", 0},
		{"nobody to ask", nil, 0, errdefs.ErrDenied, "nobody to ask", 0},
		{"no answer in time", func(ctx context.Context, _ string, _ *events.ApprovalRequest) (executor.Approval, error) {
			<-ctx.Done()
			return executor.Approval{}, context.Cause(ctx)
		}, 20 * time.Millisecond, errdefs.ErrApprovalTimeout, "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tool := &fnTool{name: "risky"}
			x := newExecutor(t, executor.Config{Authorizer: askFor("risky"), ApprovalTimeout: tt.timeout}, tool)
			defer x.Shutdown(context.Background())
			var asked *events.ApprovalRequest
			h := &fakeHost{}
			if tt.approve != nil {
				h.approve = func(ctx context.Context, callID string, req *events.ApprovalRequest) (executor.Approval, error) {
					asked = req
					return tt.approve(ctx, callID, req)
				}
			}
			end := x.Run(context.Background(), &executor.CallRequest{CallID: "c", Name: "risky", ArgsJSON: `{}`}, h)
			if !errors.Is(end.Err, tt.want) || (tt.want == nil) != (end.Err == nil) {
				t.Fatalf("ended %v, want %v", end.Err, tt.want)
			}
			if tt.msg != "" && !strings.Contains(end.Err.Error(), tt.msg) {
				t.Fatalf("the error %q does not say %q", end.Err, tt.msg)
			}
			if tool.ran() != tt.runs {
				t.Fatalf("the tool ran %d times, want %d", tool.ran(), tt.runs)
			}
			if tt.approve != nil && (asked == nil || asked.Reason != "asks always" || asked.ApprovalID == "" || len(asked.Scopes) != 1) {
				t.Fatalf("the host was asked %+v", asked)
			}
		})
	}
}

// panicky is a tool that panics in the method its call names (argument
// "in"; ProgressResetsTimeout, which has no call, when progressBug): every
// method toold calls on a tool.
type panicky struct {
	fnTool
	progressBug bool
}

func in(c *tools.Call) string { s, _ := c.Args["in"].(string); return s }

func (p *panicky) Describe(c *tools.Call) tools.Effect {
	if in(c) == "Describe" {
		panic("secret detail of a bug in Describe")
	}
	return tools.Effect{Display: "panicky"}
}

func (p *panicky) Preview(_ context.Context, c *tools.Call) (string, error) {
	if in(c) == "Preview" {
		panic("secret detail of a bug in Preview")
	}
	return "", nil
}

func (p *panicky) StartsProcess(c *tools.Call) bool {
	if in(c) == "StartsProcess" {
		panic("secret detail of a bug in StartsProcess")
	}
	return false
}

func (p *panicky) ProgressResetsTimeout() bool {
	if p.progressBug {
		panic("secret detail of a bug in ProgressResetsTimeout")
	}
	return false
}

// A panic in any method the executor calls on a tool, or in the policy,
// ends that call INTERNAL with a generic message; nothing runs after a
// panic before Run, and the executor goes on serving.
func TestPanicEndsOnlyTheCall(t *testing.T) {
	tests := []struct {
		in     string
		policy bool // the policy panics
		runs   int
	}{
		{in: "Describe"},
		{in: "Preview"},
		{in: "StartsProcess"},
		{in: "ProgressResetsTimeout"},
		{in: "Run", runs: 1},
		{in: "nothing", policy: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			bad := &panicky{fnTool{name: "bad", run: func(_ context.Context, c *tools.Call, _ *tools.Sink) (*tools.Result, error) {
				if in(c) == "Run" {
					panic("secret detail of a bug in Run")
				}
				return &tools.Result{Text: "ran"}, nil
			}}, tt.in == "ProgressResetsTimeout"}
			// The policy asks for "bad", so that its Preview runs too.
			pol := askFor("bad")
			if tt.policy {
				pol = func(ctx context.Context, r *authz.Request) (authz.Verdict, error) {
					if r.Tool == "bad" {
						panic("secret detail of a bug in the policy")
					}
					return askFor("bad")(ctx, r)
				}
			}
			x := newExecutor(t, executor.Config{Authorizer: pol}, bad, &tools.Think{})
			defer x.Shutdown(context.Background())
			h := &fakeHost{approve: func(context.Context, string, *events.ApprovalRequest) (executor.Approval, error) {
				return executor.Approval{Approve: true, ScopeID: "once"}, nil
			}}
			end := x.Run(context.Background(), &executor.CallRequest{CallID: "p", Name: "bad", ArgsJSON: `{"in":"` + tt.in + `"}`}, h)
			if !errors.Is(end.Err, errdefs.ErrInternal) || strings.Contains(end.Err.Error(), "secret detail") {
				t.Fatalf("a panicking call ended %v, want INTERNAL without the panic's text", end.Err)
			}
			if bad.ran() != tt.runs {
				t.Fatalf("the tool ran %d times after a panic in %s, want %d", bad.ran(), tt.in, tt.runs)
			}
			end = x.Run(context.Background(), &executor.CallRequest{CallID: "t", Name: "think", ArgsJSON: `{"thought":"x"}`}, &fakeHost{})
			if end.Err != nil {
				t.Fatalf("the next call: %v", end.Err)
			}
		})
	}
}

// An Instant operation (tools.OperationSpec.Instant) runs without a
// timeout of its own and with a sink without capabilities: its context
// (the call's) has no deadline, where a Fast one's ends at the call's
// timeout, and its sink's fields are nil.
func TestInstantRunsWithoutTimeout(t *testing.T) {
	for _, tt := range []struct {
		name          string
		fast, instant bool
		deadline      bool
	}{
		{"instant", false, true, false},
		{"fast", true, false, true},
		{"plain", false, false, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var hasDeadline, capable bool
			tool := &fnTool{name: "op", fast: tt.fast, instant: tt.instant, run: func(ctx context.Context, _ *tools.Call, s *tools.Sink) (*tools.Result, error) {
				_, hasDeadline = ctx.Deadline()
				capable = s.ProgressFunc != nil || s.OutputFunc != nil || s.Ask != nil || s.Authorize != nil
				_ = s.Progress("dropped when nobody watches", 0.5) // never fails, capable or not
				return &tools.Result{Text: "ran"}, nil
			}}
			x := newExecutor(t, executor.Config{Authorizer: authz.AllowAll{}, DefaultTimeout: time.Hour}, tool)
			defer x.Shutdown(context.Background())
			end := x.Run(context.Background(), &executor.CallRequest{CallID: "c", Name: "op"}, &fakeHost{})
			if end.Err != nil || tool.ran() != 1 {
				t.Fatalf("the call ended %v after %d runs, want OK after 1", end.Err, tool.ran())
			}
			if hasDeadline != tt.deadline {
				t.Fatalf("the tool's context has a deadline: %v, want %v", hasDeadline, tt.deadline)
			}
			if capable == tt.instant {
				t.Fatalf("the tool's sink has capabilities: %v; an Instant operation's has none, others' have them", capable)
			}
		})
	}
}

// readUntil reads a's events until one matches, failing after a minute.
func readUntil(t *testing.T, a *executor.Attachment, match func(events.Event) bool) (got []events.Event) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for {
		evs, err := a.Read(ctx, nil, 0, 0)
		for _, ev := range evs {
			got = append(got, ev)
			if match(ev) {
				return got
			}
		}
		if err != nil {
			t.Fatalf("read: %v (events so far %+v)", err, got)
		}
	}
}

func endOf(id string) func(events.Event) bool {
	return func(ev events.Event) bool { return ev.CallID == id && ev.End != nil }
}

// Once the client closed its side of the stream, nobody can answer a
// question: a call waiting for an approval then, or asking after, ends
// DENIED saying why, without running, and the session's log ends (the
// stream with it). grpcurl closes its side at EOF; see also the daemon's
// TestGrpcurlReadmeConversation.
func TestCloseSendDeniesQuestions(t *testing.T) {
	for _, when := range []string{"while waiting", "before asking"} {
		t.Run(when, func(t *testing.T) {
			tool := &fnTool{name: "risky"}
			gate := make(chan struct{})
			x := newExecutor(t, executor.Config{Authorizer: authorizer(func(ctx context.Context, r *authz.Request) (authz.Verdict, error) {
				<-gate
				return askFor("risky")(ctx, r)
			})}, tool)
			defer x.Shutdown(context.Background())
			a, err := x.Open(executor.OpenOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if err := a.Submit(&executor.CallRequest{CallID: "c", Name: "risky", ArgsJSON: `{}`}); err != nil {
				t.Fatal(err)
			}
			if when == "while waiting" {
				close(gate)
				readUntil(t, a, func(ev events.Event) bool { return ev.Approval != nil })
				a.CloseSend()
			} else {
				a.CloseSend()
				close(gate)
			}
			evs := readUntil(t, a, endOf("c"))
			end := evs[len(evs)-1].End
			if !errors.Is(end.Err, errdefs.ErrDenied) || !strings.Contains(end.Err.Error(), "closed its side of the stream") {
				t.Fatalf("ended %v, want DENIED saying the client closed its side", end.Err)
			}
			if tool.ran() != 0 {
				t.Fatal("the tool ran without an approval")
			}
			if _, err := a.Read(context.Background(), nil, 0, 0); !errors.Is(err, events.ErrClosed) {
				t.Fatalf("the log did not end: %v", err)
			}
			a.Close()
		})
	}
}

// Draining (toold shuts down) is not the client closing its side: a call
// waiting for an approval still gets the client's answer.
func TestDrainKeepsQuestionsOpen(t *testing.T) {
	tool := &fnTool{name: "risky"}
	x := newExecutor(t, executor.Config{Authorizer: askFor("risky")}, tool)
	defer x.Shutdown(context.Background())
	a, err := x.Open(executor.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Submit(&executor.CallRequest{CallID: "c", Name: "risky", ArgsJSON: `{}`}); err != nil {
		t.Fatal(err)
	}
	evs := readUntil(t, a, func(ev events.Event) bool { return ev.Approval != nil })
	a.Drain()
	if _, err := a.Approve(evs[len(evs)-1].Approval.ApprovalID, executor.Approval{Approve: true}); err != nil {
		t.Fatal(err)
	}
	evs = readUntil(t, a, endOf("c"))
	if end := evs[len(evs)-1].End; end.Err != nil || tool.ran() != 1 {
		t.Fatalf("ended %v after %d runs, want success", end.Err, tool.ran())
	}
	a.Close()
}

// A stream that drops leaves its calls running for the grace; a stream
// that resumes with the conversation's secret reads what it missed, is
// asked again what still waits, and its answer reaches the call.
func TestResumeAsksAgainAndReplays(t *testing.T) {
	tool := &fnTool{name: "risky"}
	x := newExecutor(t, executor.Config{Authorizer: askFor("risky"), ResumeGrace: time.Minute}, tool)
	defer x.Shutdown(context.Background())
	a, err := x.Open(executor.OpenOptions{ConversationID: "conv"})
	if err != nil {
		t.Fatal(err)
	}
	w := a.Welcome()
	if err := a.Submit(&executor.CallRequest{CallID: "c", Name: "risky", ArgsJSON: `{}`}); err != nil {
		t.Fatal(err)
	}
	evs := readUntil(t, a, func(ev events.Event) bool { return ev.Approval != nil })
	first := evs[len(evs)-1]
	a.Detach()

	if _, err := x.Open(executor.OpenOptions{ConversationID: "conv", Secret: "guess", Resume: true}); err == nil {
		t.Fatalf("resume with a wrong secret: %v", err)
	}
	b, err := x.Open(executor.OpenOptions{ConversationID: "conv", Secret: w.ConversationSecret, Resume: true, ResumeAfter: first.Seq})
	if err != nil {
		t.Fatal(err)
	}
	if bw := b.Welcome(); !bw.Resumed || bw.StreamID != w.StreamID {
		t.Fatalf("welcome %+v", bw)
	}
	evs = readUntil(t, b, func(ev events.Event) bool { return ev.Approval != nil })
	again := evs[len(evs)-1]
	if again.Seq <= first.Seq || again.Approval.ApprovalID != first.Approval.ApprovalID {
		t.Fatalf("asked again %+v after %+v", again, first)
	}
	if _, err := b.Approve(again.Approval.ApprovalID, executor.Approval{Approve: true}); err != nil {
		t.Fatal(err)
	}
	b.CloseSend()
	evs = readUntil(t, b, endOf("c"))
	if end := evs[len(evs)-1].End; end.Err != nil || tool.ran() != 1 {
		t.Fatalf("ended %v after %d runs", end.Err, tool.ran())
	}
	b.Close()

	// A second resume is refused: the session ended.
	if _, err := x.Open(executor.OpenOptions{ConversationID: "conv", Secret: w.ConversationSecret, Resume: true}); err == nil {
		t.Fatal("resumed a session that ended")
	}
}

// A conversation is joined only with its secret; a refused join changes
// nothing (the conversation's holder keeps it).
func TestConversationSecret(t *testing.T) {
	x := newExecutor(t, executor.Config{}, &tools.Think{})
	defer x.Shutdown(context.Background())
	a, err := x.Open(executor.OpenOptions{ConversationID: "mine"})
	if err != nil {
		t.Fatal(err)
	}
	secret := a.Welcome().ConversationSecret
	if _, err := x.Open(executor.OpenOptions{ConversationID: "mine", Secret: "guess"}); err == nil {
		t.Fatal("joined with a wrong secret")
	}
	b, err := x.Open(executor.OpenOptions{ConversationID: "mine", Secret: secret})
	if err != nil {
		t.Fatalf("join with the secret: %v", err)
	}
	for _, s := range []*executor.Attachment{a, b} {
		s.CloseSend()
		if _, err := s.Read(context.Background(), nil, 0, 0); !errors.Is(err, events.ErrClosed) {
			t.Fatalf("read: %v", err)
		}
		s.Close()
	}
}
