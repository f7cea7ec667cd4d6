package mcp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"
	"golang.org/x/sys/unix"

	"github.com/toold/toold/pkg/testenv"
)

// Attacks of a hostile stdio MCP server on toold's stdio connection: each
// must end in a typed error or io.EOF for the reader, a Close that returns
// (the server killed when it does not go), and no goroutine of the
// connection left behind.

// stdioLeakCheck fails the test when a goroutine of this package's stdio
// connection outlives it (the others' are not this test's).
func stdioLeakCheck(t *testing.T) {
	t.Helper()
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() {
		if err := goleak.Find(ignore); err != nil {
			t.Errorf("goroutines left: %v", err)
		}
	})
}

// pipeFull reports whether the pipe at the process's descriptor fd holds
// as many bytes as it can.
func pipeFull(pid, fd int) bool {
	f, err := os.Open(fmt.Sprintf("/proc/%d/fd/%d", pid, fd))
	if err != nil {
		return false
	}
	defer f.Close()
	n, err := unix.IoctlGetInt(int(f.Fd()), unix.TIOCINQ)
	if err != nil {
		return false
	}
	size, err := unix.FcntlInt(f.Fd(), unix.F_GETPIPE_SZ, 0)
	return err == nil && n >= size
}

// A server that never reads its stdin: a request larger than the pipe
// blocks the connection's write. Close must still end the server (and the
// blocked Write), not wait for the write forever.
func TestStdioConnCloseWhileWriteBlocked(t *testing.T) {
	stdioLeakCheck(t)
	c := startStdio(t, `trap "" TERM; exec sleep 600`, 0, 20*time.Millisecond)
	big := &jsonrpc.Request{ID: mustID(t, float64(1)), Method: "tools/call", Params: []byte(`{"x":"` + strings.Repeat("a", 4<<20) + `"}`)}
	wrote := make(chan error, 1)
	go func() { wrote <- c.Write(context.Background(), big) }()
	testenv.Poll(t, 20*time.Second, "the server's stdin pipe to fill", func() bool { return pipeFull(c.cmd.Process.Pid, 0) })
	closed := make(chan error, 1)
	go func() { closed <- c.Close() }()
	if !testenv.Until(30*time.Second, func() bool { return len(closed) > 0 }) {
		_ = c.cmd.Process.Kill() // release the test's goroutines
		<-closed
		t.Fatal("Close did not return while a Write was blocked on the server's full stdin")
	}
	if err := <-wrote; err == nil {
		t.Fatal("the blocked Write succeeded on a closed connection")
	}
	if err := c.Write(context.Background(), big); err == nil {
		t.Fatal("Write after Close succeeded")
	}
}

// Each hostile way of ending or withholding a line: the reader gets an
// error (never a message made of the pieces), Close returns with the
// server gone.
func TestStdioConnHostileLines(t *testing.T) {
	for _, tc := range []struct {
		name, script string
		maxLine      int
		wantErr      func(error) bool
		silent       bool // the server sends nothing more and stays: Read waits
	}{
		{name: "line over the limit", maxLine: 1 << 20, script: `head -c 8000000 /dev/zero | tr '\0' a; exec sleep 600`,
			wantErr: func(err error) bool { return errors.Is(err, errLineTooLong) }},
		{name: "line over the limit then exit", maxLine: 1 << 20, script: `head -c 3000000 /dev/zero | tr '\0' a`,
			wantErr: func(err error) bool { return errors.Is(err, errLineTooLong) }},
		{name: "half a line then silence", script: `printf '{"jsonrpc":"2.0","id":1,'; exec sleep 600`, silent: true},
		{name: "exit mid-line", script: `printf '{"jsonrpc":"2.0","id":1,'`,
			wantErr: func(err error) bool { return err != nil && !errors.Is(err, io.EOF) }},
		{name: "stdout closed, still running", script: `exec >&-; exec sleep 600`,
			wantErr: func(err error) bool { return errors.Is(err, io.EOF) }},
		{name: "deep nesting", script: `printf '%s\n' "` + strings.Repeat("[", 5000) + `"; exec sleep 600`,
			wantErr: func(err error) bool { return err != nil && strings.Contains(err.Error(), "nesting") }},
		{name: "batch in a batch", script: `printf '%s\n' '[[{"jsonrpc":"2.0","id":1,"result":{}}]]'; exec sleep 600`,
			wantErr: func(err error) bool { return err != nil && !errors.Is(err, io.EOF) }},
		{name: "invalid UTF-8 then a valid message", script: `printf '{"jsonrpc":"2.0","id":1,"result":{"t":"\377\376"}}\n{"jsonrpc":"2.0","id":2,"result":{}}\n'; exec sleep 600`},
		{name: "NUL in a line", script: `printf '{"jsonrpc":"2.0","id":1,\000"result":{}}\n'; exec sleep 600`,
			wantErr: func(err error) bool { return err != nil && !errors.Is(err, io.EOF) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stdioLeakCheck(t)
			c := startStdio(t, `trap "" TERM; `+tc.script, tc.maxLine, 20*time.Millisecond)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if tc.silent {
				short, cancel := context.WithCancel(ctx)
				read := make(chan error, 1)
				go func() {
					_, err := c.Read(short)
					read <- err
				}()
				// The half line is read into the buffer; nothing comes of it.
				testenv.Poll(t, 20*time.Second, "the half line to be read", func() bool {
					n, _ := stdoutDrained(c.cmd.Process.Pid)
					return n
				})
				cancel()
				if err := <-read; !errors.Is(err, context.Canceled) {
					t.Fatalf("read of a half line: %v", err)
				}
			} else if tc.wantErr == nil {
				for i := 1; i <= 2; i++ {
					m, err := c.Read(ctx)
					if err != nil {
						t.Fatalf("message %d: %v", i, err)
					}
					if r, ok := m.(*jsonrpc.Response); !ok || r.ID != mustID(t, float64(i)) {
						t.Fatalf("message %d: %#v", i, m)
					}
				}
			} else {
				var err error
				for err == nil {
					var m jsonrpc.Message
					m, err = c.Read(ctx)
					if err == nil {
						t.Fatalf("read a message: %#v", m)
					}
				}
				if !tc.wantErr(err) {
					t.Fatalf("read: %v", err)
				}
			}
			closed := make(chan error, 1)
			go func() { closed <- c.Close() }()
			if !testenv.Until(30*time.Second, func() bool { return len(closed) > 0 }) {
				_ = c.cmd.Process.Kill()
				t.Fatal("Close did not return")
			}
			<-closed
			if err := c.cmd.Process.Signal(unix.Signal(0)); err == nil {
				t.Fatal("the server outlived Close")
			}
			if _, err := c.Read(ctx); err == nil {
				t.Fatal("Read after Close returned a message")
			}
		})
	}
}

// stdoutDrained reports whether the server's stdout pipe is empty (what it
// wrote was read): FIONREAD on the pipe through /proc.
func stdoutDrained(pid int) (bool, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/fd/1", pid))
	if err != nil {
		return false, err
	}
	defer f.Close()
	n, err := unix.IoctlGetInt(int(f.Fd()), unix.TIOCINQ)
	return err == nil && n == 0, err
}

// A 100 MB line under the default 16 MB limit: the reader gives up past
// the limit; the heap grows by a few times the limit (the buffer's
// growth), never by the line.
func TestStdioConnHugeLineBounded(t *testing.T) {
	stdioLeakCheck(t)
	c := startStdio(t, `trap "" TERM; head -c 100000000 /dev/zero | tr '\0' a; exec sleep 600`, 0, 20*time.Millisecond)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := c.Read(context.Background())
	runtime.ReadMemStats(&after)
	if !errors.Is(err, errLineTooLong) {
		t.Fatalf("read: %v, want the line refused", err)
	}
	alloc, sys := after.TotalAlloc-before.TotalAlloc, int64(after.HeapSys)-int64(before.HeapSys)
	t.Logf("reading a 100 MB line (limit %d MiB): allocated %d MiB in all, the heap grew by %d MiB", sdk.DefaultMaxLineLength>>20, alloc>>20, sys>>20)
	if sys > 4*int64(sdk.DefaultMaxLineLength) {
		t.Errorf("the heap grew by %d MiB for a line refused at %d MiB", sys>>20, sdk.DefaultMaxLineLength>>20)
	}
	if err := c.Close(); err == nil {
		t.Log("the server exited on its own")
	}
}

// toold mcp's server connection (IOTransport, ioConn) has the pattern
// stdioConn had: Close takes the write lock before closing Writer, so a
// Write blocked on a client that does not read toold's stdout holds the
// lock and Close never returns.
func TestIOConnCloseWhileWriteBlocked(t *testing.T) {
	if os.Getenv("TOOLD_TEST_IOCONN_CLOSE") == "" {
		t.Skip("defect in pkg/mcp/ioconn.go (tidy3's), reported to the lead: ioConn.Close takes writeMu before closing Writer, so a Write blocked on a client that does not read holds it and Close hangs (the same fix as stdioConn.Close: close Writer without the lock); TOOLD_TEST_IOCONN_CLOSE=1 runs it")
	}
	stdioLeakCheck(t)
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer inW.Close()
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer outR.Close()
	conn, err := (&IOTransport{Reader: inR, Writer: outW}).Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	big := &jsonrpc.Response{ID: mustID(t, float64(1)), Result: []byte(`{"x":"` + strings.Repeat("a", 4<<20) + `"}`)}
	wrote := make(chan error, 1)
	go func() { wrote <- conn.Write(context.Background(), big) }()
	testenv.Poll(t, 20*time.Second, "the client's pipe to fill", func() bool { return pipeFull(os.Getpid(), int(outR.Fd())) })
	closed := make(chan error, 1)
	go func() { closed <- conn.Close() }()
	if !testenv.Until(30*time.Second, func() bool { return len(closed) > 0 }) {
		outR.Close() // release the blocked Write, then Close
		<-closed
		t.Fatal("Close did not return while a Write was blocked on a client that does not read")
	}
	if err := <-wrote; err == nil {
		t.Fatal("the blocked Write succeeded on a closed connection")
	}
}
