package mcp_test

import (
	"context"
	"errors"
	"fmt"

	"log/slog"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toold/toold/pkg/authz"
	"github.com/toold/toold/pkg/config/value"
	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/events"
	"github.com/toold/toold/pkg/executor"
	"github.com/toold/toold/pkg/mcp"
	"github.com/toold/toold/pkg/mcp/mcpconfig"
	"github.com/toold/toold/pkg/mcp/mcptest"
	"github.com/toold/toold/pkg/testenv"
	"github.com/toold/toold/pkg/tools"
)

// recorder is a executor.Host that keeps a call's events; it cannot ask a
// person, so an ask is denied.
type recorder struct {
	mu     sync.Mutex
	events []events.Event
	// answer, when set, answers the call's questions (a person).
	answer func(*events.Question) (string, error)
	asked  []string
}

var _ executor.Host = (*recorder)(nil)

func (r *recorder) Emit(_ context.Context, ev events.Event) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, ev)
	return nil
}

func (r *recorder) Output(context.Context, string, tools.Stream, []byte) error { return nil }
func (r *recorder) Adopt(_ context.Context, _ string, _ tools.Stream, p []byte) error {
	tools.FreeBuffer(p)
	return nil
}

func (r *recorder) Approve(context.Context, string, *events.ApprovalRequest) (executor.Approval, error) {
	return executor.Approval{}, errdefs.New(errdefs.ErrDenied, "nobody to ask")
}

func (r *recorder) Ask(_ context.Context, _ string, q *events.Question) (string, error) {
	if r.answer == nil {
		return "", errdefs.New(errdefs.ErrDenied, "nobody to ask")
	}
	r.mu.Lock()
	r.asked = append(r.asked, q.Prompt)
	r.mu.Unlock()
	return r.answer(q)
}

func (r *recorder) progress() []events.Progress {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []events.Progress
	for _, ev := range r.events {
		if ev.Progress != nil {
			out = append(out, *ev.Progress)
		}
	}
	return out
}

// fixture is a registry with a built-in tool, a service to run calls
// through the whole pipeline, and a Manager.
type fixture struct {
	reg *tools.Registry
	svc *executor.Executor
	m   *mcp.Manager
}

func newFixture(t *testing.T, opts mcp.Options) *fixture {
	t.Helper()
	reg := tools.NewRegistry()
	if err := reg.Register(&tools.Think{}); err != nil {
		t.Fatal(err)
	}
	opts.Registry = reg
	if opts.Logger == nil {
		opts.Logger = testLogger(t)
	}
	if opts.MinBackoff == 0 {
		opts.MinBackoff = 100 * time.Millisecond
	}
	x, err := executor.New(executor.Config{Registry: reg, Authorizer: authz.AllowAll{}})
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{reg: reg, svc: x, m: mcp.NewManager(opts)}
	t.Cleanup(func() { f.m.Close() })
	return f
}

func testLogger(t *testing.T) *slog.Logger {
	if os.Getenv("TOOLD_TEST_LOG") == "" {
		return slog.New(slog.DiscardHandler)
	}
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func (f *fixture) call(ctx context.Context, name, args string) (*events.End, *recorder) {
	rec := &recorder{}
	end := f.svc.Run(ctx, &executor.CallRequest{CallID: "c", ConversationID: "t", Name: name, ArgsJSON: args}, rec)
	return end, rec
}

// waitFor polls cond until it holds or 20s pass.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testenv.Poll(t, 20*time.Second, what, cond)
}

func status(m *mcp.Manager, name string) mcp.Status {
	for _, s := range m.List() {
		if s.Name == name {
			return s
		}
	}
	return mcp.Status{}
}

func endText(e *events.End) string {
	if e.Result == nil {
		return ""
	}
	return e.Result.Text
}

// The client against server-everything over each transport: tools join the
// registry with their schemas after the built-ins; calls go through the
// whole pipeline; progress arrives before the end; a cancel leaves the
// session usable.
func TestEverything(t *testing.T) {
	peers := mcptest.Require(t)
	tests := []struct {
		name  string
		entry func(t *testing.T) mcpconfig.Server
	}{
		{"stdio", func(*testing.T) mcpconfig.Server { return peers.EverythingStdio() }},
		{"streamable http", func(t *testing.T) mcpconfig.Server {
			return mcpconfig.Server{URL: peers.StartEverythingHTTP(t, "streamableHttp").URL}
		}},
		{"sse", func(t *testing.T) mcpconfig.Server {
			return mcpconfig.Server{URL: peers.StartEverythingHTTP(t, "sse").URL, Type: "sse"}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, mcp.Options{})
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			if err := f.m.Start(ctx, map[string]mcpconfig.Server{"everything": tt.entry(t)}); err != nil {
				t.Fatal(err)
			}
			st := status(f.m, "everything")
			if st.State != mcp.StateConnected {
				t.Fatalf("state %v, err %q", st.State, st.Err)
			}

			t.Run("tools", func(t *testing.T) {
				infos := f.reg.List()
				if infos[0].Spec.Name != "think" {
					t.Fatalf("first tool %q, want the built-in think", infos[0].Spec.Name)
				}
				var names []string
				for _, in := range infos[1:] {
					names = append(names, in.Spec.Name)
					if in.Spec.Source != "mcp:everything" {
						t.Fatalf("%s: source %q", in.Spec.Name, in.Spec.Source)
					}
				}
				if !slices.IsSorted(names) {
					t.Fatalf("MCP tools not sorted: %v", names)
				}
				for _, want := range []string{"everything__echo", "everything__get-sum", "everything__trigger-long-running-operation"} {
					if !slices.Contains(names, want) {
						t.Fatalf("missing %s in %v", want, names)
					}
				}
				for _, in := range infos {
					if in.Spec.Name == "everything__echo" {
						if !strings.Contains(string(in.Schema), `"message"`) || in.Risk != tools.RiskLow {
							t.Fatalf("echo: schema %s risk %v (readOnlyHint means low)", in.Schema, in.Risk)
						}
					}
				}
			})

			calls := []struct {
				name, tool, args, want string
				code                   error
			}{
				{"echo", "everything__echo", `{"message":"hello"}`, "Echo: hello", nil},
				{"dotted name", "everything.echo", `{"message":"dot"}`, "Echo: dot", nil},
				{"get-sum coerced", "everything__get-sum", `{"a":"1","b":2.5}`, "The sum of 1 and 2.5 is 3.5.", nil},
				{"schema checked before the server", "everything__get-sum", `{"a":1}`, "", errdefs.ErrInvalidArgument},
			}
			for _, c := range calls {
				t.Run(c.name, func(t *testing.T) {
					end, _ := f.call(ctx, c.tool, c.args)
					if c.code != nil {
						if !errors.Is(end.Err, c.code) {
							t.Fatalf("err %v, want %v", end.Err, c.code)
						}
						return
					}
					if end.Err != nil || endText(end) != c.want {
						t.Fatalf("got %q, %v; want %q", endText(end), end.Err, c.want)
					}
				})
			}

			t.Run("structured content", func(t *testing.T) {
				end, _ := f.call(ctx, "everything__get-structured-content", `{"location":"Chicago"}`)
				if end.Err != nil || end.Result.Structured["temperature"] != float64(36) {
					t.Fatalf("structured %v, err %v", end.Result, end.Err)
				}
			})

			t.Run("progress", func(t *testing.T) {
				end, rec := f.call(ctx, "everything__trigger-long-running-operation", `{"duration":1,"steps":5}`)
				if end.Err != nil || !strings.Contains(endText(end), "Long running operation completed") {
					t.Fatalf("end %q %v", endText(end), end.Err)
				}
				ps := rec.progress()
				if len(ps) != 5 {
					t.Fatalf("%d progress events, want 5: %+v", len(ps), ps)
				}
				for i, p := range ps {
					if want := float64(i+1) / 5; p.Fraction != want {
						t.Fatalf("progress %d: fraction %v, want %v", i, p.Fraction, want)
					}
				}
			})

			t.Run("cancel then reuse", func(t *testing.T) {
				cctx, stop := context.WithCancel(ctx)
				rec := &recorder{}
				done := make(chan *events.End, 1)
				go func() {
					done <- f.svc.Run(cctx, &executor.CallRequest{CallID: "long", Name: "everything__trigger-long-running-operation", ArgsJSON: `{"duration":20,"steps":40}`}, rec)
				}()
				waitFor(t, "first progress", func() bool { return len(rec.progress()) > 0 })
				began := time.Now()
				stop()
				end := <-done
				if !errors.Is(end.Err, errdefs.ErrDisconnected) && !errors.Is(end.Err, errdefs.ErrCanceled) {
					t.Fatalf("canceled call ended %v", end.Err)
				}
				if d := time.Since(began); d > 2*time.Second {
					t.Fatalf("cancel took %s", d)
				}
				end, _ = f.call(ctx, "everything__echo", `{"message":"still here"}`)
				if end.Err != nil || endText(end) != "Echo: still here" {
					t.Fatalf("after cancel: %q %v", endText(end), end.Err)
				}
			})
		})
	}
}

// A killed stdio server: its running call ends UNAVAILABLE, toold starts it
// again with backoff, its tools stay listed meanwhile, and calls work again.
func TestStdioServerKilled(t *testing.T) {
	peers := mcptest.Require(t)
	f := newFixture(t, mcp.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := f.m.Start(ctx, map[string]mcpconfig.Server{"ev": peers.EverythingStdio()}); err != nil {
		t.Fatal(err)
	}
	st := status(f.m, "ev")
	if st.State != mcp.StateConnected || st.PID == 0 {
		t.Fatalf("status %+v", st)
	}
	rec := &recorder{}
	done := make(chan *events.End, 1)
	go func() {
		done <- f.svc.Run(ctx, &executor.CallRequest{CallID: "long", Name: "ev__trigger-long-running-operation", ArgsJSON: `{"duration":20,"steps":40}`}, rec)
	}()
	waitFor(t, "first progress", func() bool { return len(rec.progress()) > 0 })
	if err := syscall.Kill(st.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	end := <-done
	if !errors.Is(end.Err, errdefs.ErrUnavailable) {
		t.Fatalf("call on the killed server ended %v, want UNAVAILABLE", end.Err)
	}
	if !slices.Contains(status(f.m, "ev").Tools, "ev__echo") {
		t.Fatal("tools left the registry while the server restarts")
	}
	waitFor(t, "restart", func() bool {
		s := status(f.m, "ev")
		return s.State == mcp.StateConnected && s.Restarts >= 1 && s.PID != st.PID
	})
	end, _ = f.call(ctx, "ev__echo", `{"message":"back"}`)
	if end.Err != nil || endText(end) != "Echo: back" {
		t.Fatalf("after restart: %q %v", endText(end), end.Err)
	}
	if err := syscall.Kill(st.PID, 0); !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("the killed server's process is still there: %v", err)
	}
}

// A killed streamable HTTP server that comes back on the same port: the
// session is re-established.
func TestHTTPServerRestarted(t *testing.T) {
	peers := mcptest.Require(t)
	srv := peers.StartEverythingHTTP(t, "streamableHttp")
	f := newFixture(t, mcp.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := f.m.Start(ctx, map[string]mcpconfig.Server{"ev": {URL: srv.URL}}); err != nil {
		t.Fatal(err)
	}
	srv.Restart()
	waitFor(t, "reconnect", func() bool {
		s := status(f.m, "ev")
		return s.State == mcp.StateConnected && s.Restarts >= 1
	})
	end, _ := f.call(ctx, "ev__echo", `{"message":"again"}`)
	if end.Err != nil || endText(end) != "Echo: again" {
		t.Fatalf("after restart: %q %v", endText(end), end.Err)
	}
}

// A server that cannot start is retried with backoff and reported; a
// runtime Add and Remove change the registry; names are checked.
func TestAddRemove(t *testing.T) {
	peers := mcptest.Require(t)
	changes := make(chan struct{}, 16)
	f := newFixture(t, mcp.Options{OnChange: func() { changes <- struct{}{} }})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	st, err := f.m.Add(ctx, "broken", mcpconfig.Server{Command: "/nonexistent/mcp-server"})
	if err != nil {
		t.Fatal(err)
	}
	if st.State != mcp.StateBackoff || !strings.Contains(st.Err, "no such file") {
		t.Fatalf("broken server: %+v", st)
	}
	end, _ := f.call(ctx, "broken__x", `{}`)
	if !errors.Is(end.Err, errdefs.ErrToolNotFound) {
		t.Fatalf("call to a server that never connected: %v", end.Err)
	}

	fs := t.TempDir()
	os.WriteFile(fs+"/hello.txt", []byte("hi from the filesystem server"), 0o644)
	st, err = f.m.Add(ctx, "fs", peers.FilesystemStdio(fs))
	if err != nil || st.State != mcp.StateConnected {
		t.Fatalf("add fs: %+v %v", st, err)
	}
	select {
	case <-changes:
	case <-time.After(5 * time.Second):
		t.Fatal("no OnChange after a server joined")
	}
	end, _ = f.call(ctx, "fs__read_text_file", fmt.Sprintf(`{"path":%q}`, fs+"/hello.txt"))
	if end.Err != nil || !strings.Contains(endText(end), "hi from the filesystem server") {
		t.Fatalf("read_text_file: %q %v", endText(end), end.Err)
	}
	// The filesystem server marks writes destructive or not; its
	// read-only tools are low risk.
	for _, in := range f.reg.List() {
		if in.Spec.Name == "fs__read_text_file" && in.Risk != tools.RiskLow {
			t.Fatalf("read_text_file risk %v", in.Risk)
		}
	}

	errs := []struct {
		name string
		cfg  mcpconfig.Server
		want error
	}{
		{"fs", peers.FilesystemStdio(fs), mcp.ErrServerExists},
		{"bad__name", peers.EverythingStdio(), errdefs.ErrInvalidArgument},
		{"both", mcpconfig.Server{Command: "x", URL: "http://127.0.0.1:1/mcp"}, errdefs.ErrInvalidArgument},
	}
	for _, e := range errs {
		if _, err := f.m.Add(ctx, e.name, e.cfg); !errors.Is(err, e.want) {
			t.Fatalf("add %s: %v, want %v", e.name, err, e.want)
		}
	}

	if err := f.m.Remove(ctx, "fs"); err != nil {
		t.Fatal(err)
	}
	for _, in := range f.reg.List() {
		if strings.HasPrefix(in.Spec.Name, "fs__") {
			t.Fatalf("%s still registered after remove", in.Spec.Name)
		}
	}
	if err := f.m.Remove(ctx, "fs"); !errors.Is(err, mcp.ErrServerNotFound) {
		t.Fatalf("second remove: %v", err)
	}
}

// The risk overrides of the configuration win over the server's hints.
func TestRiskOverrides(t *testing.T) {
	peers := mcptest.Require(t)
	f := newFixture(t, mcp.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	entry := peers.EverythingStdio()
	entry.Toold = mcpconfig.ServerPolicy{Risk: "high", ToolRisk: map[string]string{"get-sum": "medium"}}
	if err := f.m.Start(ctx, map[string]mcpconfig.Server{"ev": entry}); err != nil {
		t.Fatal(err)
	}
	want := map[string]tools.Risk{"ev__echo": tools.RiskHigh, "ev__get-sum": tools.RiskMedium}
	for _, in := range f.reg.List() {
		if r, ok := want[in.Spec.Name]; ok && in.Risk != r {
			t.Fatalf("%s: risk %v, want %v", in.Spec.Name, in.Risk, r)
		}
	}
}

// notifications/tools/list_changed refreshes the registry. The server is
// the official Go SDK's, which adds a tool while the client is connected.
func TestListChanged(t *testing.T) {
	server := sdk.NewServer(&sdk.Implementation{Name: "dyn", Version: "1"}, &sdk.ServerOptions{HasTools: true})
	add := func(name string) {
		sdk.AddTool(server, &sdk.Tool{Name: name, Description: name}, func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: name + " ran"}}}, nil, nil
		})
	}
	add("first")
	url := serveHTTP(t, sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return server }, nil))
	changes := make(chan struct{}, 16)
	f := newFixture(t, mcp.Options{OnChange: func() { changes <- struct{}{} }})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := f.m.Start(ctx, map[string]mcpconfig.Server{"dyn": {URL: url}}); err != nil {
		t.Fatal(err)
	}
	<-changes
	add("second")
	server.RemoveTools("first")
	waitFor(t, "refresh", func() bool {
		return slices.Equal(status(f.m, "dyn").Tools, []string{"dyn__second"})
	})
	end, _ := f.call(ctx, "dyn__second", `{}`)
	if end.Err != nil || endText(end) != "second ran" {
		t.Fatalf("%q %v", endText(end), end.Err)
	}
	if end, _ := f.call(ctx, "dyn__first", `{}`); !errors.Is(end.Err, errdefs.ErrToolNotFound) {
		t.Fatalf("removed tool: %v", end.Err)
	}
}

// serveHTTP serves h on 127.0.0.1 until the test ends.
func serveHTTP(t *testing.T, h http.Handler) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h, ErrorLog: nil}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if srv.Shutdown(ctx) != nil {
			srv.Close()
		}
	})
	return "http://" + l.Addr().String() + "/mcp"
}

// toold closes a kept-alive connection to an HTTP MCP server once it has
// been idle (2 s), before a server would close it under a
// request (Node's and uvicorn's servers do after 5 s; this one never does,
// so a closed idle connection was closed by toold), and the next call
// goes out on a new connection.
func TestHTTPIdleConnectionClosedFirst(t *testing.T) {
	server := sdk.NewServer(&sdk.Implementation{Name: "idle", Version: "1"}, &sdk.ServerOptions{HasTools: true})
	sdk.AddTool(server, &sdk.Tool{Name: "ping", Description: "ping"}, func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "pong"}}}, nil, nil
	})
	var mu sync.Mutex
	idle := map[net.Conn]bool{}
	closedIdle := 0
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{
		Handler: sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return server }, nil),
		ConnState: func(c net.Conn, s http.ConnState) {
			mu.Lock()
			defer mu.Unlock()
			if s == http.StateClosed && idle[c] {
				closedIdle++
			}
			idle[c] = s == http.StateIdle
		},
	}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { srv.Close() })
	f := newFixture(t, mcp.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := f.m.Start(ctx, map[string]mcpconfig.Server{"idle": {URL: "http://" + l.Addr().String() + "/mcp"}}); err != nil {
		t.Fatal(err)
	}
	if end, _ := f.call(ctx, "idle__ping", `{}`); end.Err != nil || endText(end) != "pong" {
		t.Fatalf("first call: %q %v", endText(end), end.Err)
	}
	waitFor(t, "toold closing its idle connection", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return closedIdle > 0
	})
	if end, _ := f.call(ctx, "idle__ping", `{}`); end.Err != nil || endText(end) != "pong" {
		t.Fatalf("call after the idle connection closed: %q %v", endText(end), end.Err)
	}
}

// The server's idle timeout counts time without progress: a call that
// reports progress more often than that runs past it, with every note
// delivered before the End; a call that reports none ends TIMEOUT and the
// session stays usable. The server is the Go SDK's, in-process.
func TestIdleTimeout(t *testing.T) {
	server := sdk.NewServer(&sdk.Implementation{Name: "slow", Version: "1"}, &sdk.ServerOptions{HasTools: true})
	type args struct {
		Steps int `json:"steps,omitempty"`
		Every int `json:"every_ms,omitempty"`
	}
	sdk.AddTool(server, &sdk.Tool{Name: "work", Description: "reports steps of progress, every_ms apart; with none, waits until canceled"},
		func(ctx context.Context, req *sdk.CallToolRequest, a args) (*sdk.CallToolResult, any, error) {
			if a.Steps == 0 {
				<-ctx.Done()
				return nil, nil, ctx.Err()
			}
			for i := 1; i <= a.Steps; i++ {
				select {
				case <-ctx.Done():
					return nil, nil, ctx.Err()
				case <-time.After(time.Duration(a.Every) * time.Millisecond):
				}
				if err := req.Session.NotifyProgress(ctx, &sdk.ProgressNotificationParams{
					ProgressToken: req.Params.GetProgressToken(), Progress: float64(i), Total: float64(a.Steps)}); err != nil {
					return nil, nil, err
				}
			}
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "worked"}}}, nil, nil
		})
	url := serveHTTP(t, sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return server }, nil))
	f := newFixture(t, mcp.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const idle = time.Second
	entry := mcpconfig.Server{URL: url, Toold: mcpconfig.ServerPolicy{IdleTimeout: value.Duration(idle)}}
	if err := f.m.Start(ctx, map[string]mcpconfig.Server{"slow": entry}); err != nil {
		t.Fatal(err)
	}

	// 12 steps 200 ms apart: 2.4 s, over twice the idle timeout.
	began := time.Now()
	end, rec := f.call(ctx, "slow__work", `{"steps":12,"every_ms":200}`)
	if end.Err != nil || endText(end) != "worked" {
		t.Fatalf("a call with progress: %q %v", endText(end), end.Err)
	}
	if d := time.Since(began); d < 2*idle {
		t.Fatalf("the call took %s; the test needs it to outlast the idle timeout", d)
	}
	ps := rec.progress()
	if len(ps) != 12 || ps[11].Fraction != 1 {
		t.Fatalf("%d progress events, want 12 ending at 1: %+v", len(ps), ps)
	}

	end, rec = f.call(ctx, "slow__work", `{"steps":0}`)
	if !errors.Is(end.Err, errdefs.ErrTimeout) || !strings.Contains(end.Err.Error(), "sent neither progress nor a result") {
		t.Fatalf("a call without progress ended %v, want TIMEOUT", end.Err)
	}
	if len(rec.progress()) != 0 {
		t.Fatalf("progress from a call that reported none: %+v", rec.progress())
	}
	if end, _ := f.call(ctx, "slow__work", `{"steps":1,"every_ms":1}`); end.Err != nil || endText(end) != "worked" {
		t.Fatalf("after the timeout: %q %v", endText(end), end.Err)
	}
}
