package tools_test

import (
	"testing"

	"github.com/toold/toold/pkg/tools"
)

// TestBufferRoundTrip: a buffer comes back empty with the capacity asked
// for, and one handed back is handed out again (same array) when the pool
// keeps it.
func TestBufferRoundTrip(t *testing.T) {
	for _, size := range []int{1, 4096, tools.OutputBufferSize} {
		b := tools.Buffer(size)
		if len(b) != 0 || cap(b) != size {
			t.Fatalf("Buffer(%d): len %d cap %d", size, len(b), cap(b))
		}
		b = append(b, "data"[:min(4, size)]...)
		tools.FreeBuffer(b)
	}
	b := tools.OutputBuffer()
	if cap(b) != tools.OutputBufferSize {
		t.Fatalf("OutputBuffer: cap %d", cap(b))
	}
	// A buffer of a capacity no pool has is dropped, and nothing panics.
	tools.FreeBuffer(make([]byte, 0, 12345))
	tools.FreeBuffer(nil)
	tools.FreeBuffer(b)
}

// TestBufferAllocs: once warm, a Buffer/FreeBuffer round trip of a known
// size allocates nothing (it allocated a sync.Pool and its closure on
// every Buffer, and a slice header on every FreeBuffer).
func TestBufferAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool drops a random share of its Puts under -race")
	}
	const size = 8192
	tools.FreeBuffer(tools.Buffer(size)) // warm-up: the pool and one buffer
	if n := testing.AllocsPerRun(1000, func() {
		b := tools.Buffer(size)
		b = append(b, 'x')
		tools.FreeBuffer(b)
	}); n != 0 {
		t.Fatalf("a Buffer/FreeBuffer round trip allocates %v times, want 0", n)
	}
}

func BenchmarkBufferRoundTrip(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		tools.FreeBuffer(tools.Buffer(tools.OutputBufferSize))
	}
}
