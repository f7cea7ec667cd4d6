package service_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/toold/toold/gen/toold/v1"
	"github.com/toold/toold/pkg/events"
	"github.com/toold/toold/pkg/executor"
	"github.com/toold/toold/pkg/tools"
)

// drop breaks the stream's connection and waits until its reader saw the
// end; it returns the highest seq received, the client's resume cursor.
func drop(t *testing.T, c *convo, conn *grpc.ClientConn) uint64 {
	t.Helper()
	conn.Close()
	select {
	case <-c.done:
	case <-time.After(10 * time.Second):
		t.Fatal("the stream did not end when its connection closed")
	}
	var last uint64
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range c.events {
		last = max(last, e.GetSeq())
	}
	return last
}

// resume opens a resuming stream, retrying while toold has not yet seen
// the dropped stream end (UNAVAILABLE), as a client does.
func resume(t *testing.T, h *harness, hello *pb.Hello) *convo {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		c := h.open(hello)
		evs := c.waitFor("welcome or refusal", func(evs []*pb.ServerEvent) bool {
			c.mu.Lock()
			defer c.mu.Unlock()
			return len(evs) > 0 || c.err != nil
		})
		if len(evs) > 0 {
			return c
		}
		if err := c.refused(); status.Code(err) != codes.Unavailable || time.Now().After(deadline) {
			t.Fatalf("resume refused: %v", err)
		}
	}
}

func resumeHello(w *pb.Welcome, after uint64) *pb.Hello {
	return &pb.Hello{ConversationId: w.GetConversationId(), ConversationSecret: w.GetConversationSecret(), ResumeAfterSeq: &after}
}

// output collects a call's stdout by offset across streams; it fails the
// test on a gap or a byte received twice.
type output struct {
	t    *testing.T
	next uint64
}

func (o *output) add(evs []*pb.ServerEvent, id string, skipSeq uint64) {
	o.t.Helper()
	for _, e := range ofCall(evs, id) {
		out := e.GetProgress().GetOutput()
		if out == nil || e.GetSeq() <= skipSeq {
			continue
		}
		if out.GetOffset() != o.next {
			o.t.Fatalf("chunk at offset %d, want %d (a gap or a byte twice)", out.GetOffset(), o.next)
		}
		for i, b := range out.GetData() {
			if want := byte('a' + (int(o.next)+i)%26); b != want {
				o.t.Fatalf("byte %d is %q, want %q", int(o.next)+i, b, want)
			}
		}
		o.next += uint64(len(out.GetData()))
	}
}

// A stream whose connection breaks while a call streams output: the call
// goes on, and a stream resuming after the last seq it got receives every
// byte after it exactly once, in order, then the End.
func TestResumeReplaysOutputExactlyOnce(t *testing.T) {
	const total = 8 << 20
	h := start(t, executor.Config{ResumeGrace: 30 * time.Second}, testTools(nil)...)
	c1, conn1 := h.openConn(&pb.Hello{ConversationId: "resume-bytes"})
	w := c1.welcome()
	if w.GetStreamId() == "" {
		t.Fatalf("welcome has no stream_id: %v", w)
	}
	c1.call("s", "spew", `{"bytes":8388608}`)
	c1.waitFor("1 MiB of output", func(evs []*pb.ServerEvent) bool {
		n := 0
		for _, e := range ofCall(evs, "s") {
			n += len(e.GetProgress().GetOutput().GetData())
		}
		return n >= 1<<20
	})
	last := drop(t, c1, conn1)
	got := &output{t: t}
	got.add(c1.events, "s", 0)
	if ends(c1.events, "s") != 0 || got.next >= total {
		t.Skipf("the call ended before the drop (%d bytes)", got.next)
	}

	c2 := resume(t, h, resumeHello(w, last))
	w2 := c2.welcome()
	if !w2.GetResumed() || w2.GetReplayFromSeq() != last+1 || w2.GetStreamId() != w.GetStreamId() || w2.GetConversationSecret() != w.GetConversationSecret() {
		t.Fatalf("resumed welcome = %v, want resumed from %d", w2, last+1)
	}
	res, mine := c2.end("s")
	if !res.GetSuccess() {
		t.Fatalf("result = %v", res)
	}
	got.add(mine, "s", 0)
	if got.next != total {
		t.Fatalf("received %d bytes across both streams, want %d", got.next, total)
	}
	for _, e := range mine {
		if e.GetSeq() <= last {
			t.Fatalf("event seq %d replayed, but the client had it (resumed after %d)", e.GetSeq(), last)
		}
	}
	if err := c2.closeSend(); err != nil {
		t.Fatal(err)
	}
}

// An approval asked before the drop is answered on the stream that
// resumes: asked again when the client had received it, replayed once when
// it had not.
func TestResumeAnswersPendingApproval(t *testing.T) {
	for _, tc := range []struct {
		name string
		// back is how many seqs before the approval the client resumes.
		back uint64
	}{
		{"client had the approval", 0},
		{"client missed the approval", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ran atomic.Int32
			h := start(t, executor.Config{Authorizer: &fakePolicy{}, ResumeGrace: 30 * time.Second}, guardedTool(&ran))
			c1, conn1 := h.openConn(&pb.Hello{ConversationId: "resume-approval"})
			w := c1.welcome()
			c1.call("a", "guarded", `{}`)
			asked := approvalOf(c1, "a")
			var seq uint64
			for _, e := range c1.events {
				if e.GetRequiresApproval() != nil {
					seq = e.GetSeq()
				}
			}
			drop(t, c1, conn1)
			if ran.Load() != 0 {
				t.Fatal("the call ran without approval")
			}
			c2 := resume(t, h, resumeHello(w, seq-tc.back))
			again := approvalOf(c2, "a")
			if again.GetApprovalId() != asked.GetApprovalId() {
				t.Fatalf("asked again with approval_id %q, want %q", again.GetApprovalId(), asked.GetApprovalId())
			}
			decide(c2, &pb.ApprovalDecision{ApprovalId: again.GetApprovalId(), Approve: true})
			res, mine := c2.end("a")
			if !res.GetSuccess() || ran.Load() != 1 {
				t.Fatalf("result = %v, ran %d times", res, ran.Load())
			}
			n := 0
			for _, e := range mine {
				if e.GetRequiresApproval() != nil {
					n++
				}
			}
			if n != 1 {
				t.Fatalf("the resumed stream got %d RequiresApproval, want 1", n)
			}
			if err := c2.closeSend(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// Two streams resuming the same dropped stream at once: one wins, the other
// is refused FAILED_PRECONDITION, and nothing of the call is lost.
func TestResumeRace(t *testing.T) {
	h := start(t, executor.Config{ResumeGrace: 30 * time.Second}, testTools(nil)...)
	c1, conn1 := h.openConn(&pb.Hello{ConversationId: "resume-race"})
	w := c1.welcome()
	c1.call("z", "sleep", `{"ms":300}`)
	c1.waitFor("start", func(evs []*pb.ServerEvent) bool { return len(ofCall(evs, "z")) > 0 })
	last := drop(t, c1, conn1)

	// Each resumer retries while toold has not seen the drop (UNAVAILABLE),
	// for a while: the one that wins holds the stream, the other keeps
	// being refused.
	var wg sync.WaitGroup
	results := make([]error, 2)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			deadline := time.Now().Add(2 * time.Second)
			for {
				c := h.open(resumeHello(w, last))
				evs := c.waitFor("welcome or refusal", func(evs []*pb.ServerEvent) bool {
					c.mu.Lock()
					defer c.mu.Unlock()
					return len(evs) > 0 || c.err != nil
				})
				if len(evs) > 0 && evs[0].GetWelcome().GetResumed() {
					results[i] = nil
					if res, _ := c.end("z"); !res.GetSuccess() {
						results[i] = status.Error(codes.Internal, "the winner's call failed")
					}
					return
				}
				err := c.refused()
				results[i] = err
				if status.Code(err) != codes.Unavailable || time.Now().After(deadline) {
					return
				}
			}
		}()
	}
	wg.Wait()
	won, lost := 0, 0
	for _, err := range results {
		switch status.Code(err) {
		case codes.OK:
			won++
		case codes.Unavailable, codes.FailedPrecondition:
			lost++
		default:
			t.Fatalf("a resume ended with %v", err)
		}
	}
	if won != 1 || lost != 1 {
		t.Fatalf("%d resumes won, %d lost (%v); want one each", won, lost, results)
	}
}

// Resuming needs the conversation's secret; and a dropped stream nobody
// resumes within the grace has its calls ended DISCONNECTED.
func TestResumeRefusedAndGraceExpiry(t *testing.T) {
	causes := make(chan error, 1)
	wait := simple("wait", `{"type":"object"}`, func(ctx context.Context, _ *tools.Call, _ *tools.Sink) (*tools.Result, error) {
		<-ctx.Done()
		causes <- context.Cause(ctx)
		return nil, ctx.Err()
	})
	h := start(t, executor.Config{ResumeGrace: 300 * time.Millisecond}, wait)
	c1, conn1 := h.openConn(&pb.Hello{ConversationId: "resume-expiry"})
	w := c1.welcome()
	c1.call("w", "wait", `{}`)
	c1.waitFor("start", func(evs []*pb.ServerEvent) bool { return len(ofCall(evs, "w")) > 0 })
	last := drop(t, c1, conn1)

	bad := resumeHello(w, last)
	bad.ConversationSecret = "0123456789abcdef0123456789abcdef"
	if err := h.open(bad).refused(); status.Code(err) != codes.PermissionDenied {
		t.Fatalf("resume with a wrong secret ended with %v, want PERMISSION_DENIED", err)
	}
	select {
	case cause := <-causes:
		if cause != executor.ErrClientGone {
			t.Fatalf("the call ended with cause %v, want ErrClientGone", cause)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the call was not ended after the grace")
	}
	// Once the grace ran out the stream cannot be resumed: refused as
	// having no dropped stream while the conversation is being forgotten,
	// then as an unknown conversation (which a client without its secret
	// cannot tell from a wrong secret).
	err := h.open(resumeHello(w, last)).refused()
	if c := status.Code(err); c != codes.FailedPrecondition && c != codes.PermissionDenied {
		t.Fatalf("resume after the grace ended with %v, want FAILED_PRECONDITION or PERMISSION_DENIED", err)
	}
}

// When the log's tail no longer holds what the client asks for, Welcome
// says from which seq the replay starts.
func TestResumeBeyondTail(t *testing.T) {
	var ran atomic.Int32
	h := start(t, executor.Config{Authorizer: &fakePolicy{}, ResumeGrace: 30 * time.Second, Log: events.LogConfig{TailEvents: 4}},
		append(testTools(nil), guardedTool(&ran))...)
	c1, conn1 := h.openConn(&pb.Hello{ConversationId: "resume-tail"})
	w := c1.welcome()
	for _, id := range []string{"e1", "e2", "e3", "e4"} {
		c1.call(id, "echo", `{"text":"x"}`)
		c1.end(id)
	}
	c1.call("g", "guarded", `{}`)
	approvalOf(c1, "g")
	drop(t, c1, conn1)
	c2 := resume(t, h, resumeHello(w, 0))
	w2 := c2.welcome()
	if !w2.GetResumed() || w2.GetReplayFromSeq() <= 1 {
		t.Fatalf("welcome = %v, want a replay starting after seq 1", w2)
	}
	a := approvalOf(c2, "g")
	decide(c2, &pb.ApprovalDecision{ApprovalId: a.GetApprovalId(), Approve: false})
	if res, _ := c2.end("g"); res.GetSuccess() {
		t.Fatalf("result = %v", res)
	}
}
