package service

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"log/slog"
	"sync"
	"time"

	"google.golang.org/grpc/status"

	pb "github.com/toold/toold/gen/toold/v1"
	"github.com/toold/toold/pkg/authz"
	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/events"
)

// stream is the state of one ExecuteTool stream. The receiver goroutine
// handles client messages, one goroutine per call runs the pipeline, and one
// sender goroutine is the only one calling Send, fed by the queue.
type stream struct {
	srv *Server
	ctx context.Context // ends when the stream ends; its cause says why
	q   *events.Queue
	log *slog.Logger

	mu             sync.Mutex
	started        bool // a first message was handled
	accepting      bool // new calls are accepted
	calls          map[string]*runningCall
	conversationID string
	mode           authz.Mode
	omitExecuting  bool
	wg             sync.WaitGroup // running calls
}

type runningCall struct {
	cancel context.CancelCauseFunc
}

// ExecuteTool implements pb.ToolServiceServer. See the proto for the
// contract; in short: the client's CloseSend lets running calls finish and
// then ends the stream with OK; a canceled stream cancels every call; on
// shutdown the stream ends with OK once its calls have ended.
func (s *Server) ExecuteTool(ss pb.ToolService_ExecuteToolServer) error {
	ctx, cancel := context.WithCancelCause(ss.Context())
	defer cancel(errStreamEnded)
	st := &stream{
		srv:       s,
		ctx:       ctx,
		q:         events.NewQueue(s.cfg.Queue),
		log:       s.cfg.Logger,
		accepting: true,
		calls:     map[string]*runningCall{},
		mode:      s.cfg.Mode,
	}
	sendDone := make(chan error, 1)
	go func() { sendDone <- st.sendLoop(ss) }()
	recvDone := make(chan error, 1)
	// The receiver may outlive this handler by a moment: Recv returns once
	// the handler has returned and gRPC has ended the stream.
	go func() { recvDone <- st.recvLoop(ss) }()

	var result error
	select {
	case err := <-recvDone:
		if err != nil {
			// The client canceled the stream or the connection is gone.
			cancel(errStreamEnded)
			result = err
		}
	case err := <-sendDone:
		cancel(errStreamEnded)
		st.stopAccepting()
		st.wg.Wait()
		return sendError(err)
	case <-s.draining:
	}
	st.stopAccepting()
	callsDone := make(chan struct{})
	go func() { st.wg.Wait(); close(callsDone) }()
	select {
	case <-callsDone:
	case err := <-sendDone:
		cancel(errStreamEnded)
		<-callsDone
		return sendError(err)
	}
	st.q.Close()
	if err := <-sendDone; err != nil && result == nil {
		return sendError(err)
	}
	if result != nil {
		return status.FromContextError(result).Err()
	}
	return nil
}

func sendError(err error) error {
	if _, ok := status.FromError(err); ok {
		return err
	}
	return status.FromContextError(err).Err()
}

func (st *stream) stopAccepting() {
	st.mu.Lock()
	st.accepting = false
	st.mu.Unlock()
}

// sendLoop is the only goroutine that sends on the stream.
func (st *stream) sendLoop(ss pb.ToolService_ExecuteToolServer) error {
	idle := st.srv.cfg.KeepaliveInterval
	if idle < 0 {
		idle = 0
	}
	for {
		ev, err := st.q.Next(st.ctx, idle)
		if errors.Is(err, events.ErrClosed) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := ss.Send(eventToPB(&ev)); err != nil {
			return err
		}
	}
}

// recvLoop reads client messages until the client closes its side (nil) or
// the stream fails (the error).
func (st *stream) recvLoop(ss pb.ToolService_ExecuteToolServer) error {
	for {
		msg, err := ss.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		st.handle(msg)
	}
}

// push queues a stream-level or call event; it fails only when the stream
// is gone, and then the event has nobody to go to.
func (st *stream) push(ev events.Event) {
	if err := st.q.Push(st.ctx, ev); err != nil {
		st.log.Debug("event dropped: stream gone", "call_id", ev.CallID, "err", err)
	}
}

func (st *stream) reject(callID string, err error, ref string) {
	st.push(events.Event{CallID: callID, Rejected: &events.Rejected{Err: err, ReferenceID: ref}})
}

func (st *stream) handle(msg *pb.ClientMessage) {
	st.mu.Lock()
	first := !st.started
	st.started = true
	st.mu.Unlock()
	if hello := msg.GetHello(); hello != nil {
		if !first {
			st.reject("", errdefs.New(errdefs.ErrInvalidArgument, "Hello must be the first message of the stream; this one was ignored"), "")
			return
		}
		st.welcome(hello)
		return
	}
	if first {
		st.welcome(nil)
	}
	switch m := msg.GetMsg().(type) {
	case *pb.ClientMessage_Call:
		st.startCall(m.Call)
	case *pb.ClientMessage_Cancel:
		st.cancelCall(m.Cancel)
	case *pb.ClientMessage_Approval:
		st.reject("", errdefs.New(errdefs.ErrInvalidArgument, "no call is waiting for approval_id %q", m.Approval.GetApprovalId()), m.Approval.GetApprovalId())
	case *pb.ClientMessage_Input:
		ref := m.Input.GetRequestId()
		st.reject(m.Input.GetCallId(), errdefs.New(errdefs.ErrInvalidArgument, "call %q is not waiting for input", m.Input.GetCallId()), ref)
	default:
		st.reject("", errdefs.New(errdefs.ErrInvalidArgument, "empty client message: set one of hello, call, approval, cancel, input"), "")
	}
}

func (st *stream) welcome(h *pb.Hello) {
	st.mu.Lock()
	if h != nil {
		st.conversationID = h.GetConversationId()
		st.mode = authz.Stricter(st.srv.cfg.Mode, modeFromPB(h.GetApprovalMode()))
		st.omitExecuting = h.GetOmitExecuting()
	}
	if st.conversationID == "" {
		st.conversationID = newID("conv-")
	}
	w := &events.Welcome{
		ConversationID: st.conversationID,
		Mode:           st.mode,
		ServerVersion:  st.srv.cfg.Version,
		Workspace:      st.srv.cfg.Workspace,
		MaxTimeout:     st.srv.cfg.MaxTimeout,
	}
	st.mu.Unlock()
	st.push(events.Event{Welcome: w})
}

func (st *stream) cancelCall(c *pb.Cancel) {
	st.mu.Lock()
	rc := st.calls[c.GetCallId()]
	st.mu.Unlock()
	if rc == nil {
		st.reject(c.GetCallId(), errdefs.New(errdefs.ErrInvalidArgument, "no running call has call_id %q; it may have ended already", c.GetCallId()), "")
		return
	}
	st.log.Debug("call canceled by client", "call_id", c.GetCallId(), "reason", c.GetReason())
	rc.cancel(errCanceledByClient)
}

// startCall admits a call and runs its pipeline in its own goroutine, or
// ends it at once with the reason it cannot run.
func (st *stream) startCall(c *pb.ToolCall) {
	received := time.Now()
	id := c.GetCallId()
	var refuse error
	st.mu.Lock()
	switch {
	case !st.accepting || isClosed(st.srv.draining):
		refuse = errdefs.New(errdefs.ErrUnavailable, "toold is shutting down and accepts no new calls; retry on a new connection")
	case id == "":
		refuse = errdefs.Invalid("", "call_id", "call_id is required: give every call an id unique on the stream (the model's tool call id works)")
	case st.calls[id] != nil:
		refuse = errdefs.New(errdefs.ErrDuplicateCallID, "call_id %q is already used by a running call on this stream; use a new call_id", id)
	case len(st.calls) >= st.srv.cfg.MaxCallsPerStream:
		refuse = errdefs.New(errdefs.ErrResourceExhausted, "too many calls running on this stream (limit %d); wait for some to end and retry", st.srv.cfg.MaxCallsPerStream)
	case !st.srv.acquire():
		refuse = errdefs.New(errdefs.ErrResourceExhausted, "too many calls running on toold (limit %d); wait and retry", st.srv.cfg.MaxCalls)
	}
	if refuse != nil {
		st.mu.Unlock()
		st.push(events.Event{CallID: id, Time: received, Start: &events.Start{RequestedName: c.GetName()}})
		st.push(events.Event{CallID: id, End: &events.End{Err: refuse, Duration: time.Since(received)}})
		return
	}
	ctx, cancel := context.WithCancelCause(st.ctx)
	st.calls[id] = &runningCall{cancel: cancel}
	st.wg.Add(1)
	conv, mode, omitExec := st.conversationID, st.mode, st.omitExecuting
	st.mu.Unlock()

	go func() {
		defer st.finish(id, cancel)
		stop := context.AfterFunc(st.srv.kill, func() { cancel(context.Cause(st.srv.kill)) })
		defer stop()
		st.run(ctx, &callInfo{msg: c, conversationID: conv, mode: mode, omitExecuting: omitExec, received: received})
	}()
}

func (st *stream) finish(id string, cancel context.CancelCauseFunc) {
	cancel(nil)
	st.mu.Lock()
	delete(st.calls, id)
	st.mu.Unlock()
	st.srv.release()
	st.wg.Done()
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func newID(prefix string) string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}
