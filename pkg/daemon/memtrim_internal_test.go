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
	shedThreads(peak - before)
	testenv.Poll(t, 10*time.Second, "the idle threads to end", func() bool {
		return runtimeThreads() <= before+2
	})
	// The process works on: goroutines still run.
	ch := make(chan int)
	go func() { ch <- 1 }()
	<-ch
}
