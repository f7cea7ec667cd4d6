package events

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/toold/toold/pkg/tools"
)

// ErrClosed is returned by Push and Output after Close.
var ErrClosed = errors.New("event queue closed")

// QueueConfig bounds a Queue. Zero fields take the defaults.
type QueueConfig struct {
	// MaxEvents is how many events may wait for the sender (default 1024).
	MaxEvents int
	// MaxPendingOutput is how many output bytes may wait for the sender
	// across all calls (default 1 MiB).
	MaxPendingOutput int
	// MaxChunk caps one output chunk (default 256 KiB).
	MaxChunk int
}

func (c QueueConfig) withDefaults() QueueConfig {
	if c.MaxEvents <= 0 {
		c.MaxEvents = 1024
	}
	if c.MaxPendingOutput <= 0 {
		c.MaxPendingOutput = 1 << 20
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

// item is a queued event; an output item keeps growing while it waits.
type item struct {
	ev  Event
	out *Chunk
	key outKey
}

// Queue orders the events of one stream. Any number of goroutines may Push
// and Output; exactly one goroutine calls Next.
type Queue struct {
	cfg QueueConfig

	mu       sync.Mutex
	items    []*item
	head     int // items[head:] are pending
	open     map[outKey]*item
	offsets  map[outKey]uint64
	pending  int           // output bytes waiting
	wake     chan struct{} // cap 1: signals the sender
	space    chan struct{} // closed and replaced when room is made
	closed   bool
	seq      uint64
	lastSent time.Time
	timer    *time.Timer // the keepalive timer; only Next (one goroutine) uses it
}

// NewQueue returns an empty queue.
func NewQueue(cfg QueueConfig) *Queue {
	return &Queue{
		cfg:     cfg.withDefaults(),
		open:    map[outKey]*item{},
		offsets: map[outKey]uint64{},
		wake:    make(chan struct{}, 1),
		space:   make(chan struct{}),
		// Keepalives count idleness from the queue's creation.
		lastSent: time.Now(),
	}
}

func (q *Queue) signal() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// waitSpace releases the lock until room is made or ctx ends; the lock is
// held again when it returns.
func (q *Queue) waitSpace(ctx context.Context) error {
	ch := q.space
	q.mu.Unlock()
	defer q.mu.Lock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

func (q *Queue) full() bool { return len(q.items)-q.head >= q.cfg.MaxEvents }

// Push queues an event. It blocks while the queue is full, until the sender
// makes room, ctx ends, or the queue closes. An event ends the coalescing of
// its call's pending output, so a call's events keep their order.
func (q *Queue) Push(ctx context.Context, ev Event) error {
	if ev.Time.IsZero() {
		ev.Time = time.Now()
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	for !q.closed && q.full() {
		if err := q.waitSpace(ctx); err != nil {
			return err
		}
	}
	if q.closed {
		return ErrClosed
	}
	if ev.CallID != "" {
		for _, s := range [...]tools.Stream{tools.Stdout, tools.Stderr, tools.PTY} {
			delete(q.open, outKey{ev.CallID, s})
		}
	}
	q.items = append(q.items, &item{ev: ev})
	q.signal()
	return nil
}

// PushAll queues events in order as one batch: the sender takes them back to
// back, so the transport can write them together. It waits for room as Push
// does, then appends the whole batch (which may exceed MaxEvents by its
// length).
func (q *Queue) PushAll(ctx context.Context, evs []Event) error {
	if len(evs) == 0 {
		return nil
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	for !q.closed && q.full() {
		if err := q.waitSpace(ctx); err != nil {
			return err
		}
	}
	if q.closed {
		return ErrClosed
	}
	now := time.Now()
	for _, ev := range evs {
		if ev.Time.IsZero() {
			ev.Time = now
		}
		if ev.CallID != "" {
			for _, s := range [...]tools.Stream{tools.Stdout, tools.Stderr, tools.PTY} {
				delete(q.open, outKey{ev.CallID, s})
			}
		}
		q.items = append(q.items, &item{ev: ev})
	}
	q.signal()
	return nil
}

// Output queues output bytes of a call's stream, merging them into the
// call's pending chunk when the sender has not taken it yet. It blocks while
// more than MaxPendingOutput bytes wait (backpressure). p is copied.
func (q *Queue) Output(ctx context.Context, callID string, stream tools.Stream, p []byte) error {
	key := outKey{callID, stream}
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(p) > 0 {
		if q.closed {
			return ErrClosed
		}
		it := q.open[key]
		room := q.cfg.MaxPendingOutput - q.pending
		if it != nil {
			room = min(room, q.cfg.MaxChunk-len(it.out.Data))
		} else {
			room = min(room, q.cfg.MaxChunk)
		}
		if room <= 0 || (it == nil && q.full()) {
			if it != nil && len(it.out.Data) >= q.cfg.MaxChunk {
				// The chunk is full: further bytes start a new one.
				delete(q.open, key)
				continue
			}
			if err := q.waitSpace(ctx); err != nil {
				return err
			}
			continue
		}
		n := min(room, len(p))
		if it == nil {
			it = &item{key: key, ev: Event{CallID: callID, Time: time.Now()}, out: &Chunk{Stream: stream, Offset: q.offsets[key]}}
			if n >= pooledChunkMin {
				it.out.Data = getChunkBuf(q.cfg.MaxChunk)
			}
			q.items = append(q.items, it)
			q.open[key] = it
		}
		it.out.Data = append(it.out.Data, p[:n]...)
		q.offsets[key] += uint64(n)
		q.pending += n
		p = p[n:]
		q.signal()
	}
	return nil
}

// Next returns the next event, assigning its seq. It blocks until an event
// is queued or ctx ends. After Close it returns the remaining events, then
// ErrClosed. If idle is positive and nothing was sent for that long, Next
// returns a Keepalive event.
func (q *Queue) Next(ctx context.Context, idle time.Duration) (Event, error) {
	for {
		q.mu.Lock()
		if q.head < len(q.items) {
			it := q.items[q.head]
			q.items[q.head] = nil
			q.head++
			if q.head == len(q.items) {
				q.items, q.head = q.items[:0], 0
			} else if q.head > 256 && q.head*2 > len(q.items) {
				q.items = append(q.items[:0], q.items[q.head:]...)
				q.head = 0
			}
			ev := it.ev
			if it.out != nil {
				if q.open[it.key] == it {
					delete(q.open, it.key)
				}
				q.pending -= len(it.out.Data)
				ev.Progress = &Progress{Output: it.out, Fraction: -1}
			}
			q.seq++
			ev.Seq = q.seq
			q.lastSent = time.Now()
			close(q.space)
			q.space = make(chan struct{})
			q.mu.Unlock()
			return ev, nil
		}
		if q.closed {
			q.mu.Unlock()
			return Event{}, ErrClosed
		}
		var tick <-chan time.Time
		if idle > 0 {
			wait := time.Until(q.lastSent.Add(idle))
			if wait <= 0 {
				q.seq++
				ev := Event{Seq: q.seq, Time: time.Now(), Keepalive: &Keepalive{}}
				q.lastSent = ev.Time
				q.mu.Unlock()
				return ev, nil
			}
			if q.timer == nil {
				q.timer = time.NewTimer(wait)
			} else {
				q.timer.Reset(wait) // Go 1.23+: Reset discards a pending tick
			}
			tick = q.timer.C
		}
		q.mu.Unlock()
		select {
		case <-q.wake:
		case <-tick:
		case <-ctx.Done():
			return Event{}, context.Cause(ctx)
		}
	}
}

// Close stops accepting events; Next drains what is queued, then returns
// ErrClosed. Blocked producers return ErrClosed.
func (q *Queue) Close() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return
	}
	q.closed = true
	close(q.space)
	q.space = make(chan struct{})
	q.signal()
}

// Len returns how many events wait.
func (q *Queue) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.items) - q.head
}

// pooledChunkMin is the size from which an output chunk's buffer comes from
// (and, through Release, goes back to) a pool: a command streaming hundreds
// of megabytes would otherwise leave a MaxChunk of garbage per chunk. Small
// chunks allocate what they hold, so that many pending small chunks do not
// each pin a MaxChunk.
const pooledChunkMin = 64 << 10

var chunkBufs sync.Map // capacity -> *sync.Pool of *[]byte

func getChunkBuf(size int) []byte {
	pool, _ := chunkBufs.LoadOrStore(size, &sync.Pool{New: func() any { b := make([]byte, 0, size); return &b }})
	return (*pool.(*sync.Pool).Get().(*[]byte))[:0]
}

// Release returns the buffer of an output event's chunk for reuse, once the
// event was sent and nothing refers to its Data any more. Other events are
// left alone.
func Release(ev *Event) {
	if ev.Progress == nil || ev.Progress.Output == nil {
		return
	}
	b := ev.Progress.Output.Data
	ev.Progress.Output.Data = nil
	if pool, ok := chunkBufs.Load(cap(b)); ok && cap(b) >= pooledChunkMin {
		b = b[:0]
		pool.(*sync.Pool).Put(&b)
	}
}
