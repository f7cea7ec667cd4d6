package terminal_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/sandbox"
	"github.com/toold/toold/pkg/tools/terminal"
)

// session opens a session in conv and returns its id.
func (e *env) session(conv string, args map[string]any) string {
	e.t.Helper()
	res := e.must(conv, "create_session", args)
	return res.Structured["session_id"].(string)
}

// expect reads the session until its output contains want (or 10 s pass)
// and returns all it read.
func (e *env) expect(conv, id, want string) string {
	e.t.Helper()
	var all strings.Builder
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		res := e.must(conv, "get_output", map[string]any{"session_id": id, "wait_ms": 500})
		_, body, _ := strings.Cut(res.Text, "\n")
		if body != "(no new output)\n" {
			all.WriteString(body)
		}
		if strings.Contains(all.String(), want) {
			return all.String()
		}
	}
	e.t.Fatalf("session %s never showed %q; it showed:\n%s", id, want, all.String())
	return ""
}

// A program in a session asks a question (read -p) and the answer typed
// with send_input reaches it.
func TestSessionPrompt(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	id := e.session("conv", nil)
	e.must("conv", "send_input", map[string]any{"session_id": id, "data": `read -p "Name? " name; echo "hello, $name!"` + "\n"})
	e.expect("conv", id, "Name? ")
	res := e.must("conv", "send_input", map[string]any{"session_id": id, "data": "toold\n", "wait_ms": 5000})
	if !strings.Contains(res.Text, "hello, toold!") {
		out := e.expect("conv", id, "hello, toold!")
		t.Logf("the answer came after the wait: %s", out)
	}
	// The history has the whole exchange.
	h := e.must("conv", "get_history", map[string]any{"session_id": id})
	if !strings.Contains(h.Text, "Name? toold") || !strings.Contains(h.Text, "hello, toold!") {
		t.Errorf("history:\n%s", h.Text)
	}
}

// resize changes what programs in the session see (stty size), and Ctrl-C
// interrupts the foreground program.
func TestSessionResizeAndInterrupt(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	id := e.session("conv", map[string]any{"rows": 30, "cols": 100})
	e.must("conv", "send_input", map[string]any{"session_id": id, "data": "stty size\n"})
	e.expect("conv", id, "30 100")
	e.must("conv", "resize", map[string]any{"session_id": id, "rows": 40, "cols": 120})
	e.must("conv", "send_input", map[string]any{"session_id": id, "data": "stty size\n"})
	e.expect("conv", id, "40 120")

	tok := token()
	e.must("conv", "send_input", map[string]any{"session_id": id, "data": "sleep 100." + tok + "\n"})
	waitFor(t, func() bool { return len(survivors("100."+tok)) == 1 })
	begin := time.Now()
	e.must("conv", "send_input", map[string]any{"session_id": id, "data": "\u0003"})
	e.must("conv", "send_input", map[string]any{"session_id": id, "data": "echo after-$((6*7))\n"})
	e.expect("conv", id, "after-42")
	if took := time.Since(begin); took > 60*time.Second { // not the sleep's 100 s
		t.Errorf("Ctrl-C took %s", took)
	}
	checkNoSurvivors(t, "100."+tok)
}

// create_session reuses a session in the same directory and restarts it
// when the directory changes; close_session ends it.
func TestSessionReuseAndRestart(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	os.Mkdir(e.ws+"/sub", 0o755)
	a := e.session("conv", nil)
	res := e.must("conv", "create_session", nil)
	if res.Structured["session_id"] != a || res.Structured["reused"] != true {
		t.Errorf("same directory: %v", res.Structured)
	}
	res = e.must("conv", "create_session", map[string]any{"working_dir": "sub"})
	b := res.Structured["session_id"].(string)
	if b == a || !strings.Contains(res.Text, "Closed terminal session "+a) {
		t.Errorf("new directory: %s", res.Text)
	}
	e.must("conv", "send_input", map[string]any{"session_id": b, "data": "pwd\n"})
	e.expect("conv", b, e.ws+"/sub")
	if _, err := e.call(nil, "conv", "x", "get_output", map[string]any{"session_id": a}, nil); !isClass(err, errdefs.ErrFailed) {
		t.Errorf("the replaced session: %v", err)
	}
	// A named second session lives beside the first.
	c := e.session("conv", map[string]any{"name": "second"})
	if c == b {
		t.Error("a named session reused the main one")
	}
	// Other conversations do not see them.
	if _, err := e.call(nil, "other", "x", "send_input", map[string]any{"session_id": b, "data": "x"}, nil); !isClass(err, errdefs.ErrFailed) {
		t.Errorf("another conversation typed into the session: %v", err)
	}
	res = e.must("conv", "close_session", map[string]any{"session_id": b})
	if !strings.Contains(res.Text, "Closed terminal session "+b) {
		t.Errorf("close: %s", res.Text)
	}
	if _, err := e.call(nil, "conv", "x", "send_input", map[string]any{"session_id": b, "data": "x"}, nil); !isClass(err, errdefs.ErrFailed) {
		t.Errorf("input to a closed session: %v", err)
	}
}

// The output ring is bounded: an index that fell out of it is reported as
// dropped, and the session's memory does not grow.
func TestSessionRingDropped(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *terminal.Config) { c.SessionBuffer = 4096 })
	id := e.session("conv", nil)
	e.must("conv", "send_input", map[string]any{"session_id": id, "data": "seq 1 5000; echo END-$((1+1))\n"})
	e.expect("conv", id, "END-2")
	res := e.must("conv", "get_output", map[string]any{"session_id": id, "from_index": 0})
	if !strings.Contains(res.Text, "were dropped: the session keeps the last 4 KiB") || res.Structured["dropped_bytes"].(int64) <= 0 {
		t.Errorf("dropped:\n%.300s", res.Text)
	}
	if from := res.Structured["from_index"].(int64); from < 20000 {
		t.Errorf("from_index %d; the ring keeps only the end", from)
	}
	info := e.m.Sessions("conv")[0]
	if info.NextIndex-info.FirstIndex != 4096 {
		t.Errorf("ring holds %d bytes", info.NextIndex-info.FirstIndex)
	}
}

// The shell exiting ends the session; its output stays readable.
func TestSessionExit(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	id := e.session("conv", nil)
	e.must("conv", "send_input", map[string]any{"session_id": id, "data": "echo bye; exit 3\n"})
	s, err := e.m.SessionByID(id)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the session did not end")
	}
	res := e.must("conv", "get_output", map[string]any{"session_id": id})
	if !strings.Contains(res.Text, "exited: exit code 3") || !strings.Contains(res.Text, "bye") {
		t.Errorf("after exit:\n%s", res.Text)
	}
	if _, err := e.call(nil, "conv", "x", "send_input", map[string]any{"session_id": id, "data": "x"}, nil); !isClass(err, errdefs.ErrFailed) {
		t.Errorf("input after exit: %v", err)
	}
	// ReadFrom, as TerminalService uses it, ends with io.EOF.
	for from := int64(0); ; {
		_, _, next, err := s.ReadFrom(t.Context(), from, 1<<10)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		from = next
	}
}

// Fifty sessions at once, each answering; then all are closed, nothing is
// left behind.
func TestManySessions(t *testing.T) {
	t.Parallel()
	const n = 50
	e := newEnv(t, func(c *terminal.Config) {
		// A lean shell: this test is about the number of sessions.
		c.MaxSessions = n
		c.SessionArgs = []string{"--norc", "--noprofile", "-i"}
	})
	ids := make([]string, n)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := e.call(nil, "conv", fmt.Sprint("c", i), "create_session", map[string]any{"name": fmt.Sprint("s", i)}, nil)
			if err != nil {
				errs <- err
				return
			}
			ids[i] = res.Structured["session_id"].(string)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for i, id := range ids {
		e.must("conv", "send_input", map[string]any{"session_id": id, "data": fmt.Sprintf("echo ready-$((%d+1000))\n", i)})
	}
	for i, id := range ids {
		e.expect("conv", id, fmt.Sprintf("ready-%d", i+1000))
	}
	if got := len(e.m.Sessions("conv")); got != n {
		t.Errorf("%d sessions listed", got)
	}
	if _, err := e.call(nil, "conv", "x", "create_session", map[string]any{"name": "one-too-many"}, nil); !isClass(err, errdefs.ErrResourceExhausted) {
		t.Errorf("session %d: %v", n+1, err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	if err := e.m.Close(ctx); err != nil {
		t.Fatal(err)
	}
	for _, in := range e.m.Sessions("") {
		if in.State != "exited" {
			t.Errorf("session %s is %s after Close", in.ID, in.State)
		}
	}
}

// After commands, background processes and sessions of every kind have
// ended, the daemon has no more open descriptors, goroutines or zombie
// children than before.
func TestNoLeaks(t *testing.T) {
	// Not parallel: it counts the process's descriptors and goroutines.
	fds := func() int {
		ents, _ := os.ReadDir("/proc/self/fd")
		return len(ents)
	}
	e := newEnv(t)
	settle := func() { time.Sleep(100 * time.Millisecond); runtime.GC() }
	settle()
	fdsBefore, gBefore := fds(), runtime.NumGoroutine()
	tok := token()
	for i := range 5 {
		e.must("conv", "run_command", map[string]any{"command": fmt.Sprintf("echo %d; setsid sleep 100.%s & exit 0", i, tok)})
		_, _ = e.call(nil, "conv", "t", "run_command", map[string]any{"command": "sleep 100." + tok, "timeout": 0.1}, nil)
	}
	bg := e.must("conv", "run_command", map[string]any{"command": "sleep 100." + tok, "is_background": true})
	e.must("conv", "kill", map[string]any{"process_id": bg.Structured["process_id"]})
	for range 3 {
		id := e.session("conv", nil)
		e.must("conv", "send_input", map[string]any{"session_id": id, "data": "sleep 100." + tok + " &\n"})
		e.must("conv", "close_session", map[string]any{"session_id": id})
	}
	checkNoSurvivors(t, tok)
	var fdsAfter, gAfter int
	deadline := time.Now().Add(5 * time.Second)
	for {
		settle()
		fdsAfter, gAfter = fds(), runtime.NumGoroutine()
		if (fdsAfter <= fdsBefore && gAfter <= gBefore) || time.Now().After(deadline) {
			break
		}
	}
	if fdsAfter > fdsBefore {
		out, _ := os.ReadDir("/proc/self/fd")
		var links []string
		for _, f := range out {
			l, _ := os.Readlink("/proc/self/fd/" + f.Name())
			links = append(links, f.Name()+"->"+l)
		}
		t.Errorf("descriptors: %d before, %d after: %v", fdsBefore, fdsAfter, links)
	}
	if gAfter > gBefore {
		buf := make([]byte, 1<<20)
		t.Errorf("goroutines: %d before, %d after\n%s", gBefore, gAfter, buf[:runtime.Stack(buf, true)])
	}
	if z := sandbox.ZombieChildren(os.Getpid()); len(z) > 0 {
		t.Errorf("zombie children: %v", z)
	}
}
