package history

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
)

// ErrClosed is returned by a Writer's methods after Close.
var ErrClosed = errors.New("history: closed")

// Writer records entries in the background, so that a call's end does not
// wait for the database: Record queues the entry (waiting only while the
// queue is full, which bounds memory and slows a client that outruns the
// store) and one goroutine stores what is queued in batches, one
// transaction each. Query first waits until everything queued before it is
// stored, so a call that ended is found. Close stores what is queued.
//
// Record wakes the writing goroutine only when the queue was empty: the
// entries queued while it lingers join the batch without a wake-up each
// (a channel send per entry woke it once per call — a goroutine switch on
// every call's path, bench/profiles-2026-11-27-hotpath.md).
type Writer struct {
	s     *Store
	onErr func(error)
	max   int

	mu      sync.Mutex
	closed  bool
	queue   []Entry
	spare   []Entry // the queue's other buffer, reused
	flushes []chan struct{}
	// kick wakes the writer for a first entry; now cuts its linger short
	// (a Flush, a full batch, Close). Both have room for one signal.
	kick, now chan struct{}
	// space is closed and replaced when the writer takes the queue.
	space chan struct{}
	done  chan struct{}
}

// maxBatch bounds the entries one transaction stores; linger is how long
// the writer waits for more entries to store them together (a Flush, a full
// batch or Close cut it short): at a few thousand calls a second one
// transaction per call would cost more CPU than the calls.
const (
	maxBatch = 256
	linger   = 20 * time.Millisecond
)

// NewWriter returns a Writer over s with a queue of queue entries (default
// 4096). onErr receives what storing fails with (nil: dropped).
func NewWriter(s *Store, queue int, onErr func(error)) *Writer {
	if queue <= 0 {
		queue = 4096
	}
	if onErr == nil {
		onErr = func(error) {}
	}
	w := &Writer{s: s, onErr: onErr, max: queue, kick: make(chan struct{}, 1), now: make(chan struct{}, 1),
		space: make(chan struct{}), done: make(chan struct{})}
	go w.run()
	return w
}

func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// Record queues e; its ID is not known yet (zero).
func (w *Writer) Record(ctx context.Context, e Entry) (int64, error) {
	w.mu.Lock()
	for !w.closed && len(w.queue) >= w.max {
		space := w.space
		w.mu.Unlock()
		signal(w.now) // the writer stops lingering
		select {
		case <-space:
		case <-ctx.Done():
			return 0, context.Cause(ctx)
		}
		w.mu.Lock()
	}
	if w.closed {
		w.mu.Unlock()
		return 0, ErrClosed
	}
	w.queue = append(w.queue, e)
	n := len(w.queue)
	w.mu.Unlock()
	switch n {
	case 1:
		signal(w.kick)
	case maxBatch:
		signal(w.now)
	}
	return 0, nil
}

// Flush waits until every entry queued before it is stored.
func (w *Writer) Flush(ctx context.Context) error {
	done := make(chan struct{})
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return nil // Close stores everything
	}
	w.flushes = append(w.flushes, done)
	w.mu.Unlock()
	signal(w.kick)
	signal(w.now)
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// Query is Store.Query once every entry recorded before it is stored.
func (w *Writer) Query(ctx context.Context, f Filter) ([]Entry, error) {
	if err := w.Flush(ctx); err != nil {
		return nil, err
	}
	return w.s.Query(ctx, f)
}

// Close stores what is queued and stops the Writer; it does not close the
// Store.
func (w *Writer) Close() error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		<-w.done
		return nil
	}
	w.closed = true
	close(w.space) // Records waiting for room see closed
	w.mu.Unlock()
	signal(w.kick)
	signal(w.now)
	<-w.done
	return nil
}

func (w *Writer) run() {
	defer close(w.done)
	timer := time.NewTimer(linger)
	timer.Stop()
	for {
		<-w.kick
		// Linger for more entries unless something waits for them.
		w.mu.Lock()
		wait := !w.closed && len(w.flushes) == 0 && len(w.queue) < min(maxBatch, w.max)
		w.mu.Unlock()
		if wait {
			timer.Reset(linger)
			select {
			case <-timer.C:
			case <-w.now:
				timer.Stop()
			}
		}
		w.mu.Lock()
		batch, flushed, closed := w.queue, w.flushes, w.closed
		w.queue, w.spare, w.flushes = w.spare[:0], nil, nil
		if !closed {
			close(w.space)
			w.space = make(chan struct{})
		}
		select { // a signal for what was just taken
		case <-w.now:
		default:
		}
		w.mu.Unlock()
		for rest := batch; len(rest) > 0; {
			n := min(len(rest), maxBatch)
			if err := w.s.RecordBatch(context.Background(), rest[:n]); err != nil {
				w.onErr(err)
			}
			rest = rest[n:]
		}
		for _, d := range flushed {
			close(d)
		}
		w.mu.Lock()
		if w.spare == nil && cap(batch) <= 2*maxBatch {
			// Reused; a burst's larger buffer goes to the collector.
			w.spare = clear0(batch)
		}
		more := len(w.queue) > 0 || len(w.flushes) > 0
		w.mu.Unlock()
		if closed && !more {
			return
		}
		if more {
			signal(w.kick)
		}
	}
}

// clear0 zeroes b's whole array (its entries' strings are released) and
// returns it empty.
func clear0(b []Entry) []Entry {
	clear(b[:cap(b)])
	return b[:0]
}

// RecordBatch stores entries in one transaction, insertRows entries to
// an INSERT statement.
func (s *Store) RecordBatch(ctx context.Context, entries []Entry) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("history: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // after Commit it does nothing
	var (
		stmt *sql.Stmt
		rows int // stmt's rows
		args []any
	)
	defer func() {
		if stmt != nil {
			stmt.Close()
		}
	}()
	for rest := entries; len(rest) > 0; {
		n := min(len(rest), insertRows)
		if n != rows {
			if stmt != nil {
				stmt.Close()
			}
			if stmt, err = tx.PrepareContext(ctx, s.q(insertRowsQuery(n))); err != nil {
				stmt = nil
				return fmt.Errorf("history: %w", err)
			}
			rows = n
		}
		args = args[:0]
		for _, e := range rest[:n] {
			args = append(args, s.entryArgs(e)...)
		}
		if _, err := stmt.ExecContext(ctx, args...); err != nil {
			return fmt.Errorf("history: %w", err)
		}
		rest = rest[n:]
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("history: %w", err)
	}
	return s.counted(ctx, len(entries))
}

// insertRows is how many entries one INSERT of RecordBatch stores: one
// statement's step, bind and reset per row were most of an entry's CPU
// with SQLite (BenchmarkRecordBatch). 16 rows are 240 parameters, within
// every SQLite's limit (999 before 3.32).
const insertRows = 16

// insertRowsQuery is insertEntry for n rows.
func insertRowsQuery(n int) string {
	values := insertEntry[strings.Index(insertEntry, "VALUES")+len("VALUES"):]
	values = strings.TrimSpace(values)
	var b strings.Builder
	b.WriteString(insertEntry)
	for range n - 1 {
		b.WriteString(", ")
		b.WriteString(values)
	}
	return b.String()
}
