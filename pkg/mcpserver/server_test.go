package mcpserver_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toold/toold/pkg/authz"
	"github.com/toold/toold/pkg/executor"
	"github.com/toold/toold/pkg/mcpserver"
	"github.com/toold/toold/pkg/testenv"
	"github.com/toold/toold/pkg/tools"
)

// fakeTool is a func-field fake of a toold tool.
type fakeTool struct {
	spec tools.Spec
	run  func(context.Context, *tools.Call, *tools.Sink) (*tools.Result, error)
}

func (f *fakeTool) Spec() tools.Spec { return f.spec }
func (f *fakeTool) Describe(c *tools.Call) tools.Effect {
	return tools.Effect{Display: "doing " + c.Tool}
}
func (f *fakeTool) Run(ctx context.Context, c *tools.Call, s *tools.Sink) (*tools.Result, error) {
	return f.run(ctx, c, s)
}

func simple(name string, risk tools.Risk, run func(context.Context, *tools.Call, *tools.Sink) (*tools.Result, error)) *fakeTool {
	return &fakeTool{spec: tools.Spec{Name: name, Description: name + " tool", Source: "builtin", Operations: []tools.OperationSpec{{
		Name: name, Risk: risk, Schema: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}}}`),
	}}}, run: run}
}

// askRisky is a fake policy: it asks before "risky", asks to run
// "escape" outside the sandbox, and allows everything else.
type askRisky struct{}

func (askRisky) Authorize(_ context.Context, r *authz.Request) (authz.Verdict, error) {
	if r.Tool == "escape" {
		return authz.Verdict{Decision: authz.Ask, Risk: tools.RiskHigh, Reason: "it asked to run outside the sandbox", Rule: "test-outside", OutsideSandbox: true,
			Scopes: []authz.Scope{
				{ID: "once", Tool: "escape", Description: "this call only"},
				{ID: "conv", Conversation: true, Tool: "escape", Description: "escape, for this conversation"},
			}}, nil
	}
	if r.Tool != "risky" {
		return authz.Verdict{Decision: authz.Allow, Risk: r.Risk}, nil
	}
	return authz.Verdict{Decision: authz.Ask, Risk: r.Risk, Reason: "risky things need a person", Rule: "test-ask",
		Scopes: []authz.Scope{
			{ID: "once", Tool: "risky", Description: "this call only"},
			{ID: "conv", Conversation: true, Tool: "risky", Description: "risky, for this conversation"},
		}}, nil
}

func newServer(t *testing.T) (*mcpserver.Server, *tools.Registry) {
	t.Helper()
	reg := tools.NewRegistry()
	err := reg.Register(
		simple("slow", tools.RiskLow, func(_ context.Context, _ *tools.Call, s *tools.Sink) (*tools.Result, error) {
			for _, f := range []float64{0.25, 0.5, 1} {
				if err := s.Progress("working", f); err != nil {
					return nil, err
				}
			}
			return &tools.Result{Text: "done", Structured: map[string]any{"steps": 3}}, nil
		}),
		simple("risky", tools.RiskHigh, func(context.Context, *tools.Call, *tools.Sink) (*tools.Result, error) {
			return &tools.Result{Text: "ran"}, nil
		}),
		simple("asker", tools.RiskLow, func(ctx context.Context, _ *tools.Call, s *tools.Sink) (*tools.Result, error) {
			a, err := s.Ask(ctx, tools.Question{Prompt: "Which color?", Choices: []string{"red", "blue"}})
			if err != nil {
				return nil, err
			}
			return &tools.Result{Text: "chose " + a}, nil
		}),
		&fakeTool{spec: tools.Spec{Name: "file_ops", Description: "files", Source: "builtin", Operations: []tools.OperationSpec{
			{Name: "peek", Description: "Peek at a file.", Risk: tools.RiskLow, Schema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`)},
			{Name: "slow", Description: "Same flat name as a tool.", Risk: tools.RiskMedium},
		}}, run: func(_ context.Context, c *tools.Call, _ *tools.Sink) (*tools.Result, error) {
			return &tools.Result{Text: c.Tool + "." + c.Operation}, nil
		}},
	)
	if err != nil {
		t.Fatal(err)
	}
	svc, err := executor.New(executor.Config{Registry: reg, Authorizer: askRisky{}})
	if err != nil {
		t.Fatal(err)
	}
	srv := mcpserver.New(mcpserver.Options{Executor: svc, Registry: reg, Version: "test"})
	t.Cleanup(srv.Close)
	return srv, reg
}

// connect serves one stdio session of srv over pipes and connects a go-sdk
// client to it.
func connect(t *testing.T, srv *mcpserver.Server, opts *sdk.ClientOptions) *sdk.ClientSession {
	t.Helper()
	return connectEra(t, srv, opts, "")
}

// eras are the protocol revisions toold's server speaks, newest first:
// 2026-07-28 (no server-to-client requests: input-required results) and
// 2025-11-25 (elicitation requests during the call).
var eras = []string{"2026-07-28", "2025-11-25"}

// connectEra is connect at one protocol revision ("" for the client's
// newest), checking that the server negotiated it.
func connectEra(t *testing.T, srv *mcpserver.Server, opts *sdk.ClientOptions, era string) *sdk.ClientSession {
	t.Helper()
	cr, sw := io.Pipe()
	sr, cw := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.ServeStdio(ctx, sr, sw) }()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test-client", Version: "1"}, opts).
		Connect(context.Background(), &sdk.IOTransport{Reader: cr, Writer: cw}, &sdk.ClientSessionOptions{ProtocolVersion: era})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if got := cs.InitializeResult().ProtocolVersion; era != "" && got != era {
		cancel()
		t.Fatalf("negotiated %s, want %s", got, era)
	}
	t.Cleanup(func() {
		cs.Close()
		cancel()
		<-served
	})
	return cs
}

func text(r *sdk.CallToolResult) string {
	var parts []string
	for _, c := range r.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

func TestToolsList(t *testing.T) {
	srv, reg := newServer(t)
	changed := make(chan struct{}, 4)
	cs := connect(t, srv, &sdk.ClientOptions{ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) { changed <- struct{}{} }})
	ctx := context.Background()
	names := func() map[string]*sdk.Tool {
		res, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]*sdk.Tool{}
		for _, tool := range res.Tools {
			m[tool.Name] = tool
		}
		return m
	}
	got := names()
	// The consolidated tool is offered as its operations: "peek" by its
	// flat name, "slow" as file_ops.slow since the tool "slow" holds the name.
	want := []string{"asker", "file_ops.slow", "peek", "risky", "slow"}
	if keys := slices.Sorted(func(y func(string) bool) {
		for k := range got {
			if !y(k) {
				return
			}
		}
	}); !slices.Equal(keys, want) {
		t.Fatalf("tools %v, want %v", keys, want)
	}
	if a := got["risky"].Annotations; a == nil || a.ReadOnlyHint || a.DestructiveHint == nil || !*a.DestructiveHint {
		t.Fatalf("risky annotations %+v", a)
	}
	if a := got["peek"].Annotations; a == nil || !a.ReadOnlyHint {
		t.Fatalf("peek annotations %+v", a)
	}
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "file_ops.slow"})
	if err != nil || res.IsError || text(res) != "file_ops.slow" {
		t.Fatalf("dotted operation: %v %v", text(res), err)
	}

	// A tool joining the registry reaches connected clients.
	reg.Register(simple("late", tools.RiskLow, func(context.Context, *tools.Call, *tools.Sink) (*tools.Result, error) {
		return &tools.Result{Text: "late"}, nil
	}))
	srv.Sync()
	select {
	case <-changed:
	case <-time.After(5 * time.Second):
		t.Fatal("no notifications/tools/list_changed")
	}
	if names()["late"] == nil {
		t.Fatal("late tool not listed after Sync")
	}
}

// Progress reaches the client in both protocol eras, as
// notifications/progress for the request's progress token.
func TestProgressAndResult(t *testing.T) {
	srv, _ := newServer(t)
	for _, era := range eras {
		t.Run(era, func(t *testing.T) {
			var mu sync.Mutex
			var got []*sdk.ProgressNotificationParams
			cs := connectEra(t, srv, &sdk.ClientOptions{ProgressNotificationHandler: func(_ context.Context, r *sdk.ProgressNotificationClientRequest) {
				mu.Lock()
				got = append(got, r.Params)
				mu.Unlock()
			}}, era)
			res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "slow", Meta: sdk.Meta{"progressToken": "p1"}})
			if err != nil || res.IsError || text(res) != "done" {
				t.Fatalf("%q %v", text(res), err)
			}
			if m, _ := res.StructuredContent.(map[string]any); m["steps"] != float64(3) || m[mcpserver.StructuredTextKey] != "done" {
				t.Fatalf("structuredContent %v", res.StructuredContent)
			}
			n := func() int { mu.Lock(); defer mu.Unlock(); return len(got) }
			testenv.Poll(t, 5*time.Second, "3 progress notifications", func() bool { return n() >= 3 })
			mu.Lock()
			defer mu.Unlock()
			if len(got) != 3 {
				t.Fatalf("%d progress notifications, want 3", len(got))
			}
			for i, p := range got {
				if want := []float64{25, 50, 100}[i]; p.Progress != want || p.Total != 100 || p.ProgressToken != "p1" {
					t.Fatalf("notification %d: %+v", i, p)
				}
			}
		})
	}
	// Invalid arguments are a result for the model, not a protocol error.
	res, err := connect(t, srv, nil).CallTool(context.Background(), &sdk.CallToolParams{Name: "slow", Arguments: map[string]any{"n": "x"}})
	if err != nil || !res.IsError || !strings.Contains(text(res), "Error (INVALID_ARGUMENTS)") || res.Meta[mcpserver.MetaErrorCode] != "INVALID_ARGUMENTS" {
		t.Fatalf("bad arguments: %q %v %v", text(res), res.Meta, err)
	}
}

// A client that gives up on a call (its context canceled: the go-sdk
// client sends notifications/cancelled, in both eras) ends the running
// tool's context, and the session stays usable.
func TestCancellationEndsTheCall(t *testing.T) {
	srv, reg := newServer(t)
	started := make(chan struct{}, 1)
	ended := make(chan error, 1)
	if err := reg.Register(simple("block", tools.RiskLow, func(ctx context.Context, _ *tools.Call, _ *tools.Sink) (*tools.Result, error) {
		started <- struct{}{}
		<-ctx.Done()
		ended <- context.Cause(ctx)
		return nil, ctx.Err()
	})); err != nil {
		t.Fatal(err)
	}
	srv.Sync()
	for _, era := range eras {
		t.Run(era, func(t *testing.T) {
			cs := connectEra(t, srv, nil, era)
			ctx, cancel := context.WithCancel(context.Background())
			called := make(chan error, 1)
			go func() {
				_, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "block", Meta: sdk.Meta{"progressToken": "c1"}})
				called <- err
			}()
			select {
			case <-started:
			case <-time.After(10 * time.Second):
				t.Fatal("the tool never started")
			}
			cancel()
			select {
			case err := <-ended:
				if err == nil {
					t.Fatal("the tool's context ended without a cause")
				}
			case <-time.After(10 * time.Second):
				t.Fatal("canceling the call did not end the tool's context")
			}
			if err := <-called; err == nil {
				t.Fatal("a canceled call returned no error to the client")
			}
			res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "slow"})
			if err != nil || text(res) != "done" {
				t.Fatalf("after the cancel, the session: %q %v", text(res), err)
			}
		})
	}
}

// An approval of the outside-sandbox kind reaches an MCP client as an
// elicitation that says so, with no conversation choice, in both eras;
// approved once, the call runs.
func TestOutsideSandboxApproval(t *testing.T) {
	srv, reg := newServer(t)
	if err := reg.Register(simple("escape", tools.RiskHigh, func(context.Context, *tools.Call, *tools.Sink) (*tools.Result, error) {
		return &tools.Result{Text: "ran outside"}, nil
	})); err != nil {
		t.Fatal(err)
	}
	srv.Sync()
	for _, era := range eras {
		t.Run(era, func(t *testing.T) {
			var msg string
			var choices []any
			cs := connectEra(t, srv, &sdk.ClientOptions{ElicitationHandler: func(_ context.Context, r *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
				msg = r.Params.Message
				schema, _ := json.Marshal(r.Params.RequestedSchema)
				var s struct {
					Properties struct {
						Decision struct {
							Enum []any `json:"enum"`
						} `json:"decision"`
					} `json:"properties"`
				}
				json.Unmarshal(schema, &s)
				choices = s.Properties.Decision.Enum
				return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"decision": "approve once"}}, nil
			}}, era)
			res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "escape"})
			if err != nil || res.IsError || text(res) != "ran outside" {
				t.Fatalf("approved once: %q %v", text(res), err)
			}
			if !strings.Contains(msg, "OUTSIDE toold's sandbox") || !slices.Equal(choices, []any{"approve once", "deny"}) {
				t.Fatalf("the question: %q, choices %v", msg, choices)
			}
		})
	}
}

// A policy "ask" becomes an elicitation; the answer decides.
func TestApprovalByElicitation(t *testing.T) {
	tests := []struct {
		name     string
		answer   *sdk.ElicitResult // nil: the client has no elicitation capability
		isError  bool
		contains string
	}{
		{"approve once", &sdk.ElicitResult{Action: "accept", Content: map[string]any{"decision": "approve once"}}, false, "ran"},
		{"approve for the conversation", &sdk.ElicitResult{Action: "accept", Content: map[string]any{"decision": "approve for this conversation: risky, for this conversation"}}, false, "ran"},
		{"deny with a reason", &sdk.ElicitResult{Action: "accept", Content: map[string]any{"decision": "deny", "reason": "not today"}}, true, "Error (REJECTED_BY_USER): the user rejected this call: not today"},
		{"decline", &sdk.ElicitResult{Action: "decline"}, true, "REJECTED_BY_USER"},
		{"no elicitation capability", nil, true, "Error (DENIED)"},
	}
	for _, era := range eras {
		for _, tt := range tests {
			t.Run(era+"/"+tt.name, func(t *testing.T) {
				srv, _ := newServer(t)
				var asked *sdk.ElicitParams
				opts := &sdk.ClientOptions{}
				if tt.answer != nil {
					opts.ElicitationHandler = func(_ context.Context, r *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
						asked = r.Params
						return tt.answer, nil
					}
				}
				cs := connectEra(t, srv, opts, era)
				res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "risky"})
				if err != nil {
					t.Fatal(err)
				}
				if res.IsError != tt.isError || !strings.Contains(text(res), tt.contains) {
					t.Fatalf("isError %v, %q; want %v, %q", res.IsError, text(res), tt.isError, tt.contains)
				}
				if tt.answer == nil {
					if !strings.Contains(text(res), "elicitation capability") || !strings.Contains(text(res), "--approval-mode yolo") {
						t.Fatalf("the denial does not say how to allow the call: %q", text(res))
					}
					return
				}
				if asked == nil || !strings.Contains(asked.Message, "risky things need a person") || !strings.Contains(asked.Message, "Risk: high") {
					t.Fatalf("elicitation message: %+v", asked)
				}
			})
		}
	}
}

func TestAskByElicitation(t *testing.T) {
	for _, era := range eras {
		t.Run(era, func(t *testing.T) {
			srv, _ := newServer(t)
			cs := connectEra(t, srv, &sdk.ClientOptions{ElicitationHandler: func(_ context.Context, r *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
				if r.Params.Message != "Which color?" {
					t.Errorf("question %q", r.Params.Message)
				}
				return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"answer": "blue"}}, nil
			}}, era)
			res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "asker"})
			if err != nil || res.IsError || text(res) != "chose blue" {
				t.Fatalf("%q %v", text(res), err)
			}
		})
	}
}

// In the 2026-07-28 era, an approval is an input-required result the client
// answers by calling again with the answer and the requestState: the call
// runs between the rounds in toold, and only the requestState toold handed
// out resumes it.
func TestApprovalAsInputRequiredResult(t *testing.T) {
	srv, _ := newServer(t)
	cs := connectEra(t, srv, &sdk.ClientOptions{
		Capabilities:   &sdk.ClientCapabilities{Elicitation: &sdk.ElicitationCapabilities{Form: &sdk.FormElicitationCapabilities{}}},
		MultiRoundTrip: &sdk.MultiRoundTripOptions{Disabled: true},
	}, "2026-07-28")
	ctx := context.Background()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "risky"})
	if err != nil {
		t.Fatal(err)
	}
	if !res.NeedsInput() || res.RequestState == "" {
		t.Fatalf("no input-required result: %+v", res)
	}
	q, ok := res.InputRequests["toold"].(*sdk.ElicitParams)
	if !ok || !strings.Contains(q.Message, "risky things need a person") {
		t.Fatalf("input request %+v", res.InputRequests)
	}
	// A forged requestState resumes nothing.
	if _, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "risky", RequestState: "toold-call-forged",
		InputResponses: sdk.InputResponseMap{"toold": &sdk.ElicitResult{Action: "accept", Content: map[string]any{"decision": "approve once"}}}}); err == nil || !strings.Contains(err.Error(), "requestState") {
		t.Fatalf("forged requestState: %v", err)
	}
	// A round without the answer shows the question again.
	again, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "risky", RequestState: res.RequestState})
	if err != nil || !again.NeedsInput() || again.RequestState != res.RequestState {
		t.Fatalf("round without an answer: %+v %v", again, err)
	}
	done, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "risky", RequestState: res.RequestState,
		InputResponses: sdk.InputResponseMap{"toold": &sdk.ElicitResult{Action: "accept", Content: map[string]any{"decision": "approve once"}}}})
	if err != nil || done.NeedsInput() || done.IsError || text(done) != "ran" {
		t.Fatalf("answered round: %+v %v", done, err)
	}
	// The call ended: its requestState is spent.
	if _, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "risky", RequestState: res.RequestState,
		InputResponses: sdk.InputResponseMap{"toold": &sdk.ElicitResult{Action: "accept", Content: map[string]any{"decision": "approve once"}}}}); err == nil {
		t.Fatal("a spent requestState ran the call again")
	}
}

// The Origin check holds on its own, whatever the listener's address: a
// page whose name was rebound to the server's address sends its own Host
// and Origin (same-origin to the browser) and is refused with the token.
func TestHTTPHandlerRefusesForeignOrigins(t *testing.T) {
	srv, _ := newServer(t)
	h := srv.HTTPHandler("tok")
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`
	for origin, want := range map[string]int{
		"http://rebind.example:7777": http.StatusForbidden,
		"http://10.0.0.5:7777":       http.StatusForbidden,
		"":                           http.StatusOK,
	} {
		req := httptest.NewRequest("POST", "http://rebind.example:7777/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer tok")
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != want {
			t.Fatalf("Origin %q: %d %s, want %d", origin, rec.Code, rec.Body, want)
		}
	}
	// With no token configured, nothing is served.
	req := httptest.NewRequest("POST", "http://127.0.0.1:7777/mcp", strings.NewReader(body))
	rec := httptest.NewRecorder()
	srv.HTTPHandler("").ServeHTTP(rec, req)
	if rec.Code != http.StatusUnauthorized {
		t.Fatalf("no token configured: %d", rec.Code)
	}
}

// A W3C trace context in the request's _meta makes toold's call part of the
// caller's trace, in both eras; the result names the trace.
func TestTraceContextInMeta(t *testing.T) {
	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	for _, era := range eras {
		t.Run(era, func(t *testing.T) {
			srv, _ := newServer(t)
			cs := connectEra(t, srv, nil, era)
			res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "slow",
				Meta: sdk.Meta{"traceparent": "00-" + traceID + "-00f067aa0ba902b7-01"}})
			if err != nil || res.IsError {
				t.Fatalf("%v %v", text(res), err)
			}
			if got := res.Meta[mcpserver.MetaTraceID]; got != traceID {
				t.Fatalf("trace id %v, want the caller's %s", got, traceID)
			}
		})
	}
}

// For a person's browser on this machine, localhost, 127.0.0.1 and [::1]
// at /mcp's own port are one origin (a page of toold's port, whichever
// name it was opened by): allowed over a real listener, with the fetch
// metadata a browser sends (cross-site: the names differ). Another name
// (rebinding), another loopback address, another port, another scheme, a
// rebinding Host, and a Host that lies about the port stay refused.
func TestHTTPHandlerLoopbackNamesAreOneOrigin(t *testing.T) {
	srv, _ := newServer(t)
	ts := httptest.NewServer(srv.HTTPHandler("tok"))
	defer ts.Close()
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(ts.URL, "http://"))
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`
	for _, tt := range []struct {
		host, origin string
		want         int
	}{
		{"127.0.0.1:" + port, "http://localhost:" + port, http.StatusOK},
		{"127.0.0.1:" + port, "http://[::1]:" + port, http.StatusOK},
		{"127.0.0.1:" + port, "http://127.0.0.1:" + port, http.StatusOK},
		{"localhost:" + port, "http://127.0.0.1:" + port, http.StatusOK},
		{"[::1]:" + port, "http://localhost:" + port, http.StatusOK},
		{"127.0.0.1:" + port, "http://localhost:1", http.StatusForbidden},
		{"127.0.0.1:" + port, "http://evil.example:" + port, http.StatusForbidden},
		{"127.0.0.1:" + port, "http://localhost.evil.example:" + port, http.StatusForbidden},
		{"127.0.0.1:" + port, "http://127.0.0.2:" + port, http.StatusForbidden},
		{"127.0.0.1:" + port, "https://localhost:" + port, http.StatusForbidden},
		{"evil.example:" + port, "http://localhost:" + port, http.StatusForbidden},
		{"localhost:1", "http://localhost:1", http.StatusForbidden},
	} {
		req, err := http.NewRequest("POST", ts.URL+"/mcp", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Host = tt.host
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer tok")
		req.Header.Set("Origin", tt.origin)
		req.Header.Set("Sec-Fetch-Site", "cross-site")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tt.want {
			t.Errorf("Host %s, Origin %s: HTTP %d %s, want %d", tt.host, tt.origin, resp.StatusCode, b, tt.want)
		}
	}
}

// The MCP server's host shows an adopted output buffer (tools.Sink.Adopt,
// as run_command's stdout comes) as a progress message and frees it: four
// calls at once, each adopting buffers filled with its own letter, get
// progress messages of their letter only — a buffer freed before its text
// was taken would show another call's bytes.
func TestAdoptedOutputShownAsProgress(t *testing.T) {
	reg := tools.NewRegistry()
	err := reg.Register(&fakeTool{spec: tools.Spec{Name: "adopter", Source: "builtin", Operations: []tools.OperationSpec{{Name: "adopter", Risk: tools.RiskLow,
		Schema: json.RawMessage(`{"type":"object","properties":{"letter":{"type":"string"}},"required":["letter"]}`)}}},
		run: func(_ context.Context, c *tools.Call, s *tools.Sink) (*tools.Result, error) {
			letter := c.Args["letter"].(string)[0]
			for range 8 {
				p := tools.OutputBuffer()[:tools.OutputBufferSize]
				for i := range p {
					p[i] = letter
				}
				if err := s.Adopt(tools.Stdout, p); err != nil {
					return nil, err
				}
			}
			return &tools.Result{Text: "done"}, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	x, err := executor.New(executor.Config{Registry: reg, Authorizer: authz.AllowAll{}})
	if err != nil {
		t.Fatal(err)
	}
	srv := mcpserver.New(mcpserver.Options{Executor: x, Registry: reg, Version: "test"})
	t.Cleanup(srv.Close)
	var mu sync.Mutex
	got := map[any][]string{}
	cs := connect(t, srv, &sdk.ClientOptions{ProgressNotificationHandler: func(_ context.Context, r *sdk.ProgressNotificationClientRequest) {
		mu.Lock()
		got[r.Params.ProgressToken] = append(got[r.Params.ProgressToken], r.Params.Message)
		mu.Unlock()
	}})
	letters := "WXYZ"
	var wg sync.WaitGroup
	for _, l := range letters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "adopter", Arguments: map[string]any{"letter": string(l)}, Meta: sdk.Meta{"progressToken": string(l)}})
			if err != nil || res.IsError {
				t.Errorf("call %c: %v %v", l, err, res)
			}
		}()
	}
	wg.Wait()
	n := func() int {
		mu.Lock()
		defer mu.Unlock()
		m := 0
		for _, msgs := range got {
			m += len(msgs)
		}
		return m
	}
	testenv.Poll(t, 10*time.Second, "32 progress notifications", func() bool { return n() >= 32 })
	mu.Lock()
	defer mu.Unlock()
	for _, l := range letters {
		msgs := got[string(l)]
		if len(msgs) != 8 {
			t.Errorf("call %c: %d progress messages, want 8", l, len(msgs))
		}
		want := "[stdout] " + strings.Repeat(string(l), 1024) + "…"
		for i, m := range msgs {
			if m != want {
				t.Errorf("call %c message %d: %.40q…, want its own letter only", l, i, m)
			}
		}
	}
}
