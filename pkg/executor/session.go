package executor

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toold/toold/pkg/authz"
	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/events"
	"github.com/toold/toold/pkg/tools"
)

// MaxConversationID bounds a conversation id.
const MaxConversationID = 256

// OpenOptions is what a stream asks for when it opens (its Hello).
type OpenOptions struct {
	// ConversationID names the conversation; empty starts a new one.
	ConversationID string
	// Secret is the conversation's secret, required to join or resume a
	// conversation toold holds.
	Secret string
	// Resume asks for the calls of a stream of the conversation that
	// dropped: the events after ResumeAfter are read again, then live
	// ones; questions still waiting are asked again.
	Resume      bool
	ResumeAfter uint64
	// StreamID names the dropped stream to resume (Welcome's stream id);
	// empty takes the conversation's only one.
	StreamID string
	// Mode is the mode the stream asks for; it only tightens the server's.
	Mode authz.Mode
	// Client names the client ("toolctl/0.1").
	Client string
	// OmitExecuting suppresses Executing events of the stream's calls.
	OmitExecuting bool
}

// session is the calls of one stream and their event log. It outlives a
// stream that drops without closing its side, for ResumeGrace, so that a new
// stream can resume it (Open with Resume); it ends when its stream closed
// its side and its calls ended, or when the grace ran out.
type session struct {
	x    *Executor
	id   string
	conv string
	log  *events.Log
	// ctx is the parent of the calls' contexts; it is canceled with
	// ErrClientGone when the grace runs out.
	ctx    context.Context
	cancel context.CancelCauseFunc
	leave  func() // detaches from the conversation registry

	mu      sync.Mutex
	calls   map[string]*runningCall
	waiting map[string]*waiter
	att     *Attachment // the attached stream; nil while detached
	closing bool        // no new calls: the stream closed its side, shutdown, or the grace ran out
	grace   *time.Timer
	ended   bool
	// mute is closed when the client closed its side of the stream: a
	// question asked then, or waiting then, can never be answered.
	mute chan struct{}
	// attached is set from a stream's attach until the session is in
	// x.detached, or given up: a reader holding x.mu (the lock order is
	// s.mu, then x.mu) sees a dropped stream either still attached or
	// detached, never in between (a resume then would be refused as if
	// nothing could be resumed).
	attached atomic.Bool
}

type runningCall struct {
	cancel context.CancelCauseFunc
	stdin  callInput
}

// waiter is a call waiting for a person: an approval or an answer to a
// question. An answer is delivered to exactly the call that asked.
type waiter struct {
	callID string
	ev     events.Event // the RequiresApproval or InputRequired, to ask again on resume
	seq    uint64       // its seq in the log
	// Exactly one is set.
	approval chan Approval // buffered
	answer   chan string   // buffered
	scopes   []authz.Scope
}

// Attachment is a stream's hold on a session: what it receives from the
// client goes in through it, and it reads the session's events. It is not
// safe for concurrent use by more than one reader; the other methods may be
// called from any goroutine.
type Attachment struct {
	s             *session
	mode          authz.Mode
	client        string
	omitExecuting bool
	welcome       events.Welcome
	// watch times the inline budget of the calls run on the stream's
	// receiver (see inline.go).
	watch inlineWatch
	// spareCall is the inline state of an Instant call that ended on the
	// receiver, for the next call run there (its held events were 480
	// bytes a call); see inlineCall.reusable.
	spareCall atomic.Pointer[inlineCall]
}

// Welcome returns what the stream's Welcome says.
func (a *Attachment) Welcome() *events.Welcome { w := a.welcome; return &w }

// Open attaches a stream: to a new session of the conversation, or, with
// Resume, to the session of a stream of it that dropped. It fails, changing
// nothing, when the conversation exists and the secret is not its, when the
// session to resume is not there (never was, resumed by another stream, or
// its grace ran out), or while toold shuts down.
func (x *Executor) Open(o OpenOptions) (*Attachment, error) {
	if len(o.ConversationID) > MaxConversationID {
		return nil, errdefs.New(errdefs.ErrInvalidArgument, "conversation_id is %d bytes; at most %d are allowed", len(o.ConversationID), MaxConversationID)
	}
	if isClosed(x.draining) {
		return nil, errdefs.New(errdefs.ErrUnavailable, "toold is shutting down")
	}
	a := &Attachment{mode: authz.Stricter(x.cfg.Mode, o.Mode), client: o.Client, omitExecuting: o.OmitExecuting}
	if o.Resume {
		return a, x.resume(a, o)
	}
	id, secret, leave, err := x.convs.Join(o.ConversationID, o.Secret, "conv-")
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	s := &session{
		x: x, id: newID("s-"), conv: id, log: events.NewLog(x.logConfig()),
		ctx: ctx, cancel: cancel, leave: leave,
		calls: map[string]*runningCall{}, waiting: map[string]*waiter{},
		mute: make(chan struct{}),
	}
	s.att = a
	s.attached.Store(true)
	a.s = s
	x.mu.Lock()
	if x.live[id] == nil {
		x.live[id] = map[*session]struct{}{}
	}
	x.live[id][s] = struct{}{}
	x.mu.Unlock()
	a.welcome = events.Welcome{ConversationID: id, ConversationSecret: secret, Mode: a.mode,
		ServerVersion: x.cfg.Version, Workspace: x.cfg.Workspace, MaxTimeout: x.cfg.MaxTimeout,
		StreamID: s.id}
	return a, nil
}

func (x *Executor) resume(a *Attachment, o OpenOptions) error {
	secret, err := x.convs.Check(o.ConversationID, o.Secret)
	if err != nil {
		return err
	}
	x.mu.Lock()
	list := x.detached[o.ConversationID]
	var s *session
	switch {
	case o.StreamID != "":
		for _, c := range list {
			if c.id == o.StreamID {
				s = c
			}
		}
	case len(list) == 1:
		s = list[0]
	case len(list) > 1:
		x.mu.Unlock()
		return errdefs.New(errdefs.ErrInvalidArgument, "conversation %q has %d dropped streams; name the one to resume with resume_stream_id (Welcome.stream_id)", o.ConversationID, len(list))
	}
	attached := false
	for c := range x.live[o.ConversationID] {
		attached = attached || c.attached.Load()
	}
	if s == nil && attached {
		x.mu.Unlock()
		return errdefs.New(errdefs.ErrUnavailable, "conversation %q's stream is still attached: toold has not seen it end yet, or another stream resumed it first; retry in a moment", o.ConversationID)
	}
	if s == nil {
		x.mu.Unlock()
		return errdefs.New(errdefs.ErrFailed, "conversation %q has no dropped stream to resume%s: it ended, its grace of %s ran out, or another stream resumed it first; open the conversation without resume",
			o.ConversationID, streamName(o.StreamID), x.cfg.ResumeGrace)
	}
	x.undetachLocked(s)
	x.mu.Unlock()

	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended || s.att != nil || (s.grace != nil && !s.grace.Stop()) {
		// The grace ran out while we took it.
		return errdefs.New(errdefs.ErrFailed, "conversation %q has no dropped stream to resume: its grace ran out; open the conversation without resume", o.ConversationID)
	}
	s.grace = nil
	s.att = a
	s.attached.Store(true)
	a.s = s
	from := s.log.Rewind(o.ResumeAfter)
	// Questions still waiting whose event the new stream will not read
	// again are asked again, with a new seq.
	var again []*waiter
	for _, w := range s.waiting {
		if w.seq < from {
			again = append(again, w)
		}
	}
	sort.Slice(again, func(i, j int) bool { return again[i].seq < again[j].seq })
	for _, w := range again {
		w.seq = s.log.Force(w.ev)
	}
	a.welcome = events.Welcome{ConversationID: s.conv, ConversationSecret: secret, Mode: a.mode,
		ServerVersion: s.x.cfg.Version, Workspace: s.x.cfg.Workspace, MaxTimeout: s.x.cfg.MaxTimeout,
		StreamID: s.id, Resumed: true, ReplayFrom: from}
	s.x.cfg.Logger.Info("stream resumed", "conversation_id", s.conv, "stream_id", s.id, "after_seq", o.ResumeAfter,
		"replay_from", from, "calls", len(s.calls), "asked_again", len(again))
	return nil
}

// DefaultGatherBytes and DefaultGatherWait are a session log's output
// gathering (events.LogConfig.GatherBytes) unless Config.Log sets it (a
// negative GatherBytes turns it off): a stream's sender waits up to 250 µs
// for a command's output to reach 256 KiB (a whole chunk) before sending it. A person sees
// no delay; a command streaming megabytes goes out in messages near the
// transport's chunk size instead of one per write(2).
const (
	DefaultGatherBytes = 256 << 10
	DefaultGatherWait  = 250 * time.Microsecond
)

// logConfig is the configured log bounds, counting coalesced and dropped
// output in the metrics.
func (x *Executor) logConfig() events.LogConfig {
	c := x.cfg.Log
	if c.GatherBytes == 0 {
		c.GatherBytes, c.GatherWait = DefaultGatherBytes, DefaultGatherWait
	}
	if m := x.cfg.Observe.Metrics; m != nil {
		c.Coalesced = func() { m.OutputCoalesced(context.Background(), 1) }
		c.Dropped = func(n int) { m.OutputDropped(context.Background(), n) }
	}
	return c
}

func streamName(id string) string {
	if id == "" {
		return ""
	}
	return " named " + id
}

// undetachLocked removes s from the detached sessions; x.mu is held.
func (x *Executor) undetachLocked(s *session) {
	list := x.detached[s.conv]
	for i, c := range list {
		if c == s {
			list = append(list[:i:i], list[i+1:]...)
			break
		}
	}
	if len(list) == 0 {
		delete(x.detached, s.conv)
	} else {
		x.detached[s.conv] = list
	}
}

// current reports whether a is the session's attached stream; s.mu is held.
func (a *Attachment) currentLocked() bool { return a.s.att == a }

func errNotAttached() error {
	return errdefs.New(errdefs.ErrUnavailable, "this stream no longer holds its conversation's calls (it was resumed elsewhere or ended)")
}

// Submit admits a call and runs it, or ends it at once (its Start and End
// in the log) with the reason it cannot run. An error refuses the message
// itself (no call_id, or the id of a running call): nothing of it is
// logged.
func (a *Attachment) Submit(req *CallRequest) error {
	run, err := a.Start(req)
	if run != nil {
		go run(nil)
	}
	return err
}

// Start is Submit that leaves running the call to the caller: when the call
// was admitted, run runs it (in any goroutine, exactly once); otherwise run
// is nil (the call was refused, or the error refuses the message).
//
// A stream's receiver runs the call itself, passing handoff (see Inline
// calls in inline.go): run then calls handoff exactly once — on the
// calling goroutine before the call first does something that may wait,
// or on a timer's after Config.InlineBudget — and reports whether it did. When it
// did not, the call has ended and the caller goes on receiving; when it
// did, handoff has started receiving elsewhere. With a nil handoff the
// call simply runs to its end.
func (a *Attachment) Start(req *CallRequest) (run func(handoff func()) (handed bool), err error) {
	s := a.s
	if req.Received.IsZero() {
		req.Received = time.Now()
	}
	id := req.CallID
	s.mu.Lock()
	switch {
	case !a.currentLocked():
		s.mu.Unlock()
		return nil, errNotAttached()
	case id == "":
		s.mu.Unlock()
		return nil, errdefs.Invalid("", "call_id", "call_id is required: give every call an id unique on the stream (the model's tool call id works); the call was not run")
	case s.calls[id] != nil:
		s.mu.Unlock()
		return nil, errdefs.New(errdefs.ErrDuplicateCallID, "call_id %q is already used by a running call on this stream; this call was not run (the running one is not affected); use a new call_id", id)
	}
	var refuse error
	switch {
	case s.closing:
		refuse = errDraining()
	case len(s.calls) >= s.x.cfg.MaxCallsPerStream:
		refuse = s.x.errStreamFull()
	default:
		refuse = s.x.admit()
	}
	if refuse != nil {
		s.mu.Unlock()
		s.append(events.Event{CallID: id, Time: req.Received, Start: &events.Start{RequestedName: req.Name}},
			events.Event{CallID: id, End: &events.End{Err: refuse, Duration: time.Since(req.Received)}})
		return nil, nil
	}
	ctx, cancel := context.WithCancelCause(s.ctx)
	rc := &runningCall{cancel: cancel}
	rc.stdin.ctx = ctx
	s.calls[id] = rc
	s.mu.Unlock()
	req.ConversationID = s.conv
	req.Mode = a.mode
	req.OmitExecuting = a.omitExecuting
	req.Client = a.client
	req.stdin = &rc.stdin
	return func(handoff func()) bool {
		if handoff != nil {
			req.inline = newInlineCall(s, &a.watch, handoff, a.spareCall.Swap(nil))
		}
		handed := s.run(ctx, rc, req)
		if req.inline.reusable(req.instant) {
			a.spareCall.Store(req.inline)
		}
		return handed
	}, nil
}

// Refuse logs a call that could not be read (a ToolCall that did not
// decode, whose call_id could be read): its Start and End with the error,
// so the model's call is answered. A call_id in use is refused as a
// message instead (the error).
func (a *Attachment) Refuse(callID, name string, err error) error {
	s := a.s
	s.mu.Lock()
	busy := s.calls[callID] != nil
	s.mu.Unlock()
	if busy || callID == "" {
		return err
	}
	s.append(events.Event{CallID: callID, Time: time.Now(), Start: &events.Start{RequestedName: name}},
		events.Event{CallID: callID, End: &events.End{Err: err}})
	return nil
}

// Reject logs a MessageRejected: a client message of the stream that could
// not be acted on. callID names the call it concerns, ref what it referred
// to (an approval_id, a call_id).
func (a *Attachment) Reject(callID string, err error, ref string) {
	a.s.append(events.Event{CallID: callID, Rejected: &events.Rejected{Err: err, ReferenceID: ref}})
}

// append logs stream-made events (not a call's own).
func (s *session) append(evs ...events.Event) {
	if _, err := s.log.Append(s.ctx, evs...); err != nil {
		s.x.cfg.Logger.Debug("event dropped: session over", "err", err)
	}
}

// run runs an admitted call and reports whether receiving was handed off
// (see Start).
func (s *session) run(ctx context.Context, rc *runningCall, req *CallRequest) (handed bool) {
	h := &callHost{s: s, rc: rc, inline: req.inline}
	end, record := s.x.execute(ctx, req, h)
	held, handed := req.inline.end()
	// The End is logged and the call forgotten in one step, so that once
	// a client has the End it may reuse the call_id at once, and a reuse
	// can never be logged before this End. (Force never blocks and does
	// no I/O: the stream's sender sends it.) A call that ran on the
	// receiver logs its Start and Executing with it: one wake of the
	// sender, one write.
	endEv := events.Event{CallID: req.CallID, End: end}
	s.mu.Lock()
	if len(held) > 0 {
		s.log.Force(append(held, endEv)...)
	} else {
		s.log.Force(endEv)
	}
	delete(s.calls, req.CallID)
	s.settleLocked()
	s.mu.Unlock()
	rc.cancel(nil)
	record()
	s.x.release()
	return handed
}

// settleLocked ends what can end once no call runs: the log of a closing
// session (its reader then reads to the end), and the session itself when
// nobody is attached. s.mu is held.
func (s *session) settleLocked() {
	if !s.closing || len(s.calls) > 0 {
		return
	}
	s.log.Close()
	if s.att == nil {
		s.endLocked()
	}
}

func (s *session) endLocked() {
	if s.ended {
		return
	}
	s.ended = true
	s.attached.Store(false)
	s.cancel(ErrClientGone)
	if s.grace != nil {
		s.grace.Stop()
		s.grace = nil
	}
	s.log.Close()
	s.x.mu.Lock()
	delete(s.x.live[s.conv], s)
	if len(s.x.live[s.conv]) == 0 {
		delete(s.x.live, s.conv)
	}
	s.x.mu.Unlock()
	go s.leave()
}

// Cancel cancels a running call of the session.
func (a *Attachment) Cancel(callID, reason string) error {
	s := a.s
	s.mu.Lock()
	rc := s.calls[callID]
	s.mu.Unlock()
	if rc == nil {
		return errdefs.New(errdefs.ErrInvalidArgument, "no running call has call_id %q; it may have ended already", callID)
	}
	s.x.cfg.Logger.Debug("call canceled by client", "call_id", callID, "reason", reason)
	rc.cancel(ErrCanceledByClient)
	return nil
}

// Approve answers the approval request approvalID. An error refuses the
// answer (unknown id, a scope that was not offered) and the call keeps
// waiting; callID then names the call when known.
func (a *Attachment) Approve(approvalID string, ans Approval) (callID string, err error) {
	s := a.s
	s.mu.Lock()
	defer s.mu.Unlock()
	w := s.waiting[approvalID]
	if w == nil || w.approval == nil {
		return "", errdefs.New(errdefs.ErrInvalidArgument, "no call is waiting for approval_id %q; an approval_id answers only the RequiresApproval event it came with", approvalID)
	}
	if ans.Approve && ans.ScopeID != "" {
		ok := false
		for _, sc := range w.scopes {
			ok = ok || sc.ID == ans.ScopeID
		}
		if !ok {
			return w.callID, errdefs.New(errdefs.ErrInvalidArgument, "scope_id %q was not offered for approval_id %q; choose one of the offered scopes (the call is still waiting)", ans.ScopeID, approvalID)
		}
	}
	delete(s.waiting, approvalID)
	w.approval <- ans
	return w.callID, nil
}

// Answer answers the question requestID with text.
func (a *Attachment) Answer(requestID, text string) error {
	s := a.s
	s.mu.Lock()
	defer s.mu.Unlock()
	w := s.waiting[requestID]
	if w == nil || w.answer == nil {
		return errdefs.New(errdefs.ErrInvalidArgument, "no call is waiting for request_id %q", requestID)
	}
	delete(s.waiting, requestID)
	w.answer <- text
	return nil
}

// Input feeds bytes to a running call's standard input; eof closes it.
func (a *Attachment) Input(callID string, data []byte, eof bool) error {
	s := a.s
	s.mu.Lock()
	rc := s.calls[callID]
	s.mu.Unlock()
	if rc == nil {
		return errdefs.New(errdefs.ErrInvalidArgument, "no running call has call_id %q; input goes to a running call (run_command with stdin: \"pipe\")", callID)
	}
	return rc.stdin.write(data, eof)
}

// Read returns the session's next events, every one ready up to max (all
// when max is zero), blocking until there is one (see events.Log.Read): it
// returns events.ErrIdle after idle without events (send a Keepalive), and
// events.ErrClosed once the stream closed its side (CloseSend) or toold
// shuts down, and every call ended and every event was read. The stream's
// one sender is its only caller.
func (a *Attachment) Read(ctx context.Context, buf []events.Event, max int, idle time.Duration) ([]events.Event, error) {
	n := len(buf)
	buf, err := a.s.log.Read(ctx, buf, max, idle)
	if len(buf) > n {
		a.s.x.cfg.Observe.Metrics.QueueDepth(ctx, len(buf)-n)
	}
	return buf, err
}

// Done is closed once the stream has nothing more to read but what waits:
// it closed its side (or toold drains) and every call ended.
func (a *Attachment) Done() <-chan struct{} { return a.s.log.Done() }

// CloseSend says the client closed its side: it sends no more calls, and
// no more answers. The running calls finish; a call waiting for an approval
// or an answer, or asking later, ends DENIED (nobody can answer it); Read
// returns events.ErrClosed after the last event.
func (a *Attachment) CloseSend() {
	s := a.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if !a.currentLocked() {
		return
	}
	if !isClosed(s.mute) {
		close(s.mute)
	}
	s.closing = true
	s.settleLocked()
}

// Drain says toold shuts down: the stream takes no more calls, the running
// ones finish (the client may still answer their questions), and Read
// returns events.ErrClosed after the last event.
func (a *Attachment) Drain() {
	s := a.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if !a.currentLocked() {
		return
	}
	s.closing = true
	s.settleLocked()
}

// Close ends the stream's hold after it read everything (Read returned
// ErrClosed): the session is over.
func (a *Attachment) Close() {
	s := a.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if !a.letGoLocked() {
		return
	}
	s.closing = true
	if len(s.calls) == 0 {
		s.endLocked()
		return
	}
	// Read stopped early (a send failed): the rest is as a drop.
	s.detachLocked()
}

// Detach lets go of the session because the stream ended without closing
// its side (the client canceled, the connection broke, a send failed): its
// calls go on and their events are logged for ResumeGrace, waiting for a
// stream to resume them; then they end DISCONNECTED.
func (a *Attachment) Detach() {
	s := a.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if a.letGoLocked() {
		s.detachLocked()
	}
}

// letGoLocked detaches a from its session, reporting false when a no longer
// held it; s.mu is held.
func (a *Attachment) letGoLocked() bool {
	if !a.currentLocked() {
		return false
	}
	a.s.att = nil // attached stays set until detachLocked or the end
	return true
}

func (s *session) detachLocked() {
	if s.ended {
		s.attached.Store(false)
		return
	}
	grace := s.x.cfg.ResumeGrace
	if grace < 0 || isClosed(s.x.draining) {
		s.expireLocked()
		return
	}
	s.x.mu.Lock()
	s.x.detached[s.conv] = append(s.x.detached[s.conv], s)
	s.attached.Store(false)
	s.x.mu.Unlock()
	s.grace = time.AfterFunc(grace, s.expire)
	s.x.cfg.Logger.Info("stream dropped; its calls wait to be resumed", "conversation_id", s.conv, "stream_id", s.id,
		"calls", len(s.calls), "grace", grace, "last_seq", s.log.Last())
}

// expire gives the session up: nobody resumed it in time (or toold shuts
// down). Its calls end DISCONNECTED; their events are no longer kept for a
// reader.
func (s *session) expire() {
	s.x.mu.Lock()
	s.x.undetachLocked(s)
	s.x.mu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.att != nil {
		return // resumed meanwhile
	}
	s.expireLocked()
}

func (s *session) expireLocked() {
	s.attached.Store(false)
	s.grace = nil
	s.closing = true
	s.log.Discard()
	s.cancel(ErrClientGone)
	if len(s.calls) == 0 {
		s.endLocked()
	}
}

// callHost is the Host of a stream's call: its events go to the session's
// log, its questions wait in the session for whichever stream is attached.
type callHost struct {
	s  *session
	rc *runningCall
	// inline is set while the call may run on the stream's receiver.
	inline *inlineCall
}

var _ Host = (*callHost)(nil)

// Emit implements Host. The session's context (not the call's) bounds a
// wait for room in the log, so the events of a canceled call still reach
// it. Appending does no I/O: the stream's sender sends what it reads.
// A call running on the receiver holds its events for its End (see
// inlineCall).
func (h *callHost) Emit(_ context.Context, ev events.Event) error {
	if h.inline.hold(ev) {
		return nil
	}
	_, err := h.s.log.Append(h.s.ctx, ev)
	return err
}

// Output implements Host.
func (h *callHost) Output(ctx context.Context, callID string, st tools.Stream, p []byte) error {
	h.inline.mayWait()
	return h.s.log.Output(ctx, callID, st, p)
}

// Adopt implements Host: the stream's event log keeps p as the chunk
// (events.Log.Adopt).
func (h *callHost) Adopt(ctx context.Context, callID string, st tools.Stream, p []byte) error {
	h.inline.mayWait()
	return h.s.log.Adopt(ctx, callID, st, p)
}

// Approve implements Host: it logs RequiresApproval and waits for the
// answer with its approval_id, from whichever stream is attached, or for
// ctx to end.
func (h *callHost) Approve(ctx context.Context, callID string, req *events.ApprovalRequest) (Approval, error) {
	w := &waiter{callID: callID, approval: make(chan Approval, 1), scopes: req.Scopes,
		ev: events.Event{CallID: callID, Approval: req}}
	h.wait(ctx, req.ApprovalID, w)
	return await(ctx, h.s.mute, w.approval, "an approval", "; the call was not run")
}

// Ask implements Host: it logs InputRequired and waits for the Input with
// its request_id, or for ctx to end.
func (h *callHost) Ask(ctx context.Context, callID string, q *events.Question) (string, error) {
	w := &waiter{callID: callID, answer: make(chan string, 1), ev: events.Event{CallID: callID, Question: q}}
	h.wait(ctx, q.RequestID, w)
	return await(ctx, h.s.mute, w.answer, "an answer", "")
}

// await returns the answer on ch, or why ctx ended first, or, once the
// client closed its side (mute), a DENIED error saying so: nobody can send
// the answer any more.
func await[T any](ctx context.Context, mute <-chan struct{}, ch <-chan T, what, tail string) (T, error) {
	var zero T
	select {
	case v := <-ch:
		return v, nil
	case <-ctx.Done():
		return zero, context.Cause(ctx)
	case <-mute:
		select {
		case v := <-ch: // answered before the client closed its side
			return v, nil
		default:
		}
		return zero, errdefs.New(errdefs.ErrDenied, "this call needed %s from the client, but the client had closed its side of the stream (it sends nothing more), so nobody could give it%s. Keep the stream open until the calls that may ask have ended", what, tail)
	}
}

// wait registers w under id and logs its event; the waiter is removed when
// ctx ends (an answer removes it itself).
func (h *callHost) wait(ctx context.Context, id string, w *waiter) {
	h.inline.mayWait()
	s := h.s
	// The event is logged under s.mu, so a stream resuming meanwhile
	// either reads it or asks it again: never both, never neither.
	s.mu.Lock()
	s.waiting[id] = w
	w.seq = s.log.Force(w.ev)
	s.mu.Unlock()
	context.AfterFunc(ctx, func() {
		s.mu.Lock()
		if s.waiting[id] == w {
			delete(s.waiting, id)
		}
		s.mu.Unlock()
	})
}

func newID(prefix string) string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}
