package executor

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/toold/toold/pkg/events"
)

// Inline calls.
//
// A stream's receiver may run a call on its own goroutine (Attachment.Start
// with a handoff): a Fast call (tools.OperationSpec.Fast: think, read_file,
// list_dir, glob) then costs no goroutine hand-off at all — the receiver
// decodes it, runs it, logs its Start, Executing and End together (one wake
// of the stream's sender, one write on the connection) and reads the next
// message. Everything that may wait leaves the receiver first: the call
// calls handoff, exactly once, before it waits for a person (an approval, a
// question), runs hooks (processes), runs a tool that is not Fast, or
// grows its log past what it holds; and a timer calls it when the call has
// run for Config.InlineBudget (a Fast call on a slow filesystem), so the stream
// keeps receiving — a Cancel, an approval of another call — within that
// budget whatever the call does (one timer per stream, see inlineWatch).
// After handoff the call goes on where it
// is, as any call; the receiver's caller receives on another goroutine.
//
// What does not change: the call is admitted, registered and canceled
// exactly as a call run on its own goroutine (Start registers it before run;
// Cancel finds it; its context is the session's child), a panic in the tool
// is fenced by guard as for every call, its End is logged and the call
// forgotten in one step under the session's lock, and a stream that drops
// leaves it to a resuming stream as any other.

// DefaultInlineBudget is how long a call may run on the receiving
// goroutine before the stream receives on another one (see Inline calls
// above), unless Config.InlineBudget says otherwise.
const DefaultInlineBudget = time.Millisecond

// Inline states: the call runs on the receiver; the receiver has been
// handed off; the call ended on the receiver (the receiver goes on).
const (
	inlineRunning int32 = iota
	inlineHanded
	inlineDone
)

// inlineWatch is the inline budget's timer of one stream's receiver (its
// Attachment): one timer for all its calls, re-armed lazily, instead of one
// armed and stopped per call. At most one call runs on the receiver at a
// time (the next one is received only after it ended or handed off), so
// cur is that call. When the timer fires it hands cur off if cur has run
// for the budget, re-arms for the rest of cur's budget if it has not, and
// stays unarmed when no call runs; a call that starts while the timer is
// armed leaves it be (the timer fires at or before the new call's budget
// and then re-arms for the rest). So a stream whose calls follow each other
// arms the timer about once a budget, not once a call, and every call is
// still handed off once it has run for the budget, as from a timer of its
// own.
type inlineWatch struct {
	mu    sync.Mutex
	cur   *inlineCall // the call running on the receiver, or nil
	armed bool        // the timer is pending (or its func is running)
	timer *time.Timer
}

// begin makes c the receiver's call and arms the timer if it is not. A
// call begun while another runs on a receiver of the same Attachment (two
// receivers: not a stream's shape, but Start allows it) gets a timer of
// its own.
func (w *inlineWatch) begin(c *inlineCall, budget time.Duration) {
	w.mu.Lock()
	if w.cur != nil {
		w.mu.Unlock()
		c.own = time.AfterFunc(budget, c.release)
		return
	}
	w.cur = c
	if !w.armed {
		w.armed = true
		if w.timer == nil {
			w.timer = time.AfterFunc(budget, w.fire)
		} else {
			w.timer.Reset(budget)
		}
	}
	w.mu.Unlock()
}

// leave forgets c, which ended; the call's goroutine only. The shared
// timer stays as it is.
func (w *inlineWatch) leave(c *inlineCall) {
	if c.own != nil {
		c.own.Stop()
		return
	}
	w.forget(c)
}

// forget clears c from the receiver's place, if it is there: it ended or
// was handed off.
func (w *inlineWatch) forget(c *inlineCall) {
	w.mu.Lock()
	if w.cur == c {
		w.cur = nil
	}
	w.mu.Unlock()
}

// fire hands cur off once it has run for the budget. It takes the call
// from running to handed under w.mu, where the call's end (leave, then its
// own transition) cannot come between: a call fire hands off is never one
// that ended meanwhile and was reused (see Attachment.spareCall).
func (w *inlineWatch) fire() {
	w.mu.Lock()
	c := w.cur
	if c != nil {
		if left := c.budget - time.Since(c.began); left > 0 {
			w.timer.Reset(left)
			w.mu.Unlock()
			return
		}
		w.cur = nil
	}
	w.armed = false
	handed := c != nil && c.state.CompareAndSwap(inlineRunning, inlineHanded)
	w.mu.Unlock()
	if handed {
		c.handoff()
	}
}

// inlineCall is a call running on the goroutine that received it. held is
// touched only by the call's goroutine; state by the call and the timer.
type inlineCall struct {
	s       *session
	state   atomic.Int32
	handoff func()
	watch   *inlineWatch
	own     *time.Timer // see inlineWatch.begin
	began   time.Time
	budget  time.Duration
	// held are the call's events not yet in the log: while the call runs
	// on the receiver they wait for its End (or a handoff), to leave
	// together.
	held []events.Event
	// heldBuf holds a Fast call's Start and Executing, and its End after
	// them (see session.run), without an allocation.
	heldBuf [3]events.Event
}

// newInlineCall begins a call on the receiver, in spare when not nil (an
// Instant call's that ended on the receiver: see Attachment.spareCall).
func newInlineCall(s *session, w *inlineWatch, handoff func(), spare *inlineCall) *inlineCall {
	c := spare
	if c == nil {
		c = &inlineCall{}
	}
	c.s, c.handoff, c.watch, c.own = s, handoff, w, nil
	c.began, c.budget = time.Now(), s.x.cfg.InlineBudget
	c.state.Store(inlineRunning)
	c.held = c.heldBuf[:0]
	w.begin(c, c.budget)
	return c
}

// reusable reports whether c may begin another call once this one's End is
// logged: it ran an Instant operation (whose sink has no capabilities, so
// nothing of the call can reach c after its End), ended on the receiver,
// and the shared timer watched it (fire makes its transition under the
// watch's lock; a timer of its own might still fire). Its events are then
// cleared for the next call.
func (c *inlineCall) reusable(instant bool) bool {
	if c == nil || !instant || c.own != nil || c.state.Load() != inlineDone {
		return false
	}
	clear(c.heldBuf[:])
	c.held = nil
	c.handoff = nil
	return true
}

// release hands receiving off, once; safe from any goroutine.
func (c *inlineCall) release() {
	if c != nil && c.state.CompareAndSwap(inlineRunning, inlineHanded) {
		c.watch.forget(c)
		c.handoff()
	}
}

// mayWait is called by the call's goroutine before something that may
// wait: receiving moves on, and the events held so far are logged (so the
// client sees the call's Start before it waits).
func (c *inlineCall) mayWait() {
	if c == nil {
		return
	}
	c.release()
	c.flush()
}

// hold keeps ev for the End while the call runs on the receiver, reporting
// false (log it now) once receiving was handed off; the events held then go
// first. Only the call's goroutine calls it.
func (c *inlineCall) hold(ev events.Event) bool {
	if c == nil {
		return false
	}
	if c.state.Load() == inlineRunning && len(c.held) < 16 {
		c.held = append(c.held, ev)
		return true
	}
	c.mayWait()
	return false
}

// flush logs the held events; the call's goroutine only.
func (c *inlineCall) flush() {
	if c == nil || len(c.held) == 0 {
		return
	}
	if _, err := c.s.log.Append(c.s.ctx, c.held...); err != nil {
		c.s.x.cfg.Logger.Debug("event dropped: session over", "err", err)
	}
	clear(c.held)
	c.held = c.held[:0]
}

// end is called when the call ended, before its End is logged: it returns
// the events to log before the End, and reports whether receiving was
// handed off.
func (c *inlineCall) end() (held []events.Event, handed bool) {
	if c == nil {
		return nil, false
	}
	c.watch.leave(c)
	if c.state.CompareAndSwap(inlineRunning, inlineDone) {
		return c.held, false
	}
	return c.held, true
}
