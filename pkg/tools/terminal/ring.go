package terminal

// ring keeps the last len(buf) bytes of a byte stream, addressed by absolute
// index: the stream's first byte has index 0, and an index stays valid (it
// names the same byte) for as long as the byte is kept. Memory is fixed at
// the first write (a ring nothing is written to costs no buffer). A ring is
// not safe for concurrent use; its owner locks.
type ring struct {
	size int
	buf  []byte // size bytes, allocated at the first write
	end  int64  // absolute index after the last byte written
}

func newRing(size int) *ring { return &ring{size: size} }

// start is the index of the oldest byte kept.
func (r *ring) start() int64 { return max(0, r.end-int64(r.size)) }

// write appends p, dropping the oldest bytes when full.
func (r *ring) write(p []byte) {
	n := r.size
	if n > 0 && r.buf == nil && len(p) > 0 {
		r.buf = make([]byte, n)
	}
	if n == 0 {
		r.end += int64(len(p))
		return
	}
	if len(p) > n {
		r.end += int64(len(p) - n)
		p = p[len(p)-n:]
	}
	for len(p) > 0 {
		i := int(r.end % int64(n))
		c := copy(r.buf[i:], p)
		r.end += int64(c)
		p = p[c:]
	}
}

// read returns a copy of up to limit bytes starting at from, which must be
// within [start, end].
func (r *ring) read(from int64, limit int) []byte {
	if from < r.start() || from >= r.end || limit <= 0 {
		return nil
	}
	to := min(r.end, from+int64(limit))
	out := make([]byte, 0, to-from)
	n := int64(r.size)
	for from < to {
		i := from % n
		j := min(n, i+(to-from))
		out = append(out, r.buf[i:j]...)
		from += j - i
	}
	return out
}
