package service

import (
	"context"
	"errors"
	"io"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	"google.golang.org/grpc/status"

	pb "github.com/toold/toold/gen/toold/v1"
	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/events"
	"github.com/toold/toold/pkg/executor"
)

// stream is one ExecuteTool stream: a reader of its session's event log
// (the sender, the only goroutine that calls Send once Welcome went out)
// and a receiver handing client messages to the session.
type stream struct {
	srv *Server
	ss  pb.ToolService_ExecuteToolServer
	att *executor.Attachment
	// lastSeq is the seq of the last logged event sent; stream-level events
	// carry it.
	lastSeq uint64
	// pendingBad is a first message that could not be used, answered once
	// Welcome went out.
	pendingBad *badMessage
	// recvDone receives the end of receiving: nil when the client closed
	// its side, else why the stream broke.
	recvDone chan error

	// sendMu is held by whoever sends; the fields below are its.
	sendMu    sync.Mutex
	stopped   bool // the stream is over: send nothing more
	failed    bool // a send failed
	buf       []events.Event
	lastSend  time.Time
	keepalive *time.Timer
	sendErr   chan error // the first failed send, for sendLoop
}

// ExecuteTool implements pb.ToolServiceServer. See the proto for the
// contract; in short: the client's CloseSend lets running calls finish and
// then ends the stream with OK; a stream that ends otherwise leaves its calls
// to a stream that resumes it within the grace; on shutdown the stream ends
// with OK once its calls have ended.
//
// The stream's lifetime is an errgroup: the sender, and a watcher of the
// receiver and of toold's draining. Whichever fails first ends the stream;
// the receiver itself is not waited for, because RecvMsg returns only once
// the handler has returned.
func (s *Server) ExecuteTool(ss pb.ToolService_ExecuteToolServer) error {
	st := &stream{srv: s, ss: ss, sendErr: make(chan error, 1)}
	var in inbound // reused: the codec resets it
	first, err := st.open(&in)
	if err != nil || st.att == nil {
		return err
	}
	att := st.att
	if err := st.send(&events.Event{Welcome: att.Welcome()}); err != nil {
		att.Detach()
		return sendError(err)
	}
	if first != nil {
		st.handle(first)
	}

	recvDone := make(chan error, 1)
	st.recvDone = recvDone
	go st.receive(&in, true)
	g, gctx := errgroup.WithContext(ss.Context())
	sent := make(chan struct{})
	g.Go(func() error {
		defer close(sent)
		return st.sendLoop(gctx)
	})
	g.Go(func() error {
		draining := s.x.Draining()
		for {
			select {
			case err := <-recvDone:
				recvDone = nil
				if err != nil {
					return err
				}
				att.CloseSend()
			case <-draining:
				draining = nil
				att.CloseSend()
			case <-sent:
				return nil
			}
		}
	})
	if err := g.Wait(); err != nil {
		// The client canceled the stream, the connection is gone, or a
		// send failed: the calls wait for a stream to resume them.
		att.Detach()
		return sendError(err)
	}
	att.Close()
	return nil
}

// open reads messages until the stream's first usable one and attaches the
// stream to its session (the Hello's, or a new conversation's). It returns
// the first message when it was not a Hello, for handling once Welcome went
// out. A refused Hello ends the stream with the refusal's status; a stream
// the client closes before any message ends with OK.
func (st *stream) open(in *inbound) (*pb.ClientMessage, error) {
	for {
		err := st.ss.RecvMsg(in)
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		if err != nil {
			return nil, status.FromContextError(err).Err()
		}
		var hello *pb.Hello
		var first *pb.ClientMessage
		switch {
		case in.bad != nil && in.bad.kind < 2:
			// A bad Hello, or a message of unknown kind, does not count as
			// the stream's first message.
			if err := st.send(&events.Event{Rejected: &events.Rejected{Err: in.bad.err, ReferenceID: in.bad.callID}}); err != nil {
				return nil, sendError(err)
			}
			continue
		case in.bad != nil:
			b := *in.bad
			st.pendingBad = &b
		case in.msg.GetHello() != nil:
			hello = in.msg.GetHello()
		default:
			first = in.msg
		}
		att, err := st.srv.x.Open(openOptions(hello))
		if err != nil {
			e := errdefs.As(err)
			st.srv.opts.Logger.Info("stream refused", "conversation_id", hello.GetConversationId(), "reason", e.Msg)
			return nil, status.Error(GRPCCode(e), e.Msg)
		}
		st.att = att
		return first, nil
	}
}

func openOptions(h *pb.Hello) executor.OpenOptions {
	o := executor.OpenOptions{
		ConversationID: h.GetConversationId(),
		Secret:         h.GetConversationSecret(),
		Mode:           modeFromPB(h.GetApprovalMode()),
		Client:         h.GetClientName(),
		OmitExecuting:  h.GetOmitExecuting(),
		StreamID:       h.GetResumeStreamId(),
	}
	if h != nil && h.ResumeAfterSeq != nil {
		o.Resume, o.ResumeAfter = true, h.GetResumeAfterSeq()
	}
	return o
}

func sendError(err error) error {
	if _, ok := status.FromError(err); ok {
		return err
	}
	return status.FromContextError(err).Err()
}

// send converts and sends one event; only the goroutine that owns sending
// calls it.
func (st *stream) send(ev *events.Event) error {
	if ev.Seq != 0 {
		st.lastSeq = ev.Seq
	} else {
		ev.Seq = st.lastSeq
	}
	if ev.Time.IsZero() {
		ev.Time = time.Now()
	}
	st.lastSend = time.Now()
	out := eventToPB(ev)
	if w := out.GetWelcome(); w != nil {
		w.Sandbox = SandboxToPB(st.srv.opts.Sandbox)
	}
	return st.ss.Send(out)
}

// sendLoop sends the session's events until the session ended (nil) or
// ctx ends. Whoever appends an event to the session's log sends it (see
// kick): the call that produced it, usually, so that an event reaches the
// transport without waking another goroutine. This goroutine sends output
// (coalesced while it sends), the keepalives, and the rest once the log is
// closed.
func (st *stream) sendLoop(ctx context.Context) error {
	st.att.SetNotify(st.kick)
	defer func() {
		st.att.SetNotify(nil)
		// Wait for a send in progress; none starts after this.
		st.sendMu.Lock()
		st.stopped = true
		st.sendMu.Unlock()
	}()
	idle := st.srv.opts.KeepaliveInterval
	var tick <-chan time.Time
	if idle > 0 {
		t := time.NewTimer(idle)
		defer t.Stop()
		tick = t.C
		defer func() { t.Stop() }()
		st.keepalive = t
	}
	for {
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case err := <-st.sendErr:
			return err
		case <-st.att.Wake():
			// Output (coalesced while this goroutine sends).
			st.sendMu.Lock()
			err := st.drainLocked()
			st.sendMu.Unlock()
			if err != nil {
				return err
			}
		case <-st.att.Done():
			st.sendMu.Lock()
			defer st.sendMu.Unlock()
			if err := st.drainLocked(); err != nil {
				return err
			}
			select {
			case err := <-st.sendErr:
				return err
			default:
				return nil
			}
		case <-tick:
			if !st.sendMu.TryLock() {
				st.keepalive.Reset(idle) // sending right now: not idle
				continue
			}
			wait := idle - time.Since(st.lastSend)
			var err error
			if wait <= 0 {
				err = st.send(&events.Event{Keepalive: &events.Keepalive{}})
				wait = idle
			}
			st.sendMu.Unlock()
			if err != nil {
				return err
			}
			st.keepalive.Reset(wait)
		}
	}
}

// kick sends what waits in the log, unless another goroutine is sending
// (it then sends this too). Called by every append (events.Log.SetNotify).
func (st *stream) kick() {
	for st.sendMu.TryLock() {
		err := st.drainLocked()
		st.sendMu.Unlock()
		if err != nil {
			select {
			case st.sendErr <- err:
			default:
			}
			return
		}
		// An append between the last read and the unlock found the lock
		// taken: look again.
		if !st.att.HasUnread() {
			return
		}
	}
}

// drainLocked sends every event waiting in the log; sendMu is held.
func (st *stream) drainLocked() error {
	if st.stopped || st.failed {
		return nil
	}
	for {
		st.buf = st.att.TryRead(st.buf[:0])
		if len(st.buf) == 0 {
			return nil
		}
		for i := range st.buf {
			if err := st.send(&st.buf[i]); err != nil {
				st.failed = true
				clear(st.buf)
				return err
			}
		}
		clear(st.buf)
	}
}

// receive reads client messages until the client closes its side (nil on
// recvDone) or the stream fails (the error). It receives through toold's
// codec (see codec.go), so a message that is too large or does not decode
// arrives as a refusal of that message, not as a broken stream.
//
// When a call is admitted, the receiving goroutine hands receiving to a new
// goroutine and runs the call itself: the call starts at once, on a
// goroutine that is already running, instead of waiting to be scheduled.
func (st *stream) receive(in *inbound, first bool) {
	if first && st.pendingBad != nil {
		st.handleBad(st.pendingBad)
		st.pendingBad = nil
	}
	for {
		err := st.ss.RecvMsg(in)
		if errors.Is(err, io.EOF) {
			st.recvDone <- nil
			return
		}
		if err != nil {
			st.recvDone <- err
			return
		}
		if in.bad != nil {
			st.handleBad(in.bad)
			continue
		}
		if c := in.msg.GetCall(); c != nil {
			run, err := st.att.Start(callRequest(c))
			if err != nil {
				st.rejectCall(c, err)
			}
			if run != nil {
				go st.receive(new(inbound), false)
				run()
				return
			}
			continue
		}
		st.handle(in.msg)
	}
}

func (st *stream) rejectCall(c *pb.ToolCall, err error) {
	ref := ""
	if errors.Is(err, errdefs.ErrDuplicateCallID) {
		ref = c.GetCallId()
	}
	st.att.Reject("", err, ref)
}

// handleBad answers a message that could not be used: a ToolCall whose
// call_id could be read and is free gets its Start and End with the error,
// so the model's call is answered; anything else a MessageRejected.
func (st *stream) handleBad(b *badMessage) {
	if b.kind == 2 && b.callID != "" {
		if st.att.Refuse(b.callID, b.name, b.err) == nil {
			return
		}
	}
	st.att.Reject("", b.err, b.callID)
}

// handle acts on one client message.
func (st *stream) handle(msg *pb.ClientMessage) {
	if msg == nil {
		return
	}
	a := st.att
	switch m := msg.GetMsg().(type) {
	case *pb.ClientMessage_Hello:
		a.Reject("", errdefs.New(errdefs.ErrInvalidArgument, "Hello must be the first message of the stream; this one was ignored"), "")
	case *pb.ClientMessage_Call:
		if err := a.Submit(callRequest(m.Call)); err != nil {
			st.rejectCall(m.Call, err)
		}
	case *pb.ClientMessage_Cancel:
		if err := a.Cancel(m.Cancel.GetCallId(), m.Cancel.GetReason()); err != nil {
			a.Reject(m.Cancel.GetCallId(), err, "")
		}
	case *pb.ClientMessage_Approval:
		d := m.Approval
		ans := executor.Approval{Approve: d.GetApprove(), ScopeID: d.GetScopeId(), Reason: d.GetReason()}
		if t := d.GetTtl(); t != nil {
			ans.TTL = t.AsDuration()
		}
		if err := approvalExtras(d, &ans); err != nil { // approval_extras.go
			a.Reject("", err, d.GetApprovalId())
			return
		}
		if callID, err := a.Approve(d.GetApprovalId(), ans); err != nil {
			a.Reject(callID, err, d.GetApprovalId())
		}
	case *pb.ClientMessage_Input:
		st.input(m.Input)
	default:
		a.Reject("", errdefs.New(errdefs.ErrInvalidArgument, "empty client message: set one of hello, call, approval, cancel, input"), "")
	}
}

func (st *stream) input(in *pb.Input) {
	a := st.att
	if id := in.GetRequestId(); id != "" {
		text := in.GetText()
		if text == "" && len(in.GetData()) > 0 {
			text = string(in.GetData())
		}
		if err := a.Answer(id, text); err != nil {
			a.Reject(in.GetCallId(), err, id)
		}
		return
	}
	if in.GetText() != "" {
		a.Reject(in.GetCallId(), errdefs.New(errdefs.ErrInvalidArgument, "call %q is not waiting for input: Input.text answers a question and needs the request_id of an InputRequired event; bytes for a process's stdin go in Input.data", in.GetCallId()), "")
		return
	}
	if err := a.Input(in.GetCallId(), in.GetData(), in.GetEof()); err != nil {
		a.Reject(in.GetCallId(), err, "")
	}
}

func callRequest(c *pb.ToolCall) *executor.CallRequest {
	req := &executor.CallRequest{CallID: c.GetCallId(), Name: c.GetName(), TraceContext: c.GetTraceContext()}
	switch a := c.GetArguments().(type) {
	case *pb.ToolCall_ArgumentsJson:
		req.ArgsJSON = a.ArgumentsJson
	case *pb.ToolCall_ArgumentsStruct:
		req.Args = a.ArgumentsStruct.AsMap()
	}
	if d := c.GetTimeout(); d != nil {
		req.Timeout = d.AsDuration()
	}
	return req
}
