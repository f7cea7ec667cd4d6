package executor

import (
	"context"
	"errors"
	"io"
	"testing"

	"github.com/toold/toold/pkg/errdefs"
)

// A call's input is made only when needed, and behaves as the pipe did when
// it was made for every call: a call that takes none reports nothing at its
// end and refuses input sent afterwards; input sent before the tool asks
// waits for it; what the tool never read is reported in the End.
func TestCallInputMadeWhenNeeded(t *testing.T) {
	ctx := context.Background()

	t.Run("no input", func(t *testing.T) {
		in := &callInput{ctx: ctx}
		if meta := in.finish(nil); meta != nil {
			t.Fatalf("finish of a call without input = %v, want nil", meta)
		}
		if in.pipe != nil {
			t.Fatal("finish made a pipe")
		}
		err := in.write([]byte("late"), false)
		if !errors.Is(err, errdefs.ErrFailed) {
			t.Fatalf("input after the end: %v, want FAILED", err)
		}
		r := in.reader()
		if n, err := r.Read(make([]byte, 4)); n != 0 || !errors.Is(err, io.ErrClosedPipe) {
			t.Fatalf("reading after the end: %d, %v; want 0, ErrClosedPipe", n, err)
		}
	})

	t.Run("input before the tool reads", func(t *testing.T) {
		in := &callInput{ctx: ctx}
		if err := in.write([]byte("hello"), true); err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(in.reader())
		if err != nil || string(b) != "hello" {
			t.Fatalf("read %q, %v; want \"hello\", nil", b, err)
		}
		if meta := in.finish(nil); meta != nil {
			t.Fatalf("finish after everything was read = %v, want nil", meta)
		}
	})

	t.Run("input never read", func(t *testing.T) {
		in := &callInput{ctx: ctx}
		if err := in.write([]byte("unread"), false); err != nil {
			t.Fatal(err)
		}
		meta := in.finish(map[string]any{"k": 1})
		if meta["stdin_unread_bytes"] != 6 || meta["stdin_note"] == nil || meta["k"] != 1 {
			t.Fatalf("finish = %v, want the 6 unread bytes and the note", meta)
		}
		if err := in.write([]byte("x"), false); !errors.Is(err, errdefs.ErrFailed) {
			t.Fatalf("input after the end: %v, want FAILED", err)
		}
	})
}
