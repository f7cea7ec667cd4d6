package executor

import (
	"context"
	"io"
	"sync"

	"github.com/toold/toold/pkg/errdefs"
)

// maxStdinBuffer bounds the input a call's client sent and its process has
// not read yet.
const maxStdinBuffer = 1 << 20

// inputPipe is a call's standard input as the client feeds it with Input
// messages (data, eof). Writes never block: input beyond maxStdinBuffer
// unread bytes is refused, so a process that does not read cannot stall
// the stream's receiver. The tool reads it (tools.Sink.Stdin).
type inputPipe struct {
	ctx context.Context // the call's

	mu        sync.Mutex
	buf       []byte
	eof       bool // the client closed it
	closed    bool // the reader stopped, or the call ended
	used      bool // the tool asked for it
	discarded int  // bytes written that nobody read
	wake      chan struct{}
}

// callInput is a call's standard input as its stream holds it: the
// inputPipe is made when first needed, when the client sends Input for the
// call or the tool asks for its input (tools.Sink.Stdin). Most calls take
// none, and then nothing is made (a pipe and its wake channel per call were
// two of a think call's allocations). What the client and the tool see is
// the pipe's behaviour exactly: input sent after the call ended its input
// is refused as a closed pipe refuses it.
type callInput struct {
	ctx context.Context // the call's

	mu   sync.Mutex
	pipe *inputPipe
	done bool // finish ran: the call no longer reads its input
}

// get returns the pipe, made now if it was not; nil once finish ran
// without one.
func (in *callInput) get() *inputPipe {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.pipe == nil && !in.done {
		in.pipe = newInputPipe(in.ctx)
	}
	return in.pipe
}

// write is inputPipe.write on the call's pipe.
func (in *callInput) write(b []byte, eof bool) error {
	p := in.get()
	if p == nil {
		return errdefs.New(errdefs.ErrFailed, "the call no longer reads its input (its process exited or it ended); %d bytes were not delivered", len(b))
	}
	return p.write(b, eof)
}

// reader is the tool's end of the pipe (tools.Sink.Stdin).
func (in *callInput) reader() io.ReadCloser {
	p := in.get()
	if p == nil { // the tool asked after its call ended
		p = newInputPipe(in.ctx)
		_ = p.Close()
	}
	p.use()
	return p
}

// finish is inputPipe.finish, when the call has a pipe; afterwards input
// is refused.
func (in *callInput) finish(meta map[string]any) map[string]any {
	in.mu.Lock()
	in.done = true
	p := in.pipe
	in.mu.Unlock()
	if p == nil {
		return meta
	}
	return p.finish(meta)
}

func newInputPipe(ctx context.Context) *inputPipe {
	return &inputPipe{ctx: ctx, wake: make(chan struct{}, 1)}
}

func (p *inputPipe) use() {
	p.mu.Lock()
	p.used = true
	p.mu.Unlock()
}

// write adds the client's bytes, and closes the input on eof.
func (p *inputPipe) write(b []byte, eof bool) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.closed:
		p.discarded += len(b)
		return errdefs.New(errdefs.ErrFailed, "the call no longer reads its input (its process exited or it ended); %d bytes were not delivered", len(b))
	case p.eof:
		return errdefs.New(errdefs.ErrInvalidArgument, "the call's input was already closed (eof); nothing more can be sent")
	case len(p.buf)+len(b) > maxStdinBuffer:
		return errdefs.New(errdefs.ErrResourceExhausted, "the call has %d bytes of input it has not read yet (at most %d may wait); send the rest once it has read more", len(p.buf), maxStdinBuffer)
	}
	p.buf = append(p.buf, b...)
	p.eof = eof
	select {
	case p.wake <- struct{}{}:
	default:
	}
	return nil
}

// Read implements io.Reader for the tool.
func (p *inputPipe) Read(b []byte) (int, error) {
	for {
		p.mu.Lock()
		switch {
		case p.closed:
			p.mu.Unlock()
			return 0, io.ErrClosedPipe
		case len(p.buf) > 0:
			n := copy(b, p.buf)
			p.buf = p.buf[n:]
			if len(p.buf) == 0 {
				p.buf = nil
			}
			p.mu.Unlock()
			return n, nil
		case p.eof:
			p.mu.Unlock()
			return 0, io.EOF
		}
		p.mu.Unlock()
		select {
		case <-p.wake:
		case <-p.ctx.Done():
			return 0, context.Cause(p.ctx)
		}
	}
}

// Close implements io.Closer for the tool: it stops reading.
func (p *inputPipe) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.closed {
		p.closed = true
		p.discarded += len(p.buf)
		p.buf = nil
		select {
		case p.wake <- struct{}{}:
		default:
		}
	}
	return nil
}

// finish closes the input at the call's end and says in the End's metadata
// how much of what the client sent was never read, so no input is lost
// silently.
func (p *inputPipe) finish(meta map[string]any) map[string]any {
	_ = p.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.discarded == 0 {
		return meta
	}
	if meta == nil {
		meta = map[string]any{}
	}
	meta["stdin_unread_bytes"] = p.discarded
	if !p.used {
		meta["stdin_note"] = "the call did not read its input (run_command reads it only with stdin: \"pipe\")"
	}
	return meta
}
