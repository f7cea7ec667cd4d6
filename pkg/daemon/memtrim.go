package daemon

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// What trimMemory watches: every trimEvery, when at least trimMin bytes of
// the heap are free but kept (or garbage the next collection would free),
// it gives them back; when the runtime owns more than threadSlack OS
// threads beyond the fewest it has owned since start-up, it ends the idle
// ones.
const (
	trimEvery   = 5 * time.Second
	trimMin     = 8 << 20
	threadSlack = 8
)

// startTrim starts the goroutine that gives memory and OS threads back
// after a burst: a sidecar's memory limit is set by its worst minute, and
// the Go runtime returns freed pages only slowly (and collects an idle heap
// only every two minutes), so after 1,000 concurrent commands toold kept
// ~100 MB for minutes; and it never ends an OS thread it made for
// goroutines blocked in system calls (forks, cgroup files, /proc), so the
// threads of a burst's peak (100–230) stayed for the process's life.
// Between bursts it costs a read of runtime/metrics every 5 s; after one,
// two collections and the end of the surplus threads. It ends at Close.
func (m *Main) startTrim() {
	stop := make(chan struct{})
	m.trimStop = stop
	m.serveWG.Add(1)
	go func() {
		defer m.serveWG.Done()
		t := time.NewTicker(trimEvery)
		defer t.Stop()
		s := []metrics.Sample{
			{Name: "/memory/classes/heap/free:bytes"},
			{Name: "/memory/classes/heap/objects:bytes"},
			{Name: "/gc/heap/live:bytes"},
			{Name: "/sched/threads/total:threads"},
			{Name: "/sched/goroutines/not-in-go:goroutines"},
		}
		// The threads of an idle toold: those at the end of start-up, or
		// fewer when a tick sees fewer.
		metrics.Read(s)
		fewest := s[3].Value.Uint64()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
			}
			metrics.Read(s)
			free, objects, live := s[0].Value.Uint64(), s[1].Value.Uint64(), s[2].Value.Uint64()
			if free >= trimMin || objects >= live+trimMin {
				// Twice: what the burst left in sync.Pools (the commands'
				// read buffers: ~30 MB after 1,000 commands) survives the
				// first collection in the pools' victim caches and is
				// freed by the second.
				runtime.GC()
				debug.FreeOSMemory()
			}
			threads := s[3].Value.Uint64()
			if threads < fewest {
				fewest = threads
			}
			if threads > fewest+threadSlack {
				// During a burst this ends threads the runtime may make
				// again (a clone each, at most every trimEvery); after
				// one it is what brings the count back down.
				// The goroutines in system calls hold threads of their own.
				busy := s[4].Value.Uint64()
				if threads > fewest+busy {
					shedThreads(int(threads - fewest - busy))
				}
			}
		}
	}()
}

// shedThreads ends up to n of the runtime's idle OS threads. Go keeps
// every thread it made and never ends one unless a goroutine locked to it
// exits (runtime.LockOSThread): so n goroutines each lock a thread of
// their own (the scheduler hands them the idle ones first), wait until
// all n are locked, and exit locked. When fewer than n were idle, the
// runtime makes the difference and ends it again: n is an upper bound,
// never a count to reach. The main thread is parked instead of ended
// when it is one of them (the runtime's rule); nothing else runs on it
// then.
func shedThreads(n int) {
	if n <= 0 {
		return
	}
	locked := make(chan struct{}, n)
	release := make(chan struct{})
	for range n {
		go func() {
			runtime.LockOSThread()
			locked <- struct{}{}
			<-release
			// Returns locked: the runtime ends the thread.
		}()
	}
	for range n {
		<-locked
	}
	close(release)
}

// stopTrim ends startTrim's goroutine; safe to call more than once, or
// without it.
func (m *Main) stopTrim() {
	if m.trimStop != nil {
		close(m.trimStop)
		m.trimStop = nil
	}
}
