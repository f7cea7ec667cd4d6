package events

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/toold/toold/pkg/tools"
)

// ErrClosed is returned by Append and Output once the log is closed, and by
// Read once a closed log has been read to its end.
var ErrClosed = errors.New("event log closed")

// ErrIdle is returned by Read when nothing was appended for the idle time:
// the reader sends a Keepalive.
var ErrIdle = errors.New("event log idle")

// LogConfig bounds a Log. Zero fields take the defaults.
type LogConfig struct {
	// TailEvents and TailBytes bound what the log keeps of events already
	// sent, for a reader that resumes (defaults 4096 events, 4 MiB; an
	// output chunk counts the capacity of its buffer). The events the
	// reader took last, which it may not have sent yet, are kept on top of
	// the bounds until it reads again: a stream that drops while sending
	// them leaves them for the stream that resumes it.
	TailEvents int
	TailBytes  int
	// MaxUnread is how many events may wait for the reader before Append
	// blocks (default 1024); MaxUnreadOutput is how many output bytes
	// (default 1 MiB). This is the backpressure: a slow reader, or none,
	// makes producers (a command writing output) wait.
	MaxUnread       int
	MaxUnreadOutput int
	// MaxChunk caps one output chunk (default 256 KiB).
	MaxChunk int
	// GatherBytes and GatherWait batch output for the reader: when what
	// is unread is only output, less than GatherBytes of it, Read waits
	// up to GatherWait for more to join it (output coalesces into unread
	// chunks, see Output) before taking it. A command that writes in small
	// pieces then leaves in chunks of tens of KiB instead of one message
	// per write(2) — the per-message cost, not the bytes, was what a busy
	// machine's stream spent its time on (bench/profiles-2026-11-27-
	// sendpath.md). Anything else unread (a call's End, a question) ends
	// the wait at once; so does the log's closing. Zero GatherBytes gathers
	// nothing.
	GatherBytes int
	GatherWait  time.Duration
	// Coalesced, when set, is told of each write merged into an unread
	// chunk; Dropped of output bytes nobody will read (appended after
	// Discard). Both are called with the log's lock held: keep them cheap.
	Coalesced func()
	Dropped   func(bytes int)
}

func (c LogConfig) withDefaults() LogConfig {
	if c.TailEvents <= 0 {
		c.TailEvents = 4096
	}
	if c.TailBytes <= 0 {
		c.TailBytes = 4 << 20
	}
	if c.MaxUnread <= 0 {
		c.MaxUnread = 1024
	}
	if c.MaxUnreadOutput <= 0 {
		c.MaxUnreadOutput = 1 << 20
	}
	if c.MaxChunk <= 0 {
		c.MaxChunk = 256 << 10
	}
	return c
}

type outKey struct {
	call   string
	stream tools.Stream
}

// Log is the event log of a conversation's calls. Events get their Seq when
// they are appended (1, 2, 3, … per log), so a seq is a cursor a reader can
// resume from. The log keeps every event not yet read, the events the
// reader took last (it has sent them only once it reads again), and a
// bounded tail of events it sent (TailEvents, TailBytes): a reader that
// reattaches may ask for events it was sent but never got.
//
// Any number of goroutines append; one reader at a time reads. Events of
// one call keep the order their producer appended them in. Output bytes of
// a call's stream are coalesced into the last unread chunk of that stream
// while no other event of the call came after it.
//
// Appending blocks while MaxUnread events or MaxUnreadOutput output bytes
// wait for the reader (backpressure), until the reader catches up, the
// producer's context ends, or the log stops blocking (Discard) or closes.
type Log struct {
	cfg LogConfig

	mu  sync.Mutex
	evs []Event // evs[i].Seq == first+i
	// buf is evs's whole array when evs starts off slots into it (the
	// events trimmed from the front since push last compacted it).
	buf   []Event
	off   int
	first uint64 // seq of evs[0]; 1 when nothing was evicted
	read  uint64 // the last seq the reader took
	// sent is the last seq the reader has sent: it reads again only once
	// it sent what it took, so every event it took before its last read.
	// Only events up to sent leave the tail (trim); those after it, up to
	// read, are the batch it is sending, and a stream that drops while
	// sending them never got them.
	sent      uint64
	tailBytes int // bytes of the events sent (first … sent)
	unreadOut int // output bytes not read yet
	open      map[outKey]uint64
	offsets   map[outKey]uint64
	wake      chan struct{} // cap 1: signals the reader
	// space is closed when room is made, for the appenders waiting for it;
	// nil while none waits (made by the first waiter: a reader makes
	// room on every read, and a channel each time was one of a no-op
	// call's allocations).
	space    chan struct{}
	closed   bool
	discard  bool // nobody will read: Append never blocks
	lastRead time.Time
	timer    *time.Timer
	gather   *time.Timer   // Read's wait for output to gather
	done     chan struct{} // closed by Close
	// recycle holds the buffers of large chunks evicted from the tail; they
	// go back to the pool at the reader's next read, when it has sent
	// everything it took before (see bufPool). Only sent events leave the
	// tail, so this is a second guard: a buffer is never handed out again
	// while a reader that took its chunk may still marshal it.
	recycle [][]byte
}

// Large output chunks take their buffers from a pool: a command streaming
// hundreds of megabytes would otherwise leave a MaxChunk of garbage per
// chunk. A buffer returns to the pool only once its chunk has left the tail
// and the reader has sent it (it reads again only after sending what it
// took), or nobody will read it (Discard).
const pooledChunkMin = 64 << 10

// The pool is tools' (tools.Buffer), shared with the tools that read output
// into buffers of it and hand them over (Adopt).
func getBuf(size int) []byte { return tools.Buffer(size) }

func putBuf(b []byte) { tools.FreeBuffer(b) }

// NewLog returns an empty log; its first event gets seq 1.
func NewLog(cfg LogConfig) *Log {
	return &Log{
		cfg:      cfg.withDefaults(),
		first:    1,
		open:     map[outKey]uint64{},
		offsets:  map[outKey]uint64{},
		wake:     make(chan struct{}, 1),
		lastRead: time.Now(),
		done:     make(chan struct{}),
	}
}

// TryRead is Read without waiting: it returns the unread events (at most
// max, all when max is zero), possibly none.
func (l *Log) TryRead(buf []Event, max int) []Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.takeLocked(buf, max)
}

// HasUnread reports whether events wait for the reader.
func (l *Log) HasUnread() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.unread() > 0
}

// Wake receives a value when an event or output was appended: a reader that
// does not block in Read waits on it.
func (l *Log) Wake() <-chan struct{} { return l.wake }

// Done is closed when the log is closed (unread events may remain).
func (l *Log) Done() <-chan struct{} { return l.done }

// takeLocked moves the cursor past up to max unread events and appends them
// to buf; l.mu is held.
func (l *Log) takeLocked(buf []Event, max int) []Event {
	// The reader has sent what it took before: evicted buffers are free,
	// and its last batch joins the tail.
	for i, b := range l.recycle {
		putBuf(b)
		l.recycle[i] = nil
	}
	l.recycle = l.recycle[:0]
	l.sentTo(l.read)
	l.trim()
	n := l.unread()
	if n == 0 {
		return buf
	}
	if max > 0 && n > max {
		n = max
	}
	from := int(l.read + 1 - l.first)
	buf = append(buf, l.evs[from:from+n]...)
	for i := from; i < from+n; i++ {
		if o := l.evs[i].Progress; o != nil && o.Output != nil {
			l.unreadOut -= len(o.Output.Data)
		}
	}
	l.read += uint64(n)
	l.lastRead = time.Now()
	l.roomMade()
	return buf
}

func (l *Log) next() uint64 { return l.first + uint64(len(l.evs)) }

// sentTo moves the sent cursor to seq (first-1 … read), keeping tailBytes
// the bytes of the events up to it; l.mu is held.
func (l *Log) sentTo(seq uint64) {
	for s := l.sent + 1; s <= seq; s++ {
		l.tailBytes += size(&l.evs[s-l.first])
	}
	for s := seq + 1; s <= l.sent; s++ {
		l.tailBytes -= size(&l.evs[s-l.first])
	}
	l.sent = seq
}

func (l *Log) unread() int { return int(l.next() - 1 - l.read) }

func (l *Log) signal() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

func (l *Log) roomMade() {
	if l.space != nil {
		close(l.space)
		l.space = nil
	}
}

// waitSpace releases the lock until room is made or ctx ends.
func (l *Log) waitSpace(ctx context.Context) error {
	if l.space == nil {
		l.space = make(chan struct{})
	}
	ch := l.space
	l.mu.Unlock()
	defer l.mu.Lock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

func (l *Log) blocked() bool {
	return !l.discard && l.unread() >= l.cfg.MaxUnread
}

// Append adds events in order, as one batch (the reader takes them back to
// back), and returns the seq of the last one. It waits for room as the
// log's bounds say, then appends the whole batch. Appending does no I/O and
// calls nothing: it wakes the reader (see Wake, Read).
func (l *Log) Append(ctx context.Context, evs ...Event) (uint64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for !l.closed && l.blocked() {
		if err := l.waitSpace(ctx); err != nil {
			return 0, err
		}
	}
	if l.closed {
		return 0, ErrClosed
	}
	l.put(evs)
	return l.next() - 1, nil
}

// Force appends like Append without waiting for room (for a few events that
// must be logged under a caller's lock; it never blocks, so that is safe);
// it returns the seq of the last one, zero when the log is closed.
func (l *Log) Force(evs ...Event) uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return 0
	}
	l.put(evs)
	return l.next() - 1
}

// put appends evs, stamping their seq (and time, when unset); an event of
// a call ends the coalescing of that call's output. l.mu is held.
func (l *Log) put(evs []Event) {
	now := time.Now()
	for _, ev := range evs {
		if ev.Time.IsZero() {
			ev.Time = now
		}
		if ev.CallID != "" {
			for _, s := range [...]tools.Stream{tools.Stdout, tools.Stderr, tools.PTY} {
				delete(l.open, outKey{ev.CallID, s})
			}
		}
		ev.Seq = l.next()
		l.push(ev)
	}
	l.appended()
}

// push appends ev to evs, reusing the slots trimmed from the front: a log
// at its tail's bound drops one event for each one appended, and append
// after reslicing forward copied the whole tail into a new array every few
// hundred events (a tenth of a no-op call's allocations). Compacting once
// a quarter of the array is free costs a few copied events per event.
func (l *Log) push(ev Event) {
	if len(l.evs) == cap(l.evs) && l.off > 0 && l.off >= len(l.evs)/4 {
		n := copy(l.buf, l.evs)
		clear(l.buf[n:])
		l.evs, l.off = l.buf[:n], 0
	}
	grow := len(l.evs) == cap(l.evs)
	l.evs = append(l.evs, ev)
	if grow {
		l.buf, l.off = l.evs[:cap(l.evs)], 0
	}
}

// appended wakes the reader; with nobody to read (Discard), what was
// appended counts as read at once, so the tail's bounds apply to it.
func (l *Log) appended() {
	if l.discard {
		l.markAllRead()
		return
	}
	l.signal()
	l.trim()
}

// Output appends output bytes of a call's stream, merging them into the
// stream's last chunk while the reader has not taken it. It blocks while
// MaxUnreadOutput bytes wait. p is copied.
func (l *Log) Output(ctx context.Context, callID string, stream tools.Stream, p []byte) error {
	key := outKey{callID, stream}
	l.mu.Lock()
	defer l.mu.Unlock()
	for len(p) > 0 {
		if l.closed {
			return ErrClosed
		}
		var chunk *Chunk
		if seq, ok := l.open[key]; ok && seq > l.read && seq >= l.first {
			chunk = l.evs[seq-l.first].Progress.Output
		}
		room := l.cfg.MaxUnreadOutput - l.unreadOut
		if l.discard {
			room = l.cfg.MaxChunk
		}
		if chunk != nil {
			room = min(room, l.cfg.MaxChunk-len(chunk.Data))
		} else {
			room = min(room, l.cfg.MaxChunk)
		}
		if room <= 0 || (chunk == nil && l.blocked()) {
			if chunk != nil && len(chunk.Data) >= l.cfg.MaxChunk {
				delete(l.open, key) // full: the next bytes start a chunk
				continue
			}
			if err := l.waitSpace(ctx); err != nil {
				return err
			}
			continue
		}
		n := min(room, len(p))
		switch {
		case l.discard && l.cfg.Dropped != nil:
			l.cfg.Dropped(n)
		case chunk != nil && l.cfg.Coalesced != nil:
			l.cfg.Coalesced()
		}
		if chunk == nil {
			chunk = &Chunk{Stream: stream, Offset: l.offsets[key]}
			if n >= pooledChunkMin && l.cfg.MaxChunk >= pooledChunkMin {
				chunk.Data = getBuf(l.cfg.MaxChunk)
			} else {
				chunk.Data = make([]byte, 0, min(max(n, 512), l.cfg.MaxChunk))
			}
			l.open[key] = l.next()
			l.push(Event{CallID: callID, Seq: l.next(), Time: time.Now(),
				Progress: &Progress{Output: chunk, Fraction: -1}})
		}
		if len(chunk.Data)+n > cap(chunk.Data) && len(chunk.Data)+n >= pooledChunkMin && l.cfg.MaxChunk >= pooledChunkMin {
			// A chunk begun small outgrows its buffer: move it to a
			// pooled one once, where append would double it (a copy and
			// a garbage buffer each time, 180 MB of garbage for 600 MB
			// streamed by a slowed reader: bench/profiles-2026-11-27-outpath.md).
			chunk.Data = append(getBuf(l.cfg.MaxChunk), chunk.Data...)
		}
		chunk.Data = append(chunk.Data, p[:n]...)
		l.offsets[key] += uint64(n)
		l.unreadOut += n
		p = p[n:]
		l.appended()
	}
	return nil
}

// Adopt appends output bytes of a call's stream like Output, but takes p
// instead of copying it: a buffer of capacity MaxChunk from tools.Buffer
// (tools.OutputBuffer for the default MaxChunk) becomes the data of a new
// chunk and goes back to the pool once the chunk has left the tail and been
// sent. The caller must not use p afterwards, whatever Adopt returns. It
// waits until p fits under MaxUnreadOutput as a whole. A p that cannot be
// kept as it is (another capacity, under 64 KiB, larger than
// MaxUnreadOutput) is copied as Output does, then freed.
func (l *Log) Adopt(ctx context.Context, callID string, stream tools.Stream, p []byte) error {
	if cap(p) != l.cfg.MaxChunk || len(p) < pooledChunkMin || len(p) > l.cfg.MaxUnreadOutput {
		err := l.Output(ctx, callID, stream, p)
		putBuf(p)
		return err
	}
	key := outKey{callID, stream}
	l.mu.Lock()
	defer l.mu.Unlock()
	for {
		if l.closed {
			putBuf(p)
			return ErrClosed
		}
		if l.discard || (!l.blocked() && l.cfg.MaxUnreadOutput-l.unreadOut >= len(p)) {
			break
		}
		if err := l.waitSpace(ctx); err != nil {
			putBuf(p)
			return err
		}
	}
	if l.discard && l.cfg.Dropped != nil {
		l.cfg.Dropped(len(p))
	}
	// A chunk of its own, which what the stream writes next may join
	// while it is unread (its buffer has the room).
	l.open[key] = l.next()
	l.push(Event{CallID: callID, Seq: l.next(), Time: time.Now(),
		Progress: &Progress{Output: &Chunk{Stream: stream, Offset: l.offsets[key], Data: p}, Fraction: -1}})
	l.offsets[key] += uint64(len(p))
	l.unreadOut += len(p)
	l.appended()
	return nil
}

// size approximates the memory an event holds.
func size(ev *Event) int {
	n := 64
	if ev.Progress != nil && ev.Progress.Output != nil {
		// The memory held: a pooled chunk's whole buffer.
		n += cap(ev.Progress.Output.Data)
	}
	if ev.End != nil && ev.End.Result != nil {
		n += len(ev.End.Result.Text) + len(ev.End.Result.JSON)
	}
	if ev.Approval != nil {
		n += len(ev.Approval.Diff)
	}
	return n
}

// trim drops sent events beyond the tail's bounds.
func (l *Log) trim() {
	drop := 0
	for drop < len(l.evs) && l.first+uint64(drop) <= l.sent &&
		(int(l.sent-l.first)+1-drop > l.cfg.TailEvents || l.tailBytes > l.cfg.TailBytes) {
		ev := &l.evs[drop]
		l.tailBytes -= size(ev)
		if ev.Progress != nil && ev.Progress.Output != nil && cap(ev.Progress.Output.Data) >= pooledChunkMin {
			if l.discard {
				putBuf(ev.Progress.Output.Data)
			} else {
				l.recycle = append(l.recycle, ev.Progress.Output.Data)
			}
		}
		l.evs[drop] = Event{}
		drop++
	}
	if drop == 0 {
		return
	}
	l.first += uint64(drop)
	if drop*2 >= len(l.evs) || drop > 256 {
		l.evs = append(l.evs[:0:0], l.evs[drop:]...)
		l.buf, l.off = l.evs[:cap(l.evs)], 0
	} else {
		l.evs = l.evs[drop:]
		l.off += drop
	}
}

// Read returns the events after the reader's cursor, at most max (all when
// max is zero), and moves the cursor past them. It blocks until there is
// one, ctx ends, or, when idle is positive and nothing was read for that
// long, returns ErrIdle. A closed log returns what is left, then ErrClosed.
// The events returned must not be modified; they stay in the tail.
func (l *Log) Read(ctx context.Context, buf []Event, max int, idle time.Duration) ([]Event, error) {
	var gatherUntil time.Time
	for {
		l.mu.Lock()
		if l.unread() > 0 {
			if l.gathering() {
				// Only a little output is unread: let more join it.
				now := time.Now()
				if gatherUntil.IsZero() {
					gatherUntil = now.Add(l.cfg.GatherWait)
				}
				if wait := gatherUntil.Sub(now); wait > 0 {
					if l.gather == nil {
						l.gather = time.NewTimer(wait)
					} else {
						l.gather.Reset(wait)
					}
					tick := l.gather.C
					l.mu.Unlock()
					select {
					case <-l.wake:
						l.gather.Stop()
						continue
					case <-tick:
					case <-ctx.Done():
						l.gather.Stop()
						return buf, context.Cause(ctx)
					}
					l.mu.Lock()
				}
			}
			buf = l.takeLocked(buf, max)
			l.mu.Unlock()
			return buf, nil
		}
		if l.closed {
			l.mu.Unlock()
			return buf, ErrClosed
		}
		var tick <-chan time.Time
		if idle > 0 {
			wait := time.Until(l.lastRead.Add(idle))
			if wait <= 0 {
				l.lastRead = time.Now()
				l.mu.Unlock()
				return buf, ErrIdle
			}
			if l.timer == nil {
				l.timer = time.NewTimer(wait)
			} else {
				l.timer.Reset(wait)
			}
			tick = l.timer.C
		}
		l.mu.Unlock()
		select {
		case <-l.wake:
		case <-tick:
		case <-ctx.Done():
			return buf, context.Cause(ctx)
		}
	}
}

// gathering reports whether Read should wait for more output to gather
// (see LogConfig.GatherBytes): everything unread is output, less than
// GatherBytes of it, and the log is open and read. l.mu is held.
func (l *Log) gathering() bool {
	if l.cfg.GatherBytes <= 0 || l.closed || l.discard || l.unreadOut >= l.cfg.GatherBytes {
		return false
	}
	from, n := int(l.read+1-l.first), l.unread()
	for i := from; i < from+n; i++ {
		if p := l.evs[i].Progress; p == nil || p.Output == nil {
			return false
		}
	}
	return true
}

// Rewind moves the reader's cursor back to after (a reader resuming from
// the last seq it received) and returns the seq the next Read starts from:
// after+1, or the first seq the log still holds when the tail no longer
// reaches back that far. A cursor beyond the last appended event is taken
// as the last one.
func (l *Log) Rewind(after uint64) uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	last := l.next() - 1
	after = min(after, last)
	if after+1 < l.first {
		after = l.first - 1
	}
	if after > l.read {
		// Events the reader never took are skipped: they count as read.
		for s := l.read + 1; s <= after; s++ {
			if o := l.evs[s-l.first].Progress; o != nil && o.Output != nil {
				l.unreadOut -= len(o.Output.Data)
			}
		}
		l.roomMade()
	}
	for s := after + 1; s <= l.read; s++ {
		if o := l.evs[s-l.first].Progress; o != nil && o.Output != nil {
			l.unreadOut += len(o.Output.Data)
		}
	}
	// What the reader got, up to after, is sent; the rest is unread again.
	l.sentTo(after)
	l.read = after
	l.lastRead = time.Now()
	l.signal()
	return after + 1
}

// Last returns the seq of the last event appended (zero when none).
func (l *Log) Last() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.next() - 1
}

// Discard makes Append and Output stop waiting for a reader (nobody will
// come): unread events then count as read and are kept only as the tail's
// bounds allow.
func (l *Log) Discard() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.discard = true
	l.markAllRead()
}

// markAllRead marks everything appended as read and sent; l.mu is held.
func (l *Log) markAllRead() {
	for s := l.read + 1; s < l.next(); s++ {
		if o := l.evs[s-l.first].Progress; o != nil && o.Output != nil {
			l.unreadOut -= len(o.Output.Data)
		}
	}
	l.read = l.next() - 1
	l.sentTo(l.read)
	l.trim()
	l.roomMade()
}

// Close ends the log: appends fail with ErrClosed; Read returns what is
// left, then ErrClosed.
func (l *Log) Close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return
	}
	l.closed = true
	close(l.done)
	l.roomMade()
	l.signal()
}
