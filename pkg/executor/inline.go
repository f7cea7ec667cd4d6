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
// Attachment): one timer for all its calls. At most one call runs on the
// receiver at a time (the next one is received only after it ended or
// handed off), so cur is that call.
//
// The timer costs nothing on a call that ends before it could matter: it
// is armed only for a call that needs a budget (timed: not an Instant
// operation, which computes from its arguments alone and cannot wait; see
// inlineCall.timeBudget), once the call is known to be one, for the rest of
// its budget; and stopped when the call leaves the receiver. A Fast call
// that ends within its budget sets and stops a timer (no goroutine, no
// wake-up); only a call still running when its budget is over gets the
// timer's goroutine, which hands it off. When the timer fires for a call
// that is not cur's (it left and the next began), fire re-arms for the
// rest of cur's budget, or stays unarmed.
type inlineWatch struct {
	mu    sync.Mutex
	cur   *inlineCall // the call running on the receiver, or nil
	armed bool        // the timer is pending (or its func is running)
	timer *time.Timer
}

// begin makes c the receiver's call; nothing is armed yet (see
// inlineCall.timeBudget). A call begun while another runs on a receiver of the
// same Attachment (two receivers: not a stream's shape, but Start allows
// it) is alone: it gets a timer of its own if it is timed.
func (w *inlineWatch) begin(c *inlineCall) {
	w.mu.Lock()
	if w.cur != nil {
		c.alone = true
	} else {
		w.cur = c
	}
	w.mu.Unlock()
}

// arm arms the timer for the rest of c's budget, c being cur (see
// inlineCall.timeBudget).
func (w *inlineWatch) arm(c *inlineCall) {
	w.mu.Lock()
	if w.cur == c {
		c.timed = true
		left := max(c.budget-time.Since(c.began), 0)
		w.armed = true
		if w.timer == nil {
			w.timer = time.AfterFunc(left, w.fire)
		} else {
			w.timer.Reset(left)
		}
	}
	w.mu.Unlock()
}

// leave forgets c, which ended; the call's goroutine only. The timer, when
// armed for it, is stopped.
func (w *inlineWatch) leave(c *inlineCall) {
	if c.alone {
		if c.own != nil {
			c.own.Stop()
		}
		return
	}
	w.forget(c)
}

// forget clears c from the receiver's place, if it is there: it ended or
// was handed off. An armed timer is stopped (a fire already under way
// finds no call, or the next one's, and sees to it).
func (w *inlineWatch) forget(c *inlineCall) {
	w.mu.Lock()
	if w.cur == c {
		w.cur = nil
		if w.armed && w.timer.Stop() {
			w.armed = false
		}
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
	if c != nil && !c.timed {
		c = nil // an untimed call began after the one this fire was for
	}
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
	own     *time.Timer // an alone call's timer (see inlineWatch.begin)
	alone   bool        // see inlineWatch.begin
	timed   bool        // the budget is being timed (see inlineCall.timeBudget)
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
	c.s, c.handoff, c.watch, c.own, c.alone, c.timed = s, handoff, w, nil, false, false
	c.began, c.budget = time.Now(), s.x.cfg.InlineBudget
	c.state.Store(inlineRunning)
	c.held = c.heldBuf[:0]
	w.begin(c)
	return c
}

// timeBudget starts timing the call's budget (from its beginning): the executor
// calls it once the call resolved to an operation that is not Instant (or
// did not resolve). Until then the call only decodes and resolves its
// arguments, which computes and cannot wait; an Instant operation is never
// timed (tools.OperationSpec.Instant), so a stream of think calls arms no
// timer at all.
func (c *inlineCall) timeBudget() {
	if c == nil || c.state.Load() != inlineRunning {
		return
	}
	if c.alone {
		if c.own == nil {
			c.own = time.AfterFunc(max(c.budget-time.Since(c.began), 0), c.release)
		}
		return
	}
	c.watch.arm(c)
}

// reusable reports whether c may begin another call once this one's End is
// logged: it ran an Instant operation (whose sink has no capabilities, so
// nothing of the call can reach c after its End), ended on the receiver,
// and was the watch's cur (fire makes its transition under the watch's
// lock; a timer of its own might still fire). Its events are then cleared
// for the next call.
func (c *inlineCall) reusable(instant bool) bool {
	if c == nil || !instant || c.alone || c.state.Load() != inlineDone {
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
