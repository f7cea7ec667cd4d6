package service_test

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	pb "github.com/toold/toold/gen/toold/v1"
	"github.com/toold/toold/pkg/authz"
	"github.com/toold/toold/pkg/executor"
	"github.com/toold/toold/pkg/tools"
	"github.com/toold/toold/pkg/tools/collab"
)

// fakePolicy asks for every call of the "guarded" tool and records grants.
type fakePolicy struct {
	mu     sync.Mutex
	grants []authz.Grant
}

func (f *fakePolicy) Authorize(_ context.Context, r *authz.Request) (authz.Verdict, error) {
	if r.Tool != "guarded" {
		return authz.Verdict{Decision: authz.Allow, Risk: r.Risk}, nil
	}
	return authz.Verdict{
		Decision: authz.Ask, Reason: "guarded needs approval", Rule: "ask-guarded", Risk: tools.RiskHigh,
		Summary: "Run guarded",
		Scopes: []authz.Scope{
			{ID: "once", Tool: "guarded", Operation: "guarded", Description: "this call only"},
			{ID: "conv", Conversation: true, Tool: "guarded", Operation: "guarded", PathPrefix: "src/", TTL: 300 * time.Second, Description: "guarded under src/ for 5m"},
		},
	}, nil
}

func (f *fakePolicy) Grant(conv string, s authz.Scope, once bool, ttl time.Duration, by string) (authz.Grant, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	g := authz.Grant{ID: "g", ConversationID: conv, Scope: s, Once: once, ExpiresAt: time.Now().Add(ttl), GrantedBy: by}
	f.grants = append(f.grants, g)
	return g, nil
}
func (f *fakePolicy) Grants(string) []authz.Grant { return nil }
func (f *fakePolicy) Revoke(string) bool          { return false }

func guardedTool(ran *atomic.Int32) tools.Tool {
	return simple("guarded", `{"type":"object"}`, func(context.Context, *tools.Call, *tools.Sink) (*tools.Result, error) {
		ran.Add(1)
		return &tools.Result{Text: "did it"}, nil
	})
}

// approvalOf waits for the call's RequiresApproval.
func approvalOf(c *convo, id string) *pb.RequiresApproval {
	evs := c.waitFor("approval of "+id, func(evs []*pb.ServerEvent) bool {
		for _, e := range ofCall(evs, id) {
			if e.GetRequiresApproval() != nil {
				return true
			}
		}
		return false
	})
	for _, e := range ofCall(evs, id) {
		if a := e.GetRequiresApproval(); a != nil {
			return a
		}
	}
	return nil
}

func decide(c *convo, d *pb.ApprovalDecision) {
	c.send(&pb.ClientMessage{Msg: &pb.ClientMessage_Approval{Approval: d}})
}

func TestApprovalFlows(t *testing.T) {
	var ran atomic.Int32
	pol := &fakePolicy{}
	h := start(t, executor.Config{Authorizer: pol, ApprovalTimeout: 0}, guardedTool(&ran), &tools.Think{})

	t.Run("approve once", func(t *testing.T) {
		ran.Store(0)
		c := h.open(&pb.Hello{ConversationId: "c1", ClientName: "tester"})
		c.call("a", "guarded", `{}`)
		a := approvalOf(c, "a")
		if a.GetReason() != "guarded needs approval" || a.GetRule() != "ask-guarded" || a.GetRisk() != pb.RiskLevel_RISK_LEVEL_HIGH ||
			len(a.GetScopes()) != 2 || a.GetEffect().GetSummary() != "Run guarded" {
			t.Fatalf("approval = %v", a)
		}
		if ran.Load() != 0 {
			t.Fatal("the tool ran before the approval")
		}
		decide(c, &pb.ApprovalDecision{ApprovalId: a.GetApprovalId(), Approve: true})
		if res, _ := c.end("a"); !res.GetSuccess() || ran.Load() != 1 {
			t.Fatalf("approved call: %v (ran %d)", res, ran.Load())
		}
		if len(pol.grants) != 0 {
			t.Fatalf("approve once recorded a grant: %v", pol.grants)
		}
	})

	t.Run("approve for the conversation", func(t *testing.T) {
		c := h.open(&pb.Hello{ConversationId: "c2", ClientName: "tester"})
		c.call("b", "guarded", `{}`)
		a := approvalOf(c, "b")
		decide(c, &pb.ApprovalDecision{ApprovalId: a.GetApprovalId(), Approve: true, ScopeId: "conv", Ttl: durationpb.New(time.Minute)})
		if res, _ := c.end("b"); !res.GetSuccess() {
			t.Fatalf("%v", res)
		}
		pol.mu.Lock()
		defer pol.mu.Unlock()
		if len(pol.grants) != 1 {
			t.Fatalf("grants = %v", pol.grants)
		}
		g := pol.grants[0]
		if g.ConversationID != "c2" || g.Scope.PathPrefix != "src/" || g.Once || g.GrantedBy != "tester" ||
			time.Until(g.ExpiresAt) > time.Minute || time.Until(g.ExpiresAt) < 50*time.Second {
			t.Fatalf("grant = %+v: want conversation c2, path prefix src/, ttl shortened to 1m", g)
		}
	})

	t.Run("deny with reason", func(t *testing.T) {
		ran.Store(0)
		c := h.open(nil)
		c.call("d", "guarded", `{}`)
		a := approvalOf(c, "d")
		decide(c, &pb.ApprovalDecision{ApprovalId: a.GetApprovalId(), Approve: false, Reason: "not on a Friday"})
		res, _ := c.end("d")
		if res.GetError().GetCode() != pb.ErrorCode_ERROR_CODE_REJECTED_BY_USER || !strings.Contains(res.GetError().GetMessage(), "not on a Friday") || ran.Load() != 0 {
			t.Fatalf("%v (ran %d)", res, ran.Load())
		}
	})

	t.Run("cancel while waiting", func(t *testing.T) {
		ran.Store(0)
		c := h.open(nil)
		c.call("x", "guarded", `{}`)
		approvalOf(c, "x")
		c.send(&pb.ClientMessage{Msg: &pb.ClientMessage_Cancel{Cancel: &pb.Cancel{CallId: "x"}}})
		res, _ := c.end("x")
		if res.GetError().GetCode() != pb.ErrorCode_ERROR_CODE_CANCELED || ran.Load() != 0 {
			t.Fatalf("%v (ran %d)", res, ran.Load())
		}
	})

	t.Run("answers only its own call", func(t *testing.T) {
		ran.Store(0)
		c := h.open(nil)
		c.call("p", "guarded", `{}`)
		c.call("q", "guarded", `{}`)
		ap, aq := approvalOf(c, "p"), approvalOf(c, "q")
		// An id that is not an approval id (another call's id) is refused.
		decide(c, &pb.ApprovalDecision{ApprovalId: "q", Approve: true})
		// A scope not offered is refused and the call keeps waiting.
		decide(c, &pb.ApprovalDecision{ApprovalId: ap.GetApprovalId(), Approve: true, ScopeId: "everything"})
		evs := c.waitFor("two rejections", func(evs []*pb.ServerEvent) bool {
			n := 0
			for _, e := range evs {
				if e.GetRejected() != nil {
					n++
				}
			}
			return n == 2
		})
		if ran.Load() != 0 || ends(evs, "p")+ends(evs, "q") != 0 {
			t.Fatal("a refused decision let a call proceed or end")
		}
		decide(c, &pb.ApprovalDecision{ApprovalId: aq.GetApprovalId(), Approve: false, Reason: "no"})
		decide(c, &pb.ApprovalDecision{ApprovalId: ap.GetApprovalId(), Approve: true})
		rp, _ := c.end("p")
		rq, _ := c.end("q")
		if !rp.GetSuccess() || rq.GetError().GetCode() != pb.ErrorCode_ERROR_CODE_REJECTED_BY_USER || ran.Load() != 1 {
			t.Fatalf("p=%v q=%v ran=%d", rp, rq, ran.Load())
		}
		// A second answer to an answered approval is refused.
		decide(c, &pb.ApprovalDecision{ApprovalId: ap.GetApprovalId(), Approve: true})
		c.waitFor("third rejection", func(evs []*pb.ServerEvent) bool {
			n := 0
			for _, e := range evs {
				if e.GetRejected() != nil {
					n++
				}
			}
			return n == 3
		})
	})
}

func TestApprovalTimeoutAndDisconnect(t *testing.T) {
	var ran atomic.Int32
	h := start(t, executor.Config{Authorizer: &fakePolicy{}, ApprovalTimeout: 100 * time.Millisecond}, guardedTool(&ran))
	c := h.open(nil)
	c.call("t", "guarded", `{}`)
	a := approvalOf(c, "t")
	if a.GetExpiresAt() == nil {
		t.Fatal("no expires_at with an approval timeout")
	}
	res, _ := c.end("t")
	if res.GetError().GetCode() != pb.ErrorCode_ERROR_CODE_APPROVAL_TIMEOUT || ran.Load() != 0 {
		t.Fatalf("%v", res)
	}

	h2 := start(t, executor.Config{Authorizer: &fakePolicy{}}, guardedTool(&ran))
	c2 := h2.open(nil)
	c2.call("gone", "guarded", `{}`)
	approvalOf(c2, "gone")
	c2.cancel()
	// The call ends (its span says DISCONNECTED) without having run.
	waitUntil(t, func() bool {
		for _, sp := range h2.spans.Ended() {
			for _, kv := range sp.Attributes() {
				if kv.Key == "toold.error_code" && kv.Value.AsString() == "ERROR_CODE_DISCONNECTED" {
					return true
				}
			}
		}
		return false
	})
	if ran.Load() != 0 {
		t.Fatal("the tool ran after its stream ended while waiting")
	}
}

// user_collaboration asks through the stream; the Input answers it.
func TestQuestionThroughStream(t *testing.T) {
	pol := &fakePolicy{}
	h := start(t, executor.Config{Authorizer: pol}, &collab.UserCollaboration{})
	c := h.open(&pb.Hello{ConversationId: "qc"})
	c.call("u", "ask_user", `{"prompt":"May I write to /etc/motd?","require_approval":true,"authorize_operation":"file_operations.write_file","authorize_arguments":{"path":"/etc/motd","content":"hi"}}`)
	evs := c.waitFor("question", func(evs []*pb.ServerEvent) bool {
		for _, e := range ofCall(evs, "u") {
			if e.GetInputRequired() != nil {
				return true
			}
		}
		return false
	})
	var q *pb.InputRequired
	for _, e := range ofCall(evs, "u") {
		if q = e.GetInputRequired(); q != nil {
			break
		}
	}
	if !q.GetApproval() || q.GetAuthorizeOperation() != "file_operations.write_file" {
		t.Fatalf("question = %v", q)
	}
	// Wrong request id: refused; the call keeps waiting.
	c.send(&pb.ClientMessage{Msg: &pb.ClientMessage_Input{Input: &pb.Input{CallId: "u", RequestId: "nope", Payload: &pb.Input_Text{Text: "yes"}}}})
	c.send(&pb.ClientMessage{Msg: &pb.ClientMessage_Input{Input: &pb.Input{CallId: "u", RequestId: q.GetRequestId(), Payload: &pb.Input_Text{Text: "yes"}}}})
	res, _ := c.end("u")
	if !res.GetSuccess() || !strings.Contains(res.GetContent()[0].GetText(), "approved") {
		t.Fatalf("%v", res)
	}
	pol.mu.Lock()
	defer pol.mu.Unlock()
	if len(pol.grants) != 1 || !pol.grants[0].Once || pol.grants[0].ConversationID != "qc" {
		t.Fatalf("grants = %+v", pol.grants)
	}
}

// progressTool reports progress every tick for total, then succeeds.
type progressTool struct {
	*fakeTool
}

func (progressTool) ProgressResetsTimeout() bool { return true }

func newProgressTool(name string, tick, total time.Duration) tools.Tool {
	return progressTool{simple(name, `{"type":"object"}`, func(ctx context.Context, _ *tools.Call, s *tools.Sink) (*tools.Result, error) {
		deadline := time.Now().Add(total)
		for time.Now().Before(deadline) {
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(tick):
			}
			if tick < total {
				_ = s.Progress("working", -1)
			}
		}
		return &tools.Result{Text: "finished"}, nil
	})}
}

// For a ProgressTimed tool the call's timeout counts time without progress;
// the server's maximum caps the whole call.
func TestProgressResetsTimeout(t *testing.T) {
	h := start(t, executor.Config{MaxTimeout: 600 * time.Millisecond},
		newProgressTool("chatty", 20*time.Millisecond, 300*time.Millisecond),
		newProgressTool("silent", 300*time.Millisecond, 300*time.Millisecond),
		newProgressTool("endless", 20*time.Millisecond, time.Hour),
	)
	c := h.open(nil)
	c.callTimeout("chatty", "chatty", `{}`, 100*time.Millisecond)
	if res, _ := c.end("chatty"); !res.GetSuccess() {
		t.Fatalf("a call making progress outlived its timeout: %v", res)
	}
	c.callTimeout("silent", "silent", `{}`, 100*time.Millisecond)
	res, _ := c.end("silent")
	if res.GetError().GetCode() != pb.ErrorCode_ERROR_CODE_TIMEOUT || !strings.Contains(res.GetError().GetMessage(), "no progress") {
		t.Fatalf("silent call: %v", res)
	}
	began := time.Now()
	c.callTimeout("endless", "endless", `{}`, 100*time.Millisecond)
	res, _ = c.end("endless")
	if res.GetError().GetCode() != pb.ErrorCode_ERROR_CODE_TIMEOUT || time.Since(began) > 30*time.Second { // capped at 1s; the tool runs forever
		t.Fatalf("endless call not capped by the maximum: %v after %v", res, time.Since(began))
	}
}
