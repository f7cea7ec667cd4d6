package tools

import (
	"sync"
	"unsafe"
)

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
// capacity (see OutputBuffer). A round trip through Buffer and FreeBuffer
// allocates nothing once the pool holds a buffer.
func Buffer(size int) []byte {
	p, ok := bufPools.Load(size)
	if !ok {
		p, _ = bufPools.LoadOrStore(size, newBufPool(size))
	}
	return unsafe.Slice((*byte)(p.(*sync.Pool).Get().(unsafe.Pointer)), size)[:0]
}

// FreeBuffer returns b to the pool of its capacity, when there is one (a
// buffer Buffer or OutputBuffer handed out). Nothing may use b afterwards.
func FreeBuffer(b []byte) {
	if cap(b) == 0 {
		return
	}
	if p, ok := bufPools.Load(cap(b)); ok {
		p.(*sync.Pool).Put(unsafe.Pointer(unsafe.SliceData(b[:1])))
	}
}

// bufPools maps a capacity to the *sync.Pool of buffers of that capacity.
// A pool holds each buffer as the pointer to its first byte, which an
// interface holds without an allocation (a *[]byte would need one for its
// slice header at every FreeBuffer); Buffer makes the slice again from the
// pool's capacity.
var bufPools sync.Map

func newBufPool(size int) *sync.Pool {
	return &sync.Pool{New: func() any {
		return unsafe.Pointer(unsafe.SliceData(make([]byte, 1, max(size, 1))))
	}}
}
