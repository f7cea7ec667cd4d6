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

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/toold/toold/gen/toold/v1"
	"github.com/toold/toold/pkg/authz"
	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/events"
	"github.com/toold/toold/pkg/tools"
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
	leave          func() // detaches the stream from its conversation
	left           bool   // the handler has returned: no conversation is joined any more
	client         string
	mode           authz.Mode
	omitExecuting  bool
	wg             sync.WaitGroup // running calls
	// waiting holds the calls waiting for a person, by approval_id or
	// request_id; an answer is delivered to exactly the call that asked.
	waiting map[string]*waiter
	// emitters order the events of running calls (see callEmitter).
	emitters map[string]*callEmitter
}

// holdStart is how long a call's Start and Executing may wait to go out
// with its next event.
const holdStart = 2 * time.Millisecond

// callEmitter puts one call's events into the queue in order. It holds back
// the call's Start and Executing for up to holdStart, so that a fast call's
// events reach the transport as one batch with its End (one write, one
// wake-up of the client); any other event of the call, or the timer,
// releases them first. Every push of the call's events happens under mu, so
// a release by the timer cannot be overtaken by the call's next event.
type callEmitter struct {
	mu    sync.Mutex
	held  []events.Event
	timer *time.Timer
}

// waiter is a call waiting for an ApprovalDecision or an Input answer.
type waiter struct {
	callID string
	scopes []authz.Scope // for approvals: the offered scopes
	answer chan any      // receives one Approval or string; buffered
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
		waiting:   map[string]*waiter{},
		emitters:  map[string]*callEmitter{},
		mode:      s.cfg.Mode,
	}
	// Deferred after cancel, so it runs first, once every call has ended
	// (each return below waits for them).
	defer st.leaveConversation()
	sendDone := make(chan error, 1)
	go func() { sendDone <- st.sendLoop(ss) }()
	recvDone := make(chan error, 1)
	// The receiver may outlive this handler by a moment: Recv returns once
	// the handler has returned and gRPC has ended the stream.
	go func() { recvDone <- st.recvLoop(ss) }()

	var result error
	select {
	case err := <-recvDone:
		var r *refusal
		if errors.As(err, &r) {
			// A refused Hello: no call has started; the stream ends with
			// the refusal's status.
			cancel(errStreamEnded)
			st.stopAccepting()
			st.wg.Wait()
			<-sendDone
			return r.status.Err()
		}
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

// refusal ends the stream with its status: a Hello that cannot be
// honored.
type refusal struct{ status *status.Status }

func (r *refusal) Error() string { return r.status.Message() }

func (st *stream) leaveConversation() {
	st.mu.Lock()
	leave := st.leave
	st.leave = nil
	st.left = true
	st.mu.Unlock()
	if leave != nil {
		leave()
	}
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
		// Send has encoded the event when it returns: its output buffer
		// can be reused.
		err = ss.Send(eventToPB(&ev))
		events.Release(&ev)
		if err != nil {
			return err
		}
	}
}

// recvLoop reads client messages until the client closes its side (nil),
// the stream fails, or a Hello is refused (the error). It receives through
// toold's codec (see codec.go), so a message that is too large or does not
// decode arrives as a refusal of that message, not as a broken stream.
func (st *stream) recvLoop(ss pb.ToolService_ExecuteToolServer) error {
	var in inbound // reused: the codec resets it
	for {
		err := ss.RecvMsg(&in)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if in.bad != nil {
			st.handleBad(in.bad)
			continue
		}
		if err := st.handle(in.msg); err != nil {
			return err
		}
	}
}

// handleBad answers a message that could not be used: a ToolCall whose
// call_id could be read and is free gets its Start and End with the error,
// so the model's call is answered; anything else a MessageRejected. A bad
// Hello, or a message of unknown kind, does not count as the stream's
// first message.
func (st *stream) handleBad(b *badMessage) {
	if b.kind >= 2 {
		st.mu.Lock()
		first := !st.started
		st.started = true
		st.mu.Unlock()
		if first {
			if err := st.welcome(nil); err != nil {
				// Only a shutdown refuses a new conversation; the message
				// is refused either way.
				st.reject("", err, "")
				return
			}
		}
	}
	if b.kind == 2 && b.callID != "" {
		st.mu.Lock()
		busy := st.calls[b.callID] != nil
		st.mu.Unlock()
		if !busy {
			now := time.Now()
			st.push(events.Event{CallID: b.callID, Time: now, Start: &events.Start{RequestedName: b.name}})
			st.push(events.Event{CallID: b.callID, End: &events.End{Err: b.err}})
			return
		}
	}
	st.reject("", b.err, b.callID)
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

// handle acts on one client message; it fails only when a Hello is
// refused, which ends the stream.
func (st *stream) handle(msg *pb.ClientMessage) error {
	st.mu.Lock()
	first := !st.started
	st.started = true
	st.mu.Unlock()
	if hello := msg.GetHello(); hello != nil {
		if !first {
			st.reject("", errdefs.New(errdefs.ErrInvalidArgument, "Hello must be the first message of the stream; this one was ignored"), "")
			return nil
		}
		return st.welcome(hello)
	}
	if first {
		if err := st.welcome(nil); err != nil {
			return err
		}
	}
	switch m := msg.GetMsg().(type) {
	case *pb.ClientMessage_Call:
		st.startCall(m.Call)
	case *pb.ClientMessage_Cancel:
		st.cancelCall(m.Cancel)
	case *pb.ClientMessage_Approval:
		st.answerApproval(m.Approval)
	case *pb.ClientMessage_Input:
		st.answerInput(m.Input)
	default:
		st.reject("", errdefs.New(errdefs.ErrInvalidArgument, "empty client message: set one of hello, call, approval, cancel, input"), "")
	}
	return nil
}

// maxConversationID bounds Hello.conversation_id.
const maxConversationID = 256

// welcome joins the stream to its conversation and sends Welcome. It fails
// (ending the stream) when the Hello names a conversation toold holds
// without presenting its secret: nothing of the conversation is reached.
func (st *stream) welcome(h *pb.Hello) error {
	id, secret := h.GetConversationId(), h.GetConversationSecret()
	if len(id) > maxConversationID {
		return &refusal{status.Newf(codes.InvalidArgument, "conversation_id is %d bytes; at most %d are allowed", len(id), maxConversationID)}
	}
	id, secret, leave, err := st.srv.convs.Join(id, secret, "conv-")
	if err != nil {
		e := errdefs.As(err)
		st.log.Info("stream refused", "conversation_id", h.GetConversationId(), "reason", e.Msg)
		return &refusal{status.New(GRPCCode(e), e.Msg)}
	}
	st.mu.Lock()
	if st.left {
		// The receiver outlived the handler (see ExecuteTool): nobody
		// would leave the conversation for this stream.
		st.mu.Unlock()
		leave()
		return &refusal{status.New(codes.Canceled, "the stream has ended")}
	}
	st.leave = leave
	st.conversationID = id
	if h != nil {
		st.mode = authz.Stricter(st.srv.cfg.Mode, modeFromPB(h.GetApprovalMode()))
		st.omitExecuting = h.GetOmitExecuting()
		st.client = h.GetClientName()
	}
	w := &events.Welcome{
		ConversationID:     st.conversationID,
		ConversationSecret: secret,
		Mode:               st.mode,
		ServerVersion:      st.srv.cfg.Version,
		Workspace:          st.srv.cfg.Workspace,
		MaxTimeout:         st.srv.cfg.MaxTimeout,
	}
	st.mu.Unlock()
	st.push(events.Event{Welcome: w})
	return nil
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
	// A ToolCall without a usable call_id is refused as a message: an End
	// with an empty id, or a second End with a running call's id, would
	// be taken for the end of another call.
	switch {
	case id == "":
		st.mu.Unlock()
		st.reject("", errdefs.Invalid("", "call_id", "call_id is required: give every call an id unique on the stream (the model's tool call id works); the call was not run"), "")
		return
	case st.calls[id] != nil:
		st.mu.Unlock()
		st.reject("", errdefs.New(errdefs.ErrDuplicateCallID, "call_id %q is already used by a running call on this stream; this call was not run (the running one is not affected); use a new call_id", id), id)
		return
	}
	switch {
	case !st.accepting || isClosed(st.srv.draining):
		refuse = errdefs.New(errdefs.ErrUnavailable, "toold is shutting down and accepts no new calls; retry on a new connection")
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
	req := &CallRequest{
		CallID:         id,
		ConversationID: st.conversationID,
		Name:           c.GetName(),
		Mode:           st.mode,
		TraceContext:   c.GetTraceContext(),
		Received:       received,
		OmitExecuting:  st.omitExecuting,
		Client:         st.client,
	}
	st.mu.Unlock()
	switch a := c.GetArguments().(type) {
	case *pb.ToolCall_ArgumentsJson:
		req.ArgsJSON = a.ArgumentsJson
	case *pb.ToolCall_ArgumentsStruct:
		req.Args = a.ArgumentsStruct.AsMap()
	}
	if d := c.GetTimeout(); d != nil {
		req.Timeout = d.AsDuration()
	}

	go func() {
		defer st.finish(id, cancel)
		stop := context.AfterFunc(st.srv.kill, func() { cancel(context.Cause(st.srv.kill)) })
		defer stop()
		end := st.srv.exec.Execute(ctx, req, st)
		if err := st.emit(events.Event{CallID: id, End: end}); err != nil {
			st.log.Debug("call end dropped: stream gone", "call_id", id, "err", err)
		}
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

// Emit implements Host: call events go into the stream's queue. The stream's
// context (not the call's) bounds the wait, so the events of a canceled call
// still reach the client.
func (st *stream) Emit(_ context.Context, ev events.Event) error {
	return st.emit(ev)
}

// Output implements Host.
func (st *stream) Output(ctx context.Context, callID string, s tools.Stream, p []byte) error {
	e := st.emitter(callID)
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := st.releaseLocked(e); err != nil {
		return err
	}
	return st.q.Output(ctx, callID, s, p)
}

// emitter returns the call's emitter, creating it with the call's first
// event.
func (st *stream) emitter(callID string) *callEmitter {
	st.mu.Lock()
	defer st.mu.Unlock()
	e := st.emitters[callID]
	if e == nil {
		e = &callEmitter{}
		st.emitters[callID] = e
	}
	return e
}

// emit queues one event of a call in order (see callEmitter); an End also
// forgets the call's emitter.
func (st *stream) emit(ev events.Event) error {
	e := st.emitter(ev.CallID)
	e.mu.Lock()
	defer e.mu.Unlock()
	if ev.Start != nil || ev.Executing != nil {
		e.held = append(e.held, ev)
		if e.timer == nil {
			e.timer = time.AfterFunc(holdStart, func() {
				e.mu.Lock()
				defer e.mu.Unlock()
				_ = st.releaseLocked(e)
			})
		}
		return nil
	}
	if ev.End != nil {
		st.mu.Lock()
		delete(st.emitters, ev.CallID)
		st.mu.Unlock()
	}
	evs := append(e.held, ev)
	e.held = nil
	if e.timer != nil {
		e.timer.Stop()
	}
	return st.q.PushAll(st.ctx, evs)
}

// releaseLocked pushes the held events; e.mu is held.
func (st *stream) releaseLocked(e *callEmitter) error {
	if len(e.held) == 0 {
		return nil
	}
	evs := e.held
	e.held = nil
	return st.q.PushAll(st.ctx, evs)
}

// Approve implements Host: it sends RequiresApproval and waits for the
// ApprovalDecision carrying its approval_id, or for ctx to end.
func (st *stream) Approve(ctx context.Context, callID string, req *events.ApprovalRequest) (Approval, error) {
	v, err := st.wait(ctx, callID, req.ApprovalID, req.Scopes, events.Event{CallID: callID, Approval: req})
	if err != nil {
		return Approval{}, err
	}
	return v.(Approval), nil
}

// Ask implements Host: it sends InputRequired and waits for the Input
// carrying its request_id, or for ctx to end.
func (st *stream) Ask(ctx context.Context, callID string, q *events.Question) (string, error) {
	v, err := st.wait(ctx, callID, q.RequestID, nil, events.Event{CallID: callID, Question: q})
	if err != nil {
		return "", err
	}
	return v.(string), nil
}

func (st *stream) wait(ctx context.Context, callID, id string, scopes []authz.Scope, ev events.Event) (any, error) {
	w := &waiter{callID: callID, scopes: scopes, answer: make(chan any, 1)}
	st.mu.Lock()
	st.waiting[id] = w
	st.mu.Unlock()
	defer func() {
		st.mu.Lock()
		delete(st.waiting, id)
		st.mu.Unlock()
	}()
	// Through the call's emitter, so its held Start goes out first.
	if err := st.emit(ev); err != nil {
		return nil, err
	}
	select {
	case v := <-w.answer:
		return v, nil
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}

// take removes the waiter for id if it is of the wanted kind.
func (st *stream) take(id string, approval bool) *waiter {
	st.mu.Lock()
	defer st.mu.Unlock()
	w := st.waiting[id]
	if w == nil || (w.scopes != nil) != approval {
		return nil
	}
	delete(st.waiting, id)
	return w
}

func (st *stream) answerApproval(d *pb.ApprovalDecision) {
	id := d.GetApprovalId()
	st.mu.Lock()
	w := st.waiting[id]
	valid := w != nil && w.scopes != nil
	scopeOK := !valid || d.GetScopeId() == "" || !d.GetApprove()
	if valid {
		for _, s := range w.scopes {
			if s.ID == d.GetScopeId() {
				scopeOK = true
			}
		}
	}
	st.mu.Unlock()
	switch {
	case !valid:
		st.reject("", errdefs.New(errdefs.ErrInvalidArgument, "no call is waiting for approval_id %q; an approval_id answers only the RequiresApproval event it came with", id), id)
		return
	case !scopeOK:
		st.reject(w.callID, errdefs.New(errdefs.ErrInvalidArgument, "scope_id %q was not offered for approval_id %q; choose one of the offered scopes (the call is still waiting)", d.GetScopeId(), id), id)
		return
	}
	if w = st.take(id, true); w == nil {
		return // answered concurrently
	}
	a := Approval{Approve: d.GetApprove(), ScopeID: d.GetScopeId(), Reason: d.GetReason()}
	if t := d.GetTtl(); t != nil {
		a.TTL = t.AsDuration()
	}
	w.answer <- a
}

func (st *stream) answerInput(in *pb.Input) {
	id := in.GetRequestId()
	if id == "" {
		st.reject(in.GetCallId(), errdefs.New(errdefs.ErrInvalidArgument, "call %q is not waiting for input; Input needs the request_id of an InputRequired event", in.GetCallId()), "")
		return
	}
	w := st.take(id, false)
	if w == nil {
		st.reject(in.GetCallId(), errdefs.New(errdefs.ErrInvalidArgument, "no call is waiting for request_id %q", id), id)
		return
	}
	text := in.GetText()
	if text == "" && len(in.GetData()) > 0 {
		text = string(in.GetData())
	}
	w.answer <- text
}
