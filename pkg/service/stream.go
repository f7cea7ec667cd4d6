package service

import (
	"context"
	"errors"
	"io"
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
// and a receiver handing client messages to the session. Nothing else
// sends: a call, a timer or the receiver appends to the log, which does no
// I/O, and the sender reads what is ready and sends it.
type stream struct {
	// dialect is the Hello's: the agent tool set of the stream's calls.
	dialect string
	srv     *Server
	ss      pb.ToolService_ExecuteToolServer
	att     *executor.Attachment
	// lastSeq is the seq of the last logged event sent; stream-level events
	// carry it.
	lastSeq uint64
	// pendingBad is a first message that could not be used, answered once
	// Welcome went out.
	pendingBad *badMessage
	// recvDone receives the end of receiving: nil when the client closed
	// its side, else why the stream broke.
	recvDone chan error
	// buf is the sender's batch, reused; scratch is what each event is
	// converted into, reused (see sendScratch).
	buf     []events.Event
	scratch sendScratch
	// idle hands work to the stream's idle goroutines (see spawn); ended
	// is closed when ExecuteTool returns, and ends them.
	idle  chan func()
	ended chan struct{}
}

// spawn runs f on one of the stream's idle goroutines, or a new one. A
// goroutine that ran a call and the receiver it handed off to waits for
// the stream's next work instead of exiting: back-to-back calls then
// alternate between two goroutines whose stacks have already grown, where
// a fresh goroutine per call grew its stack through gRPC's decoder and the
// call's JSON every time (a tenth of a no-op call's CPU went to copying
// stacks). Idle goroutines end with the stream.
func (st *stream) spawn(f func()) {
	select {
	case st.idle <- f:
	default:
		go st.work(f)
	}
}

func (st *stream) work(f func()) {
	for {
		f()
		select {
		case f = <-st.idle:
		case <-st.ended:
			return
		}
	}
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
	st := &stream{srv: s, ss: ss, idle: make(chan func()), ended: make(chan struct{})}
	defer close(st.ended)
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
	st.spawn(func() { st.receive(&in, true) })
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
				att.Drain()
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
			st.dialect = hello.GetDialect()
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
	out := st.scratch.convert(ev)
	if w := out.GetWelcome(); w != nil {
		w.Sandbox = SandboxToPB(st.srv.opts.Sandbox)
	}
	return st.ss.Send(out)
}

// sendLoop is the stream's sender, the only goroutine that calls Send once
// Welcome went out (buildkit's control.Status shape). It reads every event
// ready in the session's log and sends them, until the session ended and
// its log was read to the end (nil), ctx ends, or a send fails; after
// KeepaliveInterval without an event it sends a Keepalive.
func (st *stream) sendLoop(ctx context.Context) error {
	idle := st.srv.opts.KeepaliveInterval
	for {
		var err error
		st.buf, err = st.att.Read(ctx, st.buf[:0], 0, idle)
		for i := range st.buf {
			if serr := st.send(&st.buf[i]); serr != nil {
				clear(st.buf)
				return serr
			}
		}
		clear(st.buf)
		switch {
		case err == nil:
		case errors.Is(err, events.ErrIdle):
			if err := st.send(&events.Event{Keepalive: &events.Keepalive{}}); err != nil {
				return err
			}
		case errors.Is(err, events.ErrClosed):
			return nil
		default:
			return err
		}
	}
}

// receive reads client messages until the client closes its side (nil on
// recvDone) or the stream fails (the error). It receives through toold's
// codec (see codec.go), so a message that is too large or does not decode
// arrives as a refusal of that message, not as a broken stream.
//
// When a call is admitted, the receiving goroutine runs it itself: the
// call starts at once, on a goroutine that is already running. A Fast call
// (think, read_file, …) usually ends there and receiving goes on; before a
// call does anything that may wait, or once it ran for
// executor.Config.InlineBudget, the executor calls handoff, which hands receiving
// to another of the stream's goroutines (see executor's inline.go), and
// this one returns when the call ends.
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
			run, err := st.att.Start(st.callRequest(c))
			if err != nil {
				st.rejectCall(c, err)
			}
			if run != nil && run(st.handoff) {
				return // another goroutine receives now
			}
			continue
		}
		st.handle(in.msg)
	}
}

// handoff starts receiving on another of the stream's goroutines; the
// executor calls it at most once per call run on the receiver, possibly
// from a timer's goroutine.
func (st *stream) handoff() { st.spawn(func() { st.receive(new(inbound), false) }) }

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
		if err := a.Submit(st.callRequest(m.Call)); err != nil {
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

// callRequest converts a call; its dialect is the call's, else the
// stream's Hello's.
func (st *stream) callRequest(c *pb.ToolCall) *executor.CallRequest {
	req := &executor.CallRequest{CallID: c.GetCallId(), Name: c.GetName(), TraceContext: c.GetTraceContext(), Dialect: st.dialect}
	if d := c.GetDialect(); d != "" {
		req.Dialect = d
	}
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
