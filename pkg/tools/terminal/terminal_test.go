package terminal_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/sandbox"
	"github.com/toold/toold/pkg/testenv"
	"github.com/toold/toold/pkg/tools"
	"github.com/toold/toold/pkg/tools/terminal"
	"github.com/toold/toold/pkg/workspace"
)

// The test binary stands in for toold's helper, and for a server that
// background processes run (TOOLD_TEST_HTTP_ADDR).
func TestMain(m *testing.M) {
	sandbox.RunHelperIfRequested()
	if addr := os.Getenv("TOOLD_TEST_HTTP_ADDR"); addr != "" {
		serveHTTP(addr)
		return
	}
	code := m.Run()
	if z := sandbox.ZombieChildren(os.Getpid()); len(z) > 0 && code == 0 {
		fmt.Fprintf(os.Stderr, "zombie children left after the tests: %v\n", z)
		code = 1
	}
	os.Exit(code)
}

func serveHTTP(addr string) {
	l, err := net.Listen("tcp4", addr)
	if err != nil {
		fmt.Println("listen:", err)
		os.Exit(1)
	}
	fmt.Println("listening on", l.Addr())
	_ = http.Serve(l, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Println("served", r.URL.Path)
		fmt.Fprintln(w, "hello from the test server")
	}))
}

// env is a Manager and its tool over a temp workspace.
type env struct {
	t    testing.TB
	ws   string
	home string
	m    *terminal.Manager
	tool *terminal.Terminal
}

func newEnv(t testing.TB, mutate ...func(*terminal.Config)) *env {
	t.Helper()
	dir := t.TempDir()
	ws, err := workspace.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	home := t.TempDir()
	cfg := terminal.Config{
		Workspace: ws,
		Runner:    sandbox.Runner{Args: sandbox.TestHelperArgs},
		Dir:       t.TempDir(),
		KillGrace: 500 * time.Millisecond,
		// A hermetic HOME keeps login shells from reading the machine's
		// profile.
		Env: map[string]string{"HOME": home},
	}
	for _, f := range mutate {
		f(&cfg)
	}
	m, err := terminal.NewManager(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := m.Close(ctx); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return &env{t: t, ws: ws.Dir(), home: home, m: m, tool: terminal.New(m, cfg.Limits)}
}

// sink records what a call streams.
type sink struct {
	mu       sync.Mutex
	out      bytes.Buffer
	chunks   []time.Time
	firstErr error
	// onLine, when set, is called with each complete line streamed.
	onLine  func(line string)
	partial string
}

// tools is the *tools.Sink a call gets, recording into s.
func (s *sink) tools() *tools.Sink { return &tools.Sink{OutputFunc: s.Output} }

func (s *sink) Output(_ tools.Stream, p []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.out.Write(p)
	s.chunks = append(s.chunks, time.Now())
	if s.onLine != nil {
		lines := strings.Split(s.partial+string(p), "\n")
		s.partial = lines[len(lines)-1]
		for _, l := range lines[:len(lines)-1] {
			s.onLine(l)
		}
	}
	return nil
}

func (s *sink) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.out.String()
}

// call runs an operation as conversation "conv" with call id id.
func (e *env) call(ctx context.Context, conv, id, op string, args map[string]any, snk *tools.Sink) (*tools.Result, error) {
	e.t.Helper()
	if ctx == nil {
		ctx = e.t.Context()
	}
	// As the executor does: Describe, then Run on the same call.
	call := &tools.Call{ID: id, ConversationID: conv, Tool: terminal.ToolName, Operation: op, Args: args}
	e.tool.Describe(call)
	return e.tool.Run(ctx, call, snk)
}

// must runs an operation that must succeed.
func (e *env) must(conv, op string, args map[string]any) *tools.Result {
	e.t.Helper()
	res, err := e.call(nil, conv, "c-"+op+"-"+strconv.FormatInt(time.Now().UnixNano(), 36), op, args, nil)
	if err != nil {
		e.t.Fatalf("%s %v: %v", op, args, err)
	}
	return res
}

func token() string { return strconv.FormatInt(time.Now().UnixNano()%1e9, 10) }

// survivors returns the pids whose command line contains tok.
func survivors(tok string) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err == nil && bytes.Contains(b, []byte(tok)) {
			out = append(out, pid)
		}
	}
	return out
}

func checkNoSurvivors(t *testing.T, tok string) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for len(survivors(tok)) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("processes survived: %v", survivors(tok))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func isClass(err, class error) bool { return errors.Is(err, class) }

func TestRunCommand(t *testing.T) {
	t.Setenv("TOOLD_TOKEN", "daemon-secret")
	t.Setenv("SOME_API_KEY", "daemon-secret")
	e := newEnv(t)
	os.MkdirAll(filepath.Join(e.ws, "sub", "dir"), 0o755)
	os.WriteFile(filepath.Join(e.ws, "file.txt"), []byte("x"), 0o644)
	os.Symlink(t.TempDir(), filepath.Join(e.ws, "escape"))
	tests := []struct {
		name  string
		args  map[string]any
		class error    // expected error class; nil for success
		has   []string // in the result text (or error message)
		not   []string
		code  int
	}{
		{name: "echo", args: map[string]any{"command": "echo hello"}, has: []string{"exit code 0", "hello"}},
		{name: "exit code is data", args: map[string]any{"command": "echo out; echo err >&2; exit 3"}, code: 3,
			has: []string{"exit code 3", "out\n", "err\n"}}, // the order of two pipes is not defined
		{name: "no output", args: map[string]any{"command": "true"}, has: []string{"(no output)"}},
		{name: "pipes and redirects", args: map[string]any{"command": "printf 'b\\na\\n' | sort > sorted && cat sorted"}, has: []string{"a\nb"}},
		{name: "working dir", args: map[string]any{"command": "pwd", "working_dir": "sub/dir"}, has: []string{"/sub/dir"}},
		{name: "call env", args: map[string]any{"command": `echo "[$GREETING]"`, "env": map[string]any{"GREETING": "hi there"}}, has: []string{"[hi there]"}},
		{name: "daemon secrets stay out", args: map[string]any{"command": "env"}, has: []string{"PATH=", "TERM=dumb"},
			not: []string{"daemon-secret", "TOOLD_TOKEN"}},
		{name: "stdin is empty", args: map[string]any{"command": "read -r x; echo \"read=$? [$x]\""}, has: []string{"read=1 []"}},
		{name: "signal", args: map[string]any{"command": "kill -KILL $$"}, code: -1, has: []string{"killed by signal KILL"}},
		{name: "ansi cleaned for the model", args: map[string]any{"command": `printf '\033[31mred\033[0m\n10%%\r100%%\n'`}, has: []string{"red\n100%\n"}, not: []string{"\x1b", "10%"}},
		{name: "working dir outside", args: map[string]any{"command": "pwd", "working_dir": "../"}, class: errdefs.ErrDenied, has: []string{"outside the workspace"}},
		{name: "working dir through a symlink out", args: map[string]any{"command": "pwd", "working_dir": "escape"}, class: errdefs.ErrDenied},
		{name: "working dir is a file", args: map[string]any{"command": "pwd", "working_dir": "file.txt"}, class: errdefs.ErrFailed, has: []string{"not a directory"}},
		{name: "working dir missing", args: map[string]any{"command": "pwd", "working_dir": "nope"}, class: errdefs.ErrFailed, has: []string{"does not exist"}},
		{name: "bad env name", args: map[string]any{"command": "true", "env": map[string]any{"1X": "y"}}, class: errdefs.ErrInvalidArgument},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := e.call(nil, "conv", "call-"+tt.name, "run_command", tt.args, nil)
			if tt.class != nil {
				if !isClass(err, tt.class) {
					t.Fatalf("error %v, want class %v", err, tt.class)
				}
				for _, s := range tt.has {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("error %q lacks %q", err, s)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range tt.has {
				if !strings.Contains(res.Text, s) {
					t.Errorf("result lacks %q:\n%s", s, res.Text)
				}
			}
			for _, s := range tt.not {
				if strings.Contains(res.Text, s) {
					t.Errorf("result has %q:\n%s", s, res.Text)
				}
			}
			if got := res.Structured["exit_code"]; got != tt.code {
				t.Errorf("exit_code %v, want %d", got, tt.code)
			}
		})
	}
}

// Output streams while the command runs: the first chunk arrives long
// before the end.
func TestStreamingSlowProducer(t *testing.T) {
	// Not parallel: it measures when output arrives.
	e := newEnv(t)
	var s sink
	begin := time.Now()
	res, err := e.call(nil, "conv", "slow", "run_command", map[string]any{"command": "for i in 1 2 3 4 5; do echo line$i; sleep 0.2; done"}, s.tools())
	if err != nil {
		t.Fatal(err)
	}
	end := time.Now()
	s.mu.Lock()
	chunks := append([]time.Time(nil), s.chunks...)
	s.mu.Unlock()
	if len(chunks) < 2 {
		t.Fatalf("%d chunks; want the lines as they come", len(chunks))
	}
	first := chunks[0].Sub(begin)
	t.Logf("first byte after %s (helper start included); %d chunks; total %s", first, len(chunks), end.Sub(begin))
	if end.Sub(chunks[0]) < 600*time.Millisecond {
		t.Errorf("first chunk after %s, %s before the end: output was not streamed", first, end.Sub(chunks[0]))
	}
	if s.String() != "line1\nline2\nline3\nline4\nline5\n" || !strings.Contains(res.Text, "line5") {
		t.Errorf("streamed %q, result %q", s.String(), res.Text)
	}
}

// A fast producer's output, read in batches once it passed the first
// 256 KiB (process.pump), arrives whole and in order, in the stream and in
// the kept record; and a line it writes after a pause goes out while it
// runs: the command waits for the test to see that line (a file the sink
// creates) and fails if it does not come.
func TestStreamingFastProducerThenPause(t *testing.T) {
	e := newEnv(t)
	flag := filepath.Join(e.ws, "seen")
	var s sink
	s.onLine = func(line string) {
		if line == "after the pause" {
			_ = os.WriteFile(flag, nil, 0o644)
		}
	}
	var want bytes.Buffer
	for i := 1; i <= 200000; i++ {
		fmt.Fprintf(&want, "%d\n", i)
	}
	want.WriteString("after the pause\n")
	command := "seq 1 200000; sleep 0.2; echo 'after the pause'; for i in $(seq 600); do [ -e seen ] && exit 0; sleep 0.1; done; exit 3"
	res, err := e.call(nil, "conv", "fast", "run_command", map[string]any{"command": command, "timeout": 120}, s.tools())
	if err != nil {
		t.Fatal(err)
	}
	if got := s.String(); got != want.String() {
		t.Fatalf("streamed %d bytes, want %d; first difference at %d", len(got), want.Len(), firstDiff(got, want.String()))
	}
	if code := res.Structured["exit_code"]; code != 0 {
		t.Errorf("exit code %v: the line after the pause did not reach the client while the command ran", code)
	}
	callID := res.Structured["call_id"].(string)
	var kept strings.Builder
	for offset := int64(0); offset < int64(want.Len()); {
		r := e.must("conv", "read_output", map[string]any{"call_id": callID, "offset": offset, "limit": 100000})
		next := r.Structured["next_offset"].(int64)
		_, body, _ := strings.Cut(r.Text, "\n")
		if next <= offset {
			t.Fatalf("read_output at %d: next %d", offset, next)
		}
		kept.WriteString(body[:next-offset])
		offset = next
	}
	if kept.String() != want.String() {
		t.Errorf("kept output differs at %d", firstDiff(kept.String(), want.String()))
	}
}

func firstDiff(a, b string) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// A timeout stops the whole tree — children, a grandchild that called
// setsid — and keeps the output so far.
func TestTimeoutKillsTree(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tok := token()
	cmd := fmt.Sprintf("echo started; setsid sleep 100.%[1]s & sh -c 'sleep 100.%[1]s & sleep 100.%[1]s'", tok)
	begin := time.Now()
	res, err := e.call(nil, "conv", "to", "run_command", map[string]any{"command": cmd, "timeout": 0.5}, nil)
	took := time.Since(begin)
	if !isClass(err, errdefs.ErrTimeout) || !strings.Contains(err.Error(), "timeout of 500ms") {
		t.Fatalf("error %v, want a timeout", err)
	}
	if res == nil || !strings.Contains(res.Text, "started") || !strings.Contains(res.Text, "stopped after its timeout") {
		t.Fatalf("result %v", res)
	}
	if took > 60*time.Second { // the timeout's 0.5 s, not the sleeps' 100 s
		t.Errorf("took %s", took)
	}
	checkNoSurvivors(t, tok)
	// The output stays readable.
	out := e.must("conv", "read_output", map[string]any{"call_id": "to"})
	if !strings.Contains(out.Text, "started") {
		t.Errorf("read_output after the timeout: %s", out.Text)
	}
}

func TestIdleTimeout(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tok := token()
	res, err := e.call(nil, "conv", "idle", "run_command", map[string]any{"command": "echo start; sleep 100." + tok, "idle_timeout": 0.4}, nil)
	if !isClass(err, errdefs.ErrTimeout) || !strings.Contains(err.Error(), "printed nothing for 400ms") {
		t.Fatalf("error %v, want an idle timeout", err)
	}
	if !strings.Contains(res.Text, "start") {
		t.Errorf("result %q", res.Text)
	}
	checkNoSurvivors(t, tok)
	// Steady output keeps an idle timeout from firing: the command runs
	// longer than its idle timeout (7 s against 6 s), printing every
	// 0.2 s, thirty times more often than the timeout needs, so that a
	// loaded machine (-race, other packages' tests and a CI run on two
	// cores: a 3 s timeout fired once at load 27) stalling a few seconds
	// cannot fire it.
	if _, err := e.call(nil, "conv", "busy", "run_command", map[string]any{"command": "for i in $(seq 35); do echo $i; sleep 0.2; done", "idle_timeout": 6}, nil); err != nil {
		t.Errorf("steady output: %v", err)
	}
}

// Canceling the call stops the tree and keeps the output so far.
func TestCancelMidRun(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tok := token()
	ctx, cancel := context.WithCancel(t.Context())
	s := &cancelOnOutput{cancel: cancel}
	res, err := e.call(ctx, "conv", "cx", "run_command", map[string]any{"command": "echo begin; setsid sleep 100." + tok + " & sleep 100." + tok}, &tools.Sink{OutputFunc: s.Output})
	if !isClass(err, errdefs.ErrCanceled) {
		t.Fatalf("error %v, want canceled", err)
	}
	if res == nil || !strings.Contains(res.Text, "begin") {
		t.Fatalf("result %v", res)
	}
	checkNoSurvivors(t, tok)
	if out := e.must("conv", "read_output", map[string]any{"call_id": "cx"}); !strings.Contains(out.Text, "begin") {
		t.Errorf("read_output: %s", out.Text)
	}
}

type cancelOnOutput struct {
	sink
	cancel context.CancelFunc
}

func (c *cancelOnOutput) Output(s tools.Stream, p []byte) error {
	c.cancel()
	return c.sink.Output(s, p)
}

// Long output shows its head and tail; read_output pages through all of
// it and searches it; another conversation cannot read it.
func TestReadOutput(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *terminal.Config) { c.Limits.OutputBytes = 1000 })
	res := e.must("conv", "run_command", map[string]any{"command": "seq 1 20000"})
	var want bytes.Buffer
	for i := 1; i <= 20000; i++ {
		fmt.Fprintf(&want, "%d\n", i)
	}
	if !strings.Contains(res.Text, "\n1\n2\n3\n") || !strings.HasSuffix(res.Text, "19999\n20000\n") || !strings.Contains(res.Text, "cut: bytes") {
		t.Errorf("head and tail view:\n%s", res.Text)
	}
	if res.Truncation == nil || res.Truncation.TotalBytes != uint64(want.Len()) || !strings.Contains(res.Truncation.Continuation, "read_output") {
		t.Errorf("truncation %+v", res.Truncation)
	}
	callID := res.Structured["call_id"].(string)

	offset, pages := int64(0), 0
	for ; offset < int64(want.Len()); pages++ {
		if pages > 100 {
			t.Fatal("too many pages")
		}
		r := e.must("conv", "read_output", map[string]any{"call_id": callID, "offset": offset, "limit": 4000})
		next := r.Structured["next_offset"].(int64)
		_, body, _ := strings.Cut(r.Text, "\n")
		if page := want.String()[offset:next]; next <= offset || !strings.HasPrefix(body, page) {
			t.Fatalf("page at %d to %d:\n%.200s", offset, next, body)
		}
		offset = next
	}
	if pages < 20 {
		t.Errorf("%d pages of 4000 bytes for %d bytes", pages, want.Len())
	}

	g := e.must("conv", "read_output", map[string]any{"call_id": callID, "pattern": "^1234[0-9]$"})
	if !strings.Contains(g.Text, "10 matching lines") || !strings.Contains(g.Text, "12340@") || g.Structured["total_matches"] != 10 {
		t.Errorf("grep:\n%s", g.Text)
	}
	if _, err := e.call(nil, "other-conv", "x", "read_output", map[string]any{"call_id": callID}, nil); !isClass(err, errdefs.ErrFailed) {
		t.Errorf("another conversation: %v", err)
	}
	if _, err := e.call(nil, "conv", "x", "read_output", map[string]any{"call_id": callID, "pattern": "("}, nil); !isClass(err, errdefs.ErrInvalidArgument) {
		t.Errorf("bad pattern: %v", err)
	}
}

// Output beyond the per-call limit is counted and its end kept; reading
// the middle says it was not kept.
func TestKeepLimits(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *terminal.Config) {
		c.Limits.OutputBytes = 1000
		c.KeepPerCall = 10000
		c.KeepTotal = 25000
	})
	e.must("conv", "run_command", map[string]any{"command": "seq 1 20000"}) // 108893 bytes
	r, err := e.call(nil, "conv", "big", "run_command", map[string]any{"command": "seq 1 20000"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(r.Text, "20000\n") {
		t.Errorf("tail lost:\n%s", r.Text)
	}
	mid := e.must("conv", "read_output", map[string]any{"call_id": "big", "offset": 50000})
	if !strings.Contains(mid.Text, "not available: not kept: over the per-call limit") || !strings.Contains(mid.Text, "20000") {
		t.Errorf("middle:\n%s", mid.Text)
	}
	// Two more calls: the oldest outputs are evicted to stay under 25000.
	for _, id := range []string{"b2", "b3"} {
		if _, err := e.call(nil, "conv", id, "run_command", map[string]any{"command": "seq 1 20000"}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.call(nil, "conv", "x", "read_output", map[string]any{"call_id": "big"}, nil); err == nil || !strings.Contains(err.Error(), "evicted") {
		t.Errorf("read_output of an evicted output: %v", err)
	}
}

// A background server is started, answers, is listed, and is killed with
// its tree.
func TestBackgroundServer(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	bin, _ := os.Executable()
	tok := token()
	res := e.must("conv", "run_command", map[string]any{
		// A wrapper shell, so that the server is a grandchild.
		"command":       fmt.Sprintf(`bash -c '"$SERVER_BIN" -test.run=^$ srv-%s; echo server exited' && true`, tok),
		"env":           map[string]any{"SERVER_BIN": bin, "TOOLD_TEST_HTTP_ADDR": addr},
		"is_background": true,
	})
	id := res.Structured["process_id"].(string)
	if !strings.Contains(res.Text, "Started background process "+id) {
		t.Errorf("start: %s", res.Text)
	}
	out := e.must("conv", "get_output", map[string]any{"process_id": id, "wait_ms": 10000})
	if !strings.Contains(out.Text, "listening on "+addr) {
		t.Fatalf("server output: %s", out.Text)
	}
	resp, err := http.Get("http://" + addr + "/ping")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "hello from the test server\n" {
		t.Errorf("body %q", body)
	}
	// get_output continues where the last read stopped.
	out = e.must("conv", "get_output", map[string]any{"process_id": id, "wait_ms": 5000})
	if !strings.Contains(out.Text, "served /ping") || strings.Contains(out.Text, "listening") {
		t.Errorf("second read: %s", out.Text)
	}
	list := e.must("conv", "list_processes", nil)
	if !strings.Contains(list.Text, id) || !strings.Contains(list.Text, "running") || !strings.Contains(list.Text, "SERVER_BIN") {
		t.Errorf("list: %s", list.Text)
	}
	if other := e.must("other", "list_processes", nil); strings.Contains(other.Text, id) {
		t.Errorf("another conversation sees %s", id)
	}
	k := e.must("conv", "kill", map[string]any{"process_id": id})
	if !strings.Contains(k.Text, "stopped by kill") {
		t.Errorf("kill: %s", k.Text)
	}
	if _, err := http.Get("http://" + addr + "/"); err == nil {
		t.Error("the server still answers after kill")
	}
	checkNoSurvivors(t, "srv-"+tok)
	list = e.must("conv", "list_processes", nil)
	if !strings.Contains(list.Text, "exited") {
		t.Errorf("list after kill: %s", list.Text)
	}
}

func TestBackgroundWait(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *terminal.Config) { c.MaxProcesses = 2 })
	res := e.must("conv", "run_command", map[string]any{"command": "echo working; sleep 0.3; echo done; exit 7", "is_background": true})
	id := res.Structured["process_id"].(string)
	w := e.must("conv", "wait", map[string]any{"process_id": id, "timeout": 10})
	if w.Structured["state"] != "exited" || w.Structured["exit_code"] != 7 || !strings.Contains(w.Text, "working\ndone") {
		t.Errorf("wait: %v\n%s", w.Structured, w.Text)
	}
	// A wait that times out leaves the process running.
	tok := token()
	res = e.must("conv", "run_command", map[string]any{"command": "sleep 100." + tok, "is_background": true})
	id2 := res.Structured["process_id"].(string)
	w = e.must("conv", "wait", map[string]any{"process_id": id2, "timeout": 0.2})
	if w.Structured["state"] != "running" {
		t.Errorf("wait timed out: %v", w.Structured)
	}
	e.must("conv", "run_command", map[string]any{"command": "sleep 100." + tok, "is_background": true})
	if _, err := e.call(nil, "conv", "x", "run_command", map[string]any{"command": "true", "is_background": true}, nil); !isClass(err, errdefs.ErrResourceExhausted) {
		t.Errorf("third background process: %v", err)
	}
	if _, err := e.call(nil, "conv", "x", "get_output", map[string]any{}, nil); !isClass(err, errdefs.ErrInvalidArgument) {
		t.Errorf("get_output without an id: %v", err)
	}
	if _, err := e.call(nil, "conv", "x", "get_output", map[string]any{"process_id": id, "session_id": "s"}, nil); !isClass(err, errdefs.ErrInvalidArgument) {
		t.Errorf("get_output with both ids: %v", err)
	}
	if _, err := e.call(nil, "other", "x", "wait", map[string]any{"process_id": id}, nil); !isClass(err, errdefs.ErrFailed) {
		t.Errorf("another conversation's process: %v", err)
	}
}

// A background process's own timeout stops it.
func TestBackgroundTimeout(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tok := token()
	res := e.must("conv", "run_command", map[string]any{"command": "echo up; sleep 100." + tok, "is_background": true, "timeout": 0.3})
	w := e.must("conv", "wait", map[string]any{"process_id": res.Structured["process_id"], "timeout": 10})
	if !strings.Contains(w.Text, "stopped after its timeout") || !strings.Contains(w.Text, "up") {
		t.Errorf("wait: %s", w.Text)
	}
	checkNoSurvivors(t, tok)
}

func TestDescribe(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	sess := e.must("conv", "create_session", map[string]any{"working_dir": ".", "name": "d"})
	sid := sess.Structured["session_id"].(string)
	tests := []struct {
		name string
		op   string
		args map[string]any
		want tools.Effect
	}{
		{"run_command", "run_command", map[string]any{"command": "git status && rm -rf build", "working_dir": "src"},
			tools.Effect{Display: "Running: git status && rm -rf build", Risk: tools.RiskHigh, Command: "git status && rm -rf build", Dir: "src", CanLeaveSandbox: true}},
		{"run_command default dir", "run_command", map[string]any{"command": "ls"},
			tools.Effect{Display: "Running: ls", Risk: tools.RiskHigh, Command: "ls", Dir: ".", CanLeaveSandbox: true}},
		{"run_command asking to leave the sandbox", "run_command", map[string]any{"command": "ls", "outside_sandbox": true},
			tools.Effect{Display: "Asking to run OUTSIDE the sandbox: ls", Risk: tools.RiskHigh, Command: "ls", Dir: ".", OutsideSandbox: true, CanLeaveSandbox: true}},
		{"send_input", "send_input", map[string]any{"session_id": sid, "data": "curl x | sh\r"},
			tools.Effect{Display: "Typing into terminal " + sid + ": curl x | sh⏎", Risk: tools.RiskHigh, Command: "curl x | sh\n", Dir: e.ws, Interactive: true}},
		{"create_session", "create_session", map[string]any{"working_dir": "app"},
			tools.Effect{Display: "Opening a terminal in app", Risk: tools.RiskHigh, Command: "bash -il", Dir: "app"}},
		{"kill", "kill", map[string]any{"process_id": "proc-x"}, tools.Effect{Display: "Stopping process proc-x", Risk: tools.RiskHigh}},
		{"close_session", "close_session", map[string]any{"session_id": sid}, tools.Effect{Display: "Closing terminal " + sid, Risk: tools.RiskMedium}},
		{"resize", "resize", map[string]any{"session_id": sid, "rows": 1, "cols": 1}, tools.Effect{Display: "Resizing terminal " + sid, Risk: tools.RiskLow}},
		{"read_output", "read_output", map[string]any{"call_id": "c1"}, tools.Effect{Display: "Reading output of call c1", Risk: tools.RiskLow}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := e.tool.Describe(&tools.Call{ConversationID: "conv", Tool: terminal.ToolName, Operation: tt.op, Args: tt.args})
			if fmt.Sprintf("%+v", got) != fmt.Sprintf("%+v", tt.want) {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

// Close stops every background process and session; afterwards nothing
// starts.
func TestCloseStopsEverything(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tok := token()
	e.must("conv", "run_command", map[string]any{"command": "setsid sleep 100." + tok + " & sleep 100." + tok, "is_background": true})
	sess := e.must("conv", "create_session", nil)
	e.must("conv", "send_input", map[string]any{"session_id": sess.Structured["session_id"], "data": "sleep 100." + tok + "\n"})
	waitFor(t, func() bool { return len(survivors(tok)) >= 3 })
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := e.m.Close(ctx); err != nil {
		t.Fatal(err)
	}
	checkNoSurvivors(t, tok)
	if _, err := e.call(nil, "conv", "late", "run_command", map[string]any{"command": "true"}, nil); !isClass(err, errdefs.ErrUnavailable) {
		t.Errorf("after Close: %v", err)
	}
	if _, err := os.Stat(filepath.Join(e.ws)); err != nil {
		t.Errorf("the workspace is gone: %v", err)
	}
}

// Sandboxed commands may write in the workspace and the temp dir only.
func TestSandboxed(t *testing.T) {
	t.Parallel()
	if abi := sandbox.LandlockABI(); abi < 4 {
		testenv.Need(t, fmt.Errorf("the kernel has Landlock ABI %d", abi), "Landlock ABI >= 4")
	}
	e := newEnv(t, func(c *terminal.Config) { c.Sandbox = &sandbox.Policy{NoNetwork: true} })
	etc := "/etc/toold-terminal-test-" + token()
	t.Cleanup(func() { os.Remove(etc) })
	tests := []struct {
		cmd string
		ok  bool
	}{
		{"echo hi > in-workspace.txt && mkdir -p a/b && mv in-workspace.txt a/b/", true},
		{`touch "$TMPDIR/scratch"`, true},
		{"touch " + etc, false},
		{`echo x > "$HOME/.profile"`, false},
		{"exec 3<>/dev/tcp/127.0.0.1/1", false},
	}
	for _, tt := range tests {
		res := e.must("conv", "run_command", map[string]any{"command": tt.cmd})
		if ok := res.Structured["exit_code"] == 0; ok != tt.ok {
			t.Errorf("%s: %s", tt.cmd, res.Text)
		}
	}
	if _, err := os.Stat(etc); err == nil {
		t.Errorf("%s was created", etc)
	}
	if _, err := os.Stat(filepath.Join(e.home, ".profile")); err == nil {
		t.Error("HOME was written")
	}
	if _, err := os.Stat(filepath.Join(e.ws, "a", "b", "in-workspace.txt")); err != nil {
		t.Error(err)
	}
	// Sessions are confined too.
	s := e.must("conv", "create_session", nil)
	out := e.must("conv", "send_input", map[string]any{"session_id": s.Structured["session_id"], "data": "touch " + etc + "; echo rc=$?\n", "wait_ms": 5000})
	if !strings.Contains(out.Text, "rc=1") {
		t.Errorf("sandboxed session: %s", out.Text)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	testenv.Poll(t, 10*time.Second, "the condition", cond)
}

// A background process lives as long as its tree: a server that
// daemonizes (its starter exits) is still listed as running, and kill
// stops it.
func TestBackgroundDaemonizes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tok := token()
	res := e.must("conv", "run_command", map[string]any{"command": "(setsid sleep 100." + tok + " >/dev/null 2>&1 &); echo daemonized", "is_background": true})
	id := res.Structured["process_id"].(string)
	waitFor(t, func() bool { return len(survivors(tok)) == 1 })
	w := e.must("conv", "wait", map[string]any{"process_id": id, "timeout": 0.3})
	if w.Structured["state"] != "running" || !strings.Contains(w.Text, "daemonized") {
		t.Errorf("after its starter exited: %v\n%s", w.Structured, w.Text)
	}
	k := e.must("conv", "kill", map[string]any{"process_id": id})
	if !strings.Contains(k.Text, "stopped by kill") || !strings.Contains(k.Text, "1 process(es) it started ran on after it exited") {
		t.Errorf("kill: %s", k.Text)
	}
	checkNoSurvivors(t, tok)
}

// Both ways of supervising commands — a cgroup per command (auto, where the
// kernel allows it) and a helper process per command — keep the same
// promises: exit codes, leftovers stopped, timeouts and kills stop the whole
// tree, setsid orphans included.
func TestSupervision(t *testing.T) {
	for _, sup := range []string{"auto", "helper"} {
		t.Run(sup, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, func(c *terminal.Config) { c.Supervision = sup })
			// Where the kernel and privileges allow cgroups, auto must use
			// them: otherwise both subtests would test helpers.
			want := "helper"
			if sup == "auto" && cgroupsWork() {
				want = "cgroup"
			}
			if got := e.m.Supervision(); got != want {
				t.Fatalf("supervision %q, want %q", got, want)
			}
			tok := token()

			res := e.must("conv", "run_command", map[string]any{"command": "echo out; echo err >&2; exit 3"})
			if res.Structured["exit_code"] != 3 || !strings.Contains(res.Text, "out") || !strings.Contains(res.Text, "err") {
				t.Errorf("exit 3: %v\n%s", res.Structured, res.Text)
			}

			res = e.must("conv", "run_command", map[string]any{"command": fmt.Sprintf("(setsid sleep 100.%s >/dev/null 2>&1 &); echo done", tok)})
			if res.Structured["leftovers"] != 1 {
				t.Errorf("leftovers: %v\n%s", res.Structured, res.Text)
			}
			checkNoSurvivors(t, tok)

			_, err := e.call(nil, "conv", "to", "run_command", map[string]any{"command": fmt.Sprintf("setsid sleep 100.%[1]s & sleep 100.%[1]s", tok), "timeout": 0.3}, nil)
			if !isClass(err, errdefs.ErrTimeout) {
				t.Errorf("error %v, want a timeout", err)
			}
			checkNoSurvivors(t, tok)

			bg := e.must("conv", "run_command", map[string]any{"command": fmt.Sprintf("(setsid sleep 100.%s >/dev/null 2>&1 &); sleep 100.%[1]s", tok), "is_background": true})
			waitFor(t, func() bool { return len(survivors(tok)) == 2 })
			k := e.must("conv", "kill", map[string]any{"process_id": bg.Structured["process_id"].(string)})
			if !strings.Contains(k.Text, "stopped by kill") {
				t.Errorf("kill: %s", k.Text)
			}
			checkNoSurvivors(t, tok)
		})
	}
	t.Run("unknown", func(t *testing.T) {
		ws, err := workspace.Open(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		defer ws.Close()
		_, err = terminal.NewManager(terminal.Config{Workspace: ws, Dir: t.TempDir(), Supervision: "systemd"})
		if err == nil || !strings.Contains(err.Error(), `supervision "systemd"`) {
			t.Errorf("error %v", err)
		}
	})
}

// cgroupsWork reports whether sandbox.OpenCgroups succeeds here.
func cgroupsWork() bool {
	c, err := sandbox.OpenCgroups(sandbox.CgroupConfig{Grace: 100 * time.Millisecond})
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// A line typed across several send_input calls is judged as it is
// submitted, with what earlier calls typed; input judged against a line
// that changed before it ran is refused, not typed.
func TestSendInputJudgesTheSubmittedLine(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	sess := e.must("conv", "create_session", map[string]any{"working_dir": ".", "name": "split"})
	sid := sess.Structured["session_id"].(string)
	describe := func(data string) (*tools.Call, tools.Effect) {
		c := &tools.Call{ConversationID: "conv", Tool: terminal.ToolName, Operation: "send_input", Args: map[string]any{"session_id": sid, "data": data}}
		return c, e.tool.Describe(c)
	}
	e.must("conv", "send_input", map[string]any{"session_id": sid, "data": "rm -r"})
	e.must("conv", "send_input", map[string]any{"session_id": sid, "data": "f "})
	if _, eff := describe("/\n"); eff.Command != "rm -rf /\n" || eff.Unknown != "" {
		t.Fatalf("the submitted line is judged whole: %+v", eff)
	}
	// Two inputs judged against the same line: the second to run is
	// refused, because the line it was judged with has changed.
	a, _ := describe("echo one")
	b, _ := describe("/\n")
	if _, err := e.tool.Run(t.Context(), a, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := e.tool.Run(t.Context(), b, nil); !errors.Is(err, errdefs.ErrFailed) || !strings.Contains(err.Error(), "changed after this input was judged") {
		t.Fatalf("err = %v", err)
	}
	// ^C discards the line; keys that edit it in ways that cannot be
	// followed make the next line unknown until it is submitted.
	e.must("conv", "send_input", map[string]any{"session_id": sid, "data": "\u0003"})
	if _, eff := describe("ls\n"); eff.Command != "ls\n" || eff.Unknown != "" {
		t.Fatalf("after ^C: %+v", eff)
	}
	e.must("conv", "send_input", map[string]any{"session_id": sid, "data": "cat ~/.ss\t"})
	if _, eff := describe("/id_rsa\n"); eff.Unknown == "" {
		t.Fatalf("after a tab the line must be unknown: %+v", eff)
	}
	e.must("conv", "send_input", map[string]any{"session_id": sid, "data": "\n"})
	// The submitted line runs a moment in the foreground; then the shell
	// reads again and the next line is judged on its own.
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, eff := describe("pwd\n")
		if eff.Unknown == "" && eff.Command == "pwd\n" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after Enter the line is known again: %+v", eff)
		}
		time.Sleep(20 * time.Millisecond) // polling until the shell is in the foreground again
	}
	// A line that is not complete yet (a trailing backslash, an open
	// quote) is judged with what follows it.
	e.must("conv", "send_input", map[string]any{"session_id": sid, "data": "rm -rf \\\n"})
	if _, eff := describe("~\n"); eff.Command != "rm -rf \\\n~\n" {
		t.Fatalf("a continued line: %+v", eff)
	}
	e.must("conv", "send_input", map[string]any{"session_id": sid, "data": "\u0003"})
}

// Input typed while another program than the shell reads the terminal (a
// REPL) cannot be judged as a command line.
func TestSendInputToAnotherProgram(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	sess := e.must("conv", "create_session", map[string]any{"working_dir": ".", "name": "repl"})
	sid := sess.Structured["session_id"].(string)
	e.must("conv", "send_input", map[string]any{"session_id": sid, "data": "cat\n"})
	deadline := time.Now().Add(10 * time.Second)
	for {
		eff := e.tool.Describe(&tools.Call{ConversationID: "conv", Tool: terminal.ToolName, Operation: "send_input", Args: map[string]any{"session_id": sid, "data": "import os\n"}})
		if strings.Contains(eff.Unknown, "foreground program is cat") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("input to cat was judged as a command line: %+v", eff)
		}
		time.Sleep(20 * time.Millisecond) // polling until cat is in the foreground
	}
	e.must("conv", "send_input", map[string]any{"session_id": sid, "data": "\u0003"})
}

// send_input is judged where the shell is now: after a cd, relative paths
// start there.
func TestSendInputJudgedInTheShellsDirectory(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	if err := os.MkdirAll(filepath.Join(e.ws, "sub", "deeper"), 0o755); err != nil {
		t.Fatal(err)
	}
	sess := e.must("conv", "create_session", map[string]any{"working_dir": ".", "name": "cwd"})
	sid := sess.Structured["session_id"].(string)
	e.must("conv", "send_input", map[string]any{"session_id": sid, "data": "cd sub/deeper\n"})
	want := filepath.Join(e.ws, "sub", "deeper")
	deadline := time.Now().Add(10 * time.Second)
	for {
		eff := e.tool.Describe(&tools.Call{ConversationID: "conv", Tool: terminal.ToolName, Operation: "send_input", Args: map[string]any{"session_id": sid, "data": "cat ../../x\n"}})
		if eff.Dir == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("Dir = %q, want %q", eff.Dir, want)
		}
		time.Sleep(20 * time.Millisecond) // polling the shell's cwd until cd took effect
	}
}

// A foreground command's stdout reaches a sink that adopts buffers in
// buffers of tools.OutputBufferSize, each handed over once: the sink keeps
// every one it was given (as the event log does until the chunk is sent)
// and their bytes, in order, are the command's output, so no buffer was
// read into again after it was adopted. Stderr still comes through Output.
func TestStdoutBuffersAdopted(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var (
		mu      sync.Mutex
		adopted [][]byte
		stderr  bytes.Buffer
	)
	snk := &tools.Sink{
		AdoptFunc: func(s tools.Stream, p []byte) error {
			mu.Lock()
			defer mu.Unlock()
			if s != tools.Stdout || cap(p) != tools.OutputBufferSize {
				t.Errorf("adopted %d bytes of stream %d in a buffer of capacity %d", len(p), s, cap(p))
			}
			adopted = append(adopted, p)
			return nil
		},
		OutputFunc: func(s tools.Stream, p []byte) error {
			mu.Lock()
			defer mu.Unlock()
			if s != tools.Stderr {
				t.Errorf("%d bytes of stream %d through Output", len(p), s)
			}
			stderr.Write(p)
			return nil
		},
	}
	res, err := e.call(nil, "conv", "adopt", "run_command", map[string]any{"command": "seq 1 400000; echo done >&2"}, snk)
	if err != nil {
		t.Fatalf("run_command: %v %+v", err, res)
	}
	var want bytes.Buffer
	for i := 1; i <= 400000; i++ {
		fmt.Fprintf(&want, "%d\n", i)
	}
	mu.Lock()
	defer mu.Unlock()
	if got := bytes.Join(adopted, nil); !bytes.Equal(got, want.Bytes()) {
		t.Errorf("the adopted buffers hold %d bytes, not the command's %d in order", len(got), want.Len())
	}
	if len(adopted) < want.Len()/tools.OutputBufferSize {
		t.Errorf("%d buffers for %d bytes", len(adopted), want.Len())
	}
	if stderr.String() != "done\n" {
		t.Errorf("stderr %q", stderr.String())
	}
	// The record kept its own copy.
	out := e.must("conv", "read_output", map[string]any{"call_id": "adopt", "offset": want.Len() - 14, "limit": 100})
	if !strings.Contains(out.Text, "399999\n400000\n") {
		t.Errorf("read_output of the end: %s", out.Text)
	}
	for _, p := range adopted {
		tools.FreeBuffer(p)
	}
}

// pipeInodes returns the inodes of the pipes this process holds open.
func pipeInodes() map[string]bool {
	ents, _ := os.ReadDir("/proc/self/fd")
	out := map[string]bool{}
	for _, e := range ents {
		if l, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil && strings.HasPrefix(l, "pipe:") {
			out[l] = true
		}
	}
	return out
}

// A command that exits while its stdout still waits in the pipe, behind a
// client that takes its time (a slow reader, a stream dropped and resumed
// later): every byte it wrote still reaches the client. The readers' stop
// for a process that escaped with the pipe (2 s after the tree is gone)
// closed the pipe under a reader blocked delivering, and the call ended
// successfully with up to a pipe's worth of its output missing from the
// stream (found by TestAttackAdoptedStdoutEndToEnd in pkg/daemon). The
// sink holds its first delivery until the command has exited and then
// until one of the pipes the command got is closed (the stop), or 4 s.
func TestSlowClientGetsOutputOfExitedCommand(t *testing.T) {
	e := newEnv(t)
	const total = 1000000 // fits in the pipe (1 MiB): the command exits
	before := pipeInodes()
	var (
		mu    sync.Mutex
		got   int
		first = true
	)
	deliver := func(s tools.Stream, p []byte) {
		mu.Lock()
		defer mu.Unlock()
		if s == tools.Stdout {
			got += len(p)
		}
		if !first {
			return
		}
		first = false
		var ours []string
		for l := range pipeInodes() {
			if !before[l] {
				ours = append(ours, l)
			}
		}
		exited := func() bool { _, err := os.Stat(filepath.Join(e.ws, "exited")); return err == nil }
		if !testenv.Until(20*time.Second, exited) {
			t.Error("the command did not exit while its output waited in the pipe")
			return
		}
		testenv.Until(4*time.Second, func() bool {
			now := pipeInodes()
			for _, l := range ours {
				if !now[l] {
					return true
				}
			}
			return false
		})
	}
	snk := &tools.Sink{
		AdoptFunc: func(s tools.Stream, p []byte) error {
			deliver(s, p)
			tools.FreeBuffer(p)
			return nil
		},
		OutputFunc: func(s tools.Stream, p []byte) error {
			deliver(s, p)
			return nil
		},
	}
	res, err := e.call(nil, "conv", "slow", "run_command", map[string]any{"command": fmt.Sprintf("head -c %d /dev/zero; echo > exited", total)}, snk)
	if err != nil {
		t.Fatalf("run_command: %v %+v", err, res)
	}
	mu.Lock()
	defer mu.Unlock()
	if got != total {
		t.Errorf("the client got %d bytes of the command's %d; result: %.300s", got, total, res.Text)
	}
}
