package daemon

import (
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// What trimMemory watches: every trimEvery, when at least trimMin bytes of
// the heap are free but kept (or garbage the next collection would free),
// it gives them back.
const (
	trimEvery = 5 * time.Second
	trimMin   = 8 << 20
)

// startTrim starts the goroutine that gives memory back after a burst: a
// sidecar's memory limit is set by its worst minute, and the Go runtime
// returns freed pages only slowly (and collects an idle heap only every two
// minutes), so after 1,000 concurrent commands toold kept ~100 MB for
// minutes. Between bursts it costs a read of runtime/metrics every 5 s;
// after one, a collection. It ends at Close.
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
		}
		for {
			select {
			case <-stop:
				return
			case <-t.C:
			}
			metrics.Read(s)
			free, objects, live := s[0].Value.Uint64(), s[1].Value.Uint64(), s[2].Value.Uint64()
			if free >= trimMin || objects >= live+trimMin {
				debug.FreeOSMemory()
			}
		}
	}()
}

// stopTrim ends startTrim's goroutine; safe to call more than once, or
// without it.
func (m *Main) stopTrim() {
	if m.trimStop != nil {
		close(m.trimStop)
		m.trimStop = nil
	}
}
