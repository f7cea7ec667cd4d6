package executor

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toold/toold/pkg/testenv"
)

// The recorder's queue is bounded: a job that finds it full waits until
// the recorder has run what is queued (it runs it at once, linger or not);
// jobs run in the order they were queued.
func TestRecorderBounded(t *testing.T) {
	r := newRecorder(time.Hour, 2)
	var mu sync.Mutex
	var ran []int
	job := func(i int) func() {
		return func() {
			mu.Lock()
			ran = append(ran, i)
			mu.Unlock()
		}
	}
	ranNow := func() []int {
		mu.Lock()
		defer mu.Unlock()
		return append([]int(nil), ran...)
	}
	r.add(job(1))
	r.add(job(2))
	if got := ranNow(); len(got) != 0 {
		t.Fatalf("ran %v before the linger, want nothing", got)
	}
	r.add(job(3)) // full: waits for 1 and 2
	if got := ranNow(); len(got) != 2 || got[0] != 1 || got[1] != 2 {
		t.Fatalf("when the full queue took job 3, ran %v, want [1 2]", got)
	}
	if err := r.flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := ranNow(); len(got) != 3 || got[2] != 3 {
		t.Fatalf("after flush ran %v, want [1 2 3]", got)
	}
	if err := r.flush(context.Background()); err != nil { // nothing queued
		t.Fatal(err)
	}
}

// A flush whose context ends while another goroutine runs the queue
// returns the context's cause.
func TestRecorderFlushContext(t *testing.T) {
	r := newRecorder(time.Hour, 8)
	release, started := make(chan struct{}), make(chan struct{})
	r.add(func() { close(started); <-release })
	go func() { _ = r.flush(context.Background()) }() // runs the blocking job
	<-started
	r.add(func() {})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := r.flush(ctx); err != context.Canceled {
		t.Fatalf("flush with an ended context: %v, want context.Canceled", err)
	}
	close(release)
	if err := r.flush(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// Jobs queued from many goroutines at once all run, once each, and each
// goroutine's jobs run in the order it queued them, whether the linger,
// a full queue or a flush runs them.
func TestRecorderConcurrentOrder(t *testing.T) {
	for _, tc := range []struct {
		name   string
		linger time.Duration
		max    int
	}{
		{"linger", 50 * time.Microsecond, 4096},
		{"full queue", time.Hour, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRecorder(tc.linger, tc.max)
			const producers, each = 16, 200
			var mu sync.Mutex
			last := make([]int, producers) // the last job of each producer that ran
			for i := range last {
				last[i] = -1
			}
			var bad []string
			var wg sync.WaitGroup
			for p := range producers {
				wg.Go(func() {
					for i := range each {
						r.add(func() {
							mu.Lock()
							defer mu.Unlock()
							if last[p] != i-1 {
								bad = append(bad, fmt.Sprintf("producer %d: job %d ran after job %d", p, i, last[p]))
							}
							last[p] = i
						})
					}
				})
			}
			wg.Wait()
			if err := r.flush(context.Background()); err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(bad) > 0 {
				t.Fatalf("out of order: %v", bad[:min(len(bad), 5)])
			}
			for p, l := range last {
				if l != each-1 {
					t.Fatalf("producer %d: the last job that ran is %d, want %d", p, l, each-1)
				}
			}
		})
	}
}

// While records flow the recorder runs them at its batch boundary, not on
// a timer: with a linger never reached, recorderBatch queued records run at
// once, and the next one waits for the linger (or a flush). With a short
// linger a lone record runs once the queue stays idle for it.
func TestRecorderBatchBoundary(t *testing.T) {
	r := newRecorder(time.Hour, recorderMax)
	var ran atomic.Int64
	for range recorderBatch - 1 {
		r.add(func() { ran.Add(1) })
	}
	if n := ran.Load(); n != 0 {
		t.Fatalf("%d records ran before the batch was full or the linger passed", n)
	}
	r.add(func() { ran.Add(1) })
	testenv.Poll(t, time.Minute, "a full batch to run", func() bool { return ran.Load() == recorderBatch })
	r.add(func() { ran.Add(1) })
	if err := r.flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := ran.Load(); n != recorderBatch+1 {
		t.Fatalf("after the flush %d records ran, want %d", n, recorderBatch+1)
	}

	idle := newRecorder(time.Millisecond, recorderMax)
	var lone atomic.Bool
	idle.add(func() { lone.Store(true) })
	testenv.Poll(t, time.Minute, "a lone record to run once the queue went idle", lone.Load)
}
