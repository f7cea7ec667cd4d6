package executor

import (
	"context"
	"sync"
	"time"
)

// Deferred records.
//
// What records an ended call — its metrics, its history row, and the audit
// records of a call that had no effect (its decision, call.start and
// call.end) — runs after the call's End has gone to the client, on no
// call's path: the call queues it in the Executor's recorder, which runs
// the queue in batches, on whatever processor the runtime picks: when
// recorderBatch records are queued, when none was queued for
// DefaultRecordLinger (the queue went idle), and at the latest
// recorderWait lingers after the first record of a batch. So while calls
// flow the recorder runs once per recorderBatch calls, with no timer
// firing in between (the timer is pushed back by each record, which costs
// no wake-up; a timer that fired every linger while calls flowed was a
// goroutine and a thread's wake-up about every millisecond). Run on the
// call's goroutine, right after the End was logged, these records ran
// before gRPC wrote the End (gRPC's writer yields once before a small
// write, and the receiver, runnable with its records, took that moment).
//
// The audit records of a call with an effect are not deferred: its
// decision and call.start are written before it runs, its call.end is
// queued in the audit log as soon as the End is logged (docs/audit.md).
//
// The queue is bounded (recorderMax): a call that finds it full waits for
// the recorder to take it (back-pressure on the calls, never unbounded
// memory). FlushRecords runs the queue at once and waits for it; the
// daemon flushes before a history query, an audit tail or verify, and
// Shutdown flushes after the last call ended, so nothing is lost to an
// orderly stop. A crash loses what is queued (at most recorderBatch calls'
// or recorderWait lingers' worth more than the audit log's own queue,
// docs/audit.md).

// DefaultRecordLinger is how long the recorder waits for another record
// before it runs those queued, unless Config.RecordLinger says otherwise.
const DefaultRecordLinger = time.Millisecond

// recorderMax bounds the records waiting for the recorder.
const recorderMax = 4096

// recorderBatch is how many queued records the recorder runs without
// waiting for the queue to go idle; recorderWait is how many lingers the
// first record of a batch waits at most.
const (
	recorderBatch = 64
	recorderWait  = 16
)

// recorder runs queued record jobs in order, one batch at a time.
type recorder struct {
	linger time.Duration
	max    int

	mu       sync.Mutex
	queue    []func()
	spare    []func()
	first    time.Time   // when queue's first job was queued
	due      time.Time   // when the armed timer fires (see add)
	timer    *time.Timer // runs drain; armed while a batch lingers
	armed    bool
	draining bool   // a goroutine runs the queue (only one at a time: order)
	queued   uint64 // jobs ever queued
	done     uint64 // jobs ever run
	// progress is closed (and replaced) whenever jobs were run, so a
	// waiter (a full queue, FlushRecords) can also watch its context.
	progress chan struct{}
}

func newRecorder(linger time.Duration, max int) *recorder {
	r := &recorder{linger: linger, max: max, progress: make(chan struct{})}
	r.timer = time.AfterFunc(time.Hour, r.fire)
	r.timer.Stop()
	return r
}

// add queues job, waiting while the queue is full.
func (r *recorder) add(job func()) {
	r.mu.Lock()
	for len(r.queue) >= r.max {
		r.armLocked(0) // full: run it now
		ch := r.progress
		r.mu.Unlock()
		<-ch
		r.mu.Lock()
	}
	r.queue = append(r.queue, job)
	r.queued++
	switch {
	case r.draining:
		// The drain takes it before it stops.
	case len(r.queue) >= recorderBatch:
		r.draining = true
		if r.armed {
			r.armed = false
			r.timer.Stop()
		}
		go r.drain()
	default:
		now := time.Now()
		if len(r.queue) == 1 {
			r.first = now
		}
		// Within a linger of this record, unless the first waited
		// long enough already: the deadline only ever moves later, and
		// moving a pending timer later wakes nothing. It is moved once
		// it is a quarter linger short, not for every record (64
		// concurrent calls would take turns at the timer).
		due := now.Add(r.linger)
		if last := r.first.Add(recorderWait * r.linger); last.Before(due) {
			due = last
		}
		if !r.armed || due.Sub(r.due) >= r.linger/4 || due.Before(r.due) {
			r.due = due
			r.armLocked(max(due.Sub(now), 0))
		}
	}
	r.mu.Unlock()
}

// armLocked makes the drain run in d (unless one runs: it takes what is
// queued before it stops).
func (r *recorder) armLocked(d time.Duration) {
	if r.draining {
		return
	}
	r.armed = true
	r.timer.Reset(d)
}

// drain runs the queue; its goroutine was started with r.draining set.
func (r *recorder) drain() {
	r.mu.Lock()
	r.drainLocked()
	r.mu.Unlock()
}

// fire is the timer's: it runs the queue unless a drain already does.
func (r *recorder) fire() {
	r.mu.Lock()
	r.armed = false
	if r.draining {
		r.mu.Unlock()
		return
	}
	r.draining = true
	r.drainLocked()
	r.mu.Unlock()
}

// drainLocked runs the queue until it is empty (r.mu held, released while
// jobs run), then ends the drain.
func (r *recorder) drainLocked() {
	for len(r.queue) > 0 {
		batch := r.queue
		r.queue, r.spare = r.spare[:0], nil
		r.mu.Unlock()
		for _, job := range batch {
			job()
		}
		clear(batch)
		r.mu.Lock()
		if cap(batch) <= r.max { // a burst's larger array is not kept
			r.spare = batch[:0]
		}
		r.done += uint64(len(batch))
		close(r.progress)
		r.progress = make(chan struct{})
	}
	r.draining = false
	if r.armed {
		r.armed = false
		r.timer.Stop()
	}
}

// flush runs every job queued before it (on this goroutine, unless a drain
// runs already) and waits until they ran or ctx ends.
func (r *recorder) flush(ctx context.Context) error {
	r.mu.Lock()
	target := r.queued
	if !r.draining && len(r.queue) > 0 {
		r.draining = true
		r.drainLocked()
	}
	for r.done < target {
		ch := r.progress
		r.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
		r.mu.Lock()
	}
	r.mu.Unlock()
	return nil
}
