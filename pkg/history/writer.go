package history

import (
	"context"
	"errors"
	"fmt"
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
type Writer struct {
	s     *Store
	onErr func(error)

	mu     sync.RWMutex // Record and Flush hold it shared; Close exclusive
	closed bool
	ch     chan item
	done   chan struct{}
}

// item is an entry to store, or a flush marker (done set). The entry is
// held by pointer: a queue of 4096 Entry values was 1.2 MB allocated at
// start, most of an idle toold's heap; one small allocation a call is
// cheaper than that.
type item struct {
	e    *Entry
	done chan struct{}
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
	w := &Writer{s: s, onErr: onErr, ch: make(chan item, queue), done: make(chan struct{})}
	go w.run()
	return w
}

// Record queues e; its ID is not known yet (zero).
func (w *Writer) Record(ctx context.Context, e Entry) (int64, error) {
	w.mu.RLock()
	defer w.mu.RUnlock()
	if w.closed {
		return 0, ErrClosed
	}
	select {
	case w.ch <- item{e: &e}:
		return 0, nil
	case <-ctx.Done():
		return 0, context.Cause(ctx)
	}
}

// Flush waits until every entry queued before it is stored.
func (w *Writer) Flush(ctx context.Context) error {
	done := make(chan struct{})
	w.mu.RLock()
	if w.closed {
		w.mu.RUnlock()
		return nil // Close stored everything
	}
	select {
	case w.ch <- item{done: done}:
	case <-ctx.Done():
		w.mu.RUnlock()
		return context.Cause(ctx)
	}
	w.mu.RUnlock()
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
		return nil
	}
	w.closed = true
	close(w.ch)
	w.mu.Unlock()
	<-w.done
	return nil
}

func (w *Writer) run() {
	defer close(w.done)
	batch := make([]Entry, 0, maxBatch)
	var flushed []chan struct{}
	for it := range w.ch {
		batch, flushed = batch[:0], flushed[:0]
		add := func(it item) {
			if it.done != nil {
				flushed = append(flushed, it.done)
			} else {
				batch = append(batch, *it.e)
			}
		}
		add(it)
		timer := time.NewTimer(linger)
	more:
		for len(batch) < maxBatch && len(flushed) == 0 {
			select {
			case it, ok := <-w.ch:
				if !ok {
					break more
				}
				add(it)
			case <-timer.C:
				break more
			}
		}
		timer.Stop()
		if len(batch) > 0 {
			if err := w.s.RecordBatch(context.Background(), batch); err != nil {
				w.onErr(err)
			}
		}
		for _, d := range flushed {
			close(d)
		}
	}
}

// RecordBatch stores entries in one transaction.
func (s *Store) RecordBatch(ctx context.Context, entries []Entry) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("history: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // after Commit it does nothing
	stmt, err := tx.PrepareContext(ctx, s.q(insertEntry))
	if err != nil {
		return fmt.Errorf("history: %w", err)
	}
	defer stmt.Close()
	for _, e := range entries {
		if _, err := stmt.ExecContext(ctx, s.entryArgs(e)...); err != nil {
			return fmt.Errorf("history: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("history: %w", err)
	}
	return s.counted(ctx, len(entries))
}
