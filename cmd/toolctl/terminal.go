package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"golang.org/x/term"
)

// openTTY opens the controlling terminal, where toolctl reads a person's
// answers: stdin may carry the call's arguments (--args -).
func openTTY() (*os.File, error) {
	return os.OpenFile("/dev/tty", os.O_RDWR, 0)
}

// terminal is the terminal a person answers on. Its reads end when their
// context does, so no read is left pending to steal a later key press. It
// writes prompts on out (stderr, the same terminal). Not safe for concurrent
// use.
type terminal struct {
	f   *os.File
	out io.Writer
}

var _ prompter = (*terminal)(nil)

// newTerminal takes f, a terminal opened for reading and writing, and owns
// it. f must support read deadlines (a file opened with os.OpenFile on
// Linux does): they are how reads are canceled.
func newTerminal(f *os.File, out io.Writer) (*terminal, error) {
	fd, err := fdOf(f)
	if err == nil && !term.IsTerminal(fd) {
		err = errors.New("not a terminal")
	}
	if err == nil {
		err = f.SetReadDeadline(time.Time{})
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", f.Name(), err)
	}
	return &terminal{f: f, out: out}, nil
}

// close releases the terminal.
func (t *terminal) close() error { return t.f.Close() }

// key implements prompter. It puts the terminal in cbreak mode (no line
// editing, no echo; Ctrl-C still interrupts) while it waits; where that is
// not supported, it reads a line and returns its first character.
func (t *terminal) key(ctx context.Context, prompt string) (byte, error) {
	restore, err := cbreak(t.f)
	if err != nil {
		s, err := t.line(ctx, prompt)
		if err != nil {
			return 0, err
		}
		if s = strings.TrimSpace(s); s == "" {
			return '\n', nil
		}
		return s[0], nil
	}
	defer restore()
	_, _ = io.WriteString(t.out, prompt)
	// One read is one key press; the rest of an escape sequence goes with it.
	var buf [32]byte
	n, err := t.read(ctx, buf[:])
	if err != nil {
		return 0, err
	}
	if n == 0 {
		return 0, io.EOF
	}
	return buf[0], nil
}

// line implements prompter.
func (t *terminal) line(ctx context.Context, prompt string) (string, error) {
	_, _ = io.WriteString(t.out, prompt)
	var line []byte
	var buf [512]byte
	for {
		n, err := t.read(ctx, buf[:])
		line = append(line, buf[:n]...)
		if i := bytes.IndexByte(line, '\n'); i >= 0 {
			return strings.TrimRight(string(line[:i]), "\r"), nil
		}
		if err == nil && n == 0 {
			err = io.EOF
		}
		if err != nil {
			return string(line), err
		}
	}
}

// read reads from the terminal until data arrives or ctx ends; then it
// returns ctx's cause.
func (t *terminal) read(ctx context.Context, p []byte) (int, error) {
	if ctx.Err() != nil {
		return 0, context.Cause(ctx)
	}
	if err := t.f.SetReadDeadline(time.Time{}); err != nil {
		return 0, err
	}
	stop := context.AfterFunc(ctx, func() { _ = t.f.SetReadDeadline(time.Now()) })
	n, err := t.f.Read(p)
	stop()
	if errors.Is(err, os.ErrDeadlineExceeded) && ctx.Err() != nil {
		return 0, context.Cause(ctx)
	}
	return n, err
}

// fdOf returns f's descriptor without putting it in blocking mode, as
// f.Fd would: reads could not be canceled then.
func fdOf(f *os.File) (int, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return -1, err
	}
	fd := -1
	if err := rc.Control(func(d uintptr) { fd = int(d) }); err != nil {
		return -1, err
	}
	return fd, nil
}
