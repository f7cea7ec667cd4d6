package daemon

import (
	"runtime"
	"runtime/metrics"
	"sync"
	"testing"
	"time"

	"github.com/toold/toold/pkg/testenv"
)

// runtimeThreads is the number of OS threads the Go runtime owns.
func runtimeThreads() int {
	s := []metrics.Sample{{Name: "/sched/threads/total:threads"}}
	metrics.Read(s)
	return int(s[0].Value.Uint64())
}

// TestShedThreads makes the runtime keep idle OS threads, as a burst of
// goroutines blocked in system calls does (each got a thread; the runtime
// keeps them all), and checks that shedThreads ends them.
func TestShedThreads(t *testing.T) {
	before := runtimeThreads()
	// More goroutines than threads now: the runtime makes at least 40.
	burst := before + 40
	// Each goroutine holds a thread of its own until all hold one, then
	// lets go of it: the threads stay, idle.
	var held, done sync.WaitGroup
	held.Add(burst)
	done.Add(burst)
	release := make(chan struct{})
	for range burst {
		go func() {
			defer done.Done()
			runtime.LockOSThread()
			held.Done()
			<-release
			runtime.UnlockOSThread()
		}()
	}
	held.Wait()
	close(release)
	done.Wait()
	peak := runtimeThreads()
	if peak < burst {
		t.Fatalf("the burst left %d threads (before: %d); want at least %d", peak, before, burst)
	}
	// At least 30 of the burst's 40 or more new threads end. (Not all:
	// other tests' daemons in this process may be closing, their
	// goroutines holding threads in system calls meanwhile.)
	shedThreads(peak - before)
	if !testenv.Until(10*time.Second, func() bool { return runtimeThreads() <= peak-30 }) {
		t.Fatalf("threads: %d before, %d after the burst, %d after shedThreads(%d); want at most %d", before, peak, runtimeThreads(), peak-before, peak-30)
	}
	// The process works on: goroutines still run.
	ch := make(chan int)
	go func() { ch <- 1 }()
	<-ch
}
