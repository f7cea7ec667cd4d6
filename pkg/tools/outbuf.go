package tools

import "sync"

// OutputBufferSize is the capacity of the buffers OutputBuffer hands out: a
// command's stdout is read in pieces of this size, and the event log's
// default output chunk (events.LogConfig.MaxChunk) is as large, so a piece
// read can become a chunk without a copy (Sink.Adopt).
const OutputBufferSize = 256 << 10

// OutputBuffer returns an empty buffer of capacity OutputBufferSize from a
// pool shared by the tools that read output and the event log that keeps
// it; FreeBuffer returns it. Its bytes are not cleared.
func OutputBuffer() []byte { return Buffer(OutputBufferSize) }

// Buffer returns an empty buffer of capacity size from the pool of that
// capacity (see OutputBuffer).
func Buffer(size int) []byte {
	p, _ := bufPools.LoadOrStore(size, &sync.Pool{New: func() any { b := make([]byte, 0, size); return &b }})
	return (*p.(*sync.Pool).Get().(*[]byte))[:0]
}

// FreeBuffer returns b to the pool of its capacity, when there is one (a
// buffer Buffer or OutputBuffer handed out). Nothing may use b afterwards.
func FreeBuffer(b []byte) {
	if p, ok := bufPools.Load(cap(b)); ok {
		b = b[:0]
		p.(*sync.Pool).Put(&b)
	}
}

var bufPools sync.Map // capacity -> *sync.Pool of *[]byte
