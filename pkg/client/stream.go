// Package client is toold's Go client for the ExecuteTool stream: a Stream
// that, when the connection breaks under it, resumes the conversation on a
// new stream (Hello.resume_after_seq) and goes on delivering events, each
// exactly once, as if nothing happened.
package client

import (
	"context"
	"errors"
	"io"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	pb "github.com/toold/toold/gen/toold/v1"
)

// Options tune a Stream. Zero values take defaults.
type Options struct {
	// ResumeFor is how long a Stream keeps trying to resume after its
	// stream broke (default 30 s; it should not exceed the server's resume
	// grace, 60 s by default). Negative: never resume.
	ResumeFor time.Duration
	// OnResume, when set, is called after each resume with the Welcome of
	// the new stream.
	OnResume func(*pb.Welcome)
}

// Stream is an ExecuteTool stream that survives a broken connection. Recv
// and Send may be called from different goroutines (one each).
type Stream struct {
	ctx    context.Context
	client pb.ToolServiceClient
	opts   Options

	mu       sync.Mutex
	s        pb.ToolService_ExecuteToolClient
	hello    *pb.Hello // the Hello to resume with (id, secret, stream id)
	last     uint64    // the highest seq received
	welcomed bool
	closed   bool // CloseSend was called
	resumes  int
}

// Open starts a stream and sends hello (nil: a new conversation).
func Open(ctx context.Context, c pb.ToolServiceClient, hello *pb.Hello, opts Options) (*Stream, error) {
	if opts.ResumeFor == 0 {
		opts.ResumeFor = 30 * time.Second
	}
	if hello == nil {
		hello = &pb.Hello{}
	}
	// The Stream keeps its own copy: it learns the conversation's id and
	// secret from Welcome.
	st := &Stream{ctx: ctx, client: c, opts: opts, hello: proto.Clone(hello).(*pb.Hello)}
	s, err := c.ExecuteTool(ctx)
	if err != nil {
		return nil, err
	}
	if err := s.Send(&pb.ClientMessage{Msg: &pb.ClientMessage_Hello{Hello: hello}}); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	st.s = s
	return st, nil
}

// Resumes says how many times the stream was resumed.
func (st *Stream) Resumes() int {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.resumes
}

// Send sends a message on the current stream. A message sent just before
// the connection broke may be lost; approvals and questions still waiting
// are asked again after a resume, so answer what Recv delivers.
func (st *Stream) Send(m *pb.ClientMessage) error {
	st.mu.Lock()
	s := st.s
	st.mu.Unlock()
	err := s.Send(m)
	if errors.Is(err, io.EOF) {
		return nil // the stream broke: Recv says why, or resumes
	}
	return err
}

// CloseSend closes the client side: running calls finish, then the stream
// ends (Recv returns io.EOF).
func (st *Stream) CloseSend() error {
	st.mu.Lock()
	st.closed = true
	s := st.s
	st.mu.Unlock()
	return s.CloseSend()
}

// Recv returns the next event. When the stream breaks (UNAVAILABLE: the
// connection reset), it resumes the conversation on a new stream and goes
// on; events the client already had are not delivered again, nor is the
// new stream's Welcome.
func (st *Stream) Recv() (*pb.ServerEvent, error) {
	for {
		st.mu.Lock()
		s := st.s
		st.mu.Unlock()
		ev, err := s.Recv()
		if err == nil {
			st.mu.Lock()
			w := ev.GetWelcome()
			switch {
			case w != nil && st.welcomed:
				st.mu.Unlock()
				continue // a resumed stream's
			case w != nil:
				st.welcomed = true
				st.hello.ConversationId = w.GetConversationId()
				st.hello.ConversationSecret = w.GetConversationSecret()
				st.hello.ResumeStreamId = w.GetStreamId()
			case ev.GetSeq() != 0 && ev.GetSeq() <= st.last && ev.GetKeepalive() == nil && ev.GetRejected() == nil:
				st.mu.Unlock()
				continue // had it before the break
			}
			st.last = max(st.last, ev.GetSeq())
			st.mu.Unlock()
			return ev, nil
		}
		if !st.resumable(err) {
			return nil, err
		}
		if rerr := st.resume(); rerr != nil {
			return nil, err
		}
	}
}

func (st *Stream) resumable(err error) bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.opts.ResumeFor > 0 && st.welcomed && status.Code(err) == codes.Unavailable && st.ctx.Err() == nil
}

// resume opens a new stream resuming after the last seq received, retrying
// while the server has not yet seen the old one end (UNAVAILABLE).
func (st *Stream) resume() error {
	deadline := time.Now().Add(st.opts.ResumeFor)
	backoff := 20 * time.Millisecond
	for {
		st.mu.Lock()
		after := st.last
		hello := &pb.Hello{
			ConversationId: st.hello.GetConversationId(), ConversationSecret: st.hello.GetConversationSecret(),
			ApprovalMode: st.hello.GetApprovalMode(), ClientName: st.hello.GetClientName(), OmitExecuting: st.hello.GetOmitExecuting(),
			ResumeAfterSeq: &after, ResumeStreamId: st.hello.GetResumeStreamId(),
		}
		closed := st.closed
		st.mu.Unlock()
		s, err := st.client.ExecuteTool(st.ctx)
		if err == nil {
			err = s.Send(&pb.ClientMessage{Msg: &pb.ClientMessage_Hello{Hello: hello}})
		}
		var first *pb.ServerEvent
		if err == nil {
			first, err = s.Recv()
		}
		if err == nil && first.GetWelcome().GetResumed() {
			if closed {
				_ = s.CloseSend()
			}
			st.mu.Lock()
			st.s = s
			st.resumes++
			st.mu.Unlock()
			if st.opts.OnResume != nil {
				st.opts.OnResume(first.GetWelcome())
			}
			return nil
		}
		if err == nil {
			err = status.Error(codes.Internal, "the resumed stream did not start with a resumed Welcome")
		}
		if status.Code(err) != codes.Unavailable || time.Now().After(deadline) {
			return err
		}
		select {
		case <-time.After(backoff):
		case <-st.ctx.Done():
			return st.ctx.Err()
		}
		backoff = min(2*backoff, time.Second)
	}
}
