// Package mcpserver serves toold's tools to MCP clients (Claude Desktop,
// Cursor, the MCP Inspector, agents built on an MCP SDK): over stdio for
// `toold mcp`, and over streamable HTTP at /mcp on toold's TCP listener.
//
// Every call runs through executor.Executor.Run, so it gets the same
// pipeline as a gRPC call: name resolution, coercion, validation, policy,
// the daemon's concurrency limits, timeouts and shutdown. The MCP session is
// the call's Host: progress goes out as notifications/progress when the
// client sent a progress token, and a policy "ask" becomes an elicitation
// request when the client declares that capability (else the call is
// denied with a message saying how to allow it). In 2026-07-28 a long call
// of a client that declares the tasks extension runs as a task (tasks.go).
package mcpserver

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toold/toold/pkg/executor"
	"github.com/toold/toold/pkg/mcp"
	"github.com/toold/toold/pkg/tools"
)

// Options configure a Server.
type Options struct {
	// Executor runs the calls. Required.
	Executor *executor.Executor
	// Registry is the set of tools offered. Required.
	Registry *tools.Registry
	// Logger receives session and sync events.
	Logger *slog.Logger
	// Version is toold's version, announced as serverInfo.
	Version string
	// Instructions are sent to clients in the handshake.
	Instructions string
	// Dialect, when set, presents another agent's tool set instead of
	// toold's ("claude-code", "codex", …; see tools.Dialect): its tools by
	// the agent's names and schemas, each call run in that dialect.
	Dialect string
}

// Server offers the registry's tools over MCP. Create it with New; it keeps
// its MCP tool list in step with the registry when Sync is called (the
// daemon calls it whenever MCP servers change the registry). Close ends
// every session.
type Server struct {
	opts Options
	// sdk serves every protocol version (stdio, and /mcp's stateless
	// endpoint for 2026-07-28); legacy serves /mcp's sessions (2025-11-25
	// and older), so an HTTP client of either era negotiates its own.
	sdk, legacy *sdk.Server
	rounds      rounds
	tasks       tasks
	// stdioConversation is the conversation of sessions that have no
	// session id (stdio: one session per process).
	stdioConversation string

	mu     sync.Mutex
	served map[string]string // MCP tool name -> fingerprint
	long   map[string]string // MCP tool name -> registry name, for long operations (tasks.go)
}

// legacyVersions are the protocol versions before 2026-07-28, which
// /mcp's stateful endpoint negotiates (sessions, server-to-client
// elicitation). Requests of the 2026-07-28 era go to the stateless
// endpoint, which the Go SDK serves that era on.
var legacyVersions = func() []string {
	var out []string
	for _, v := range sdk.SupportedProtocolVersions() {
		if v < newEra {
			out = append(out, v)
		}
	}
	return out
}()

// newEra is the first protocol revision without sessions and
// server-to-client requests.
const newEra = "2026-07-28"

// New returns a Server offering the registry's current tools.
func New(opts Options) *Server {
	if opts.Executor == nil || opts.Registry == nil {
		panic("mcpserver.New: Executor and Registry are required")
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Version == "" {
		opts.Version = "dev"
	}
	s := &Server{opts: opts, served: map[string]string{}, long: map[string]string{}, stdioConversation: newID("mcp-"),
		rounds: rounds{calls: map[string]*parkedCall{}}, tasks: tasks{tasks: map[string]*task{}}}
	impl := &sdk.Implementation{Name: "toold", Title: "toold", Version: opts.Version}
	caps := &sdk.ServerCapabilities{Logging: &sdk.LoggingCapabilities{}} // the SDK's default, plus:
	caps.AddExtension(TasksExtension, nil)
	s.sdk = sdk.NewServer(impl, &sdk.ServerOptions{
		Instructions: opts.Instructions,
		Logger:       mcp.SDKLogger(opts.Logger),
		HasTools:     true,
		Capabilities: caps,
	})
	s.registerTasks(s.sdk)
	s.legacy = sdk.NewServer(impl, &sdk.ServerOptions{
		Instructions:              opts.Instructions,
		Logger:                    mcp.SDKLogger(opts.Logger),
		HasTools:                  true,
		SupportedProtocolVersions: legacyVersions,
	})
	s.Sync()
	return s
}

// validName reports whether name is what MCP allows in a tool name: 1 to
// 128 of A-Z a-z 0-9 _ . - (a loop, not a regexp: the {1,128} compiled at
// start-up stayed as ~40 KB of heap).
func validName(name string) bool {
	if name == "" || len(name) > 128 {
		return false
	}
	for i := 0; i < len(name); i++ {
		switch c := name[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '_', c == '.', c == '-':
		default:
			return false
		}
	}
	return true
}

// offered is one MCP tool and the registry name it calls.
type offered struct {
	tool   *sdk.Tool
	target string
	long   bool // tools.OperationSpec.Long
}

// toolsFromRegistry lists what the registry offers as MCP tools, in the
// registry's order: a simple tool (and each MCP server's tool) under its
// own name; a consolidated tool as one MCP tool per operation, under the
// operation's flat name ("read_file"), or "tool.operation" when another
// tool holds that flat name. Only operations are offered, not the
// consolidated tool too: two names for one thing make a model hesitate, and
// each operation has its exact schema, where the consolidated one only
// documents a union.
func (s *Server) toolsFromRegistry() []offered {
	var out []offered
	seen := map[string]bool{}
	add := func(name, desc string, risk tools.Risk, schema json.RawMessage, long bool) {
		if !validName(name) || seen[name] {
			s.opts.Logger.Warn("tool not offered over MCP: its name is not a valid, unique MCP tool name", "tool", name)
			return
		}
		seen[name] = true
		if len(schema) == 0 {
			schema = json.RawMessage(`{"type":"object"}`)
		}
		out = append(out, offered{tool: &sdk.Tool{
			Name:        name,
			Description: desc,
			InputSchema: schema,
			Annotations: annotations(risk),
		}, target: name, long: long})
	}
	if s.opts.Dialect != "" {
		_, infos, _, err := s.opts.Registry.DialectListing(s.opts.Dialect)
		if err != nil {
			s.opts.Logger.Warn("no tools offered over MCP", "dialect", s.opts.Dialect, "err", err)
		}
		for _, in := range infos {
			add(in.Spec.Name, in.Spec.Description, in.Risk, in.Schema, slices.ContainsFunc(in.Spec.Operations, func(o tools.OperationSpec) bool { return o.Long }))
		}
		return out
	}
	for _, in := range s.opts.Registry.List() {
		if !in.Spec.Consolidated() {
			add(in.Spec.Name, in.Spec.Description, in.Risk, in.Schema, len(in.Spec.Operations) == 1 && in.Spec.Operations[0].Long)
			continue
		}
		for _, op := range in.Spec.Operations {
			name := op.Name
			if t, err := s.opts.Registry.Resolve(name, map[string]any{}); err != nil || t.ToolName != in.Spec.Name || t.Operation != op.Name {
				name = in.Spec.Name + "." + op.Name
			}
			desc := op.Description
			if desc == "" {
				desc = in.Spec.Description
			}
			add(name, desc, op.Risk, op.Schema, op.Long)
		}
	}
	return out
}

// annotations are the hints a client shows for a tool's risk.
func annotations(r tools.Risk) *sdk.ToolAnnotations {
	destructive := r == tools.RiskHigh || r == tools.RiskUnknown
	return &sdk.ToolAnnotations{ReadOnlyHint: r == tools.RiskLow, DestructiveHint: &destructive}
}

// Sync brings the MCP tool list in step with the registry: new and changed
// tools are added, vanished ones removed. Connected clients get
// notifications/tools/list_changed when something changed. It is safe to
// call at any time and from any goroutine.
func (s *Server) Sync() {
	s.mu.Lock()
	defer s.mu.Unlock()
	want := s.toolsFromRegistry()
	keep := map[string]bool{}
	clear(s.long)
	for _, o := range want {
		if o.long {
			s.long[o.tool.Name] = o.target
		}
		b, _ := json.Marshal(o.tool)
		fp := string(b)
		keep[o.tool.Name] = true
		if s.served[o.tool.Name] == fp {
			continue
		}
		s.sdk.AddTool(o.tool, s.handler(o.target))
		s.legacy.AddTool(o.tool, s.handler(o.target))
		s.served[o.tool.Name] = fp
	}
	var gone []string
	for name := range s.served {
		if !keep[name] {
			gone = append(gone, name)
			delete(s.served, name)
		}
	}
	if len(gone) > 0 {
		slices.Sort(gone)
		s.sdk.RemoveTools(gone...)
		s.legacy.RemoveTools(gone...)
	}
}

// handler runs a call of the MCP tool that targets the registry name. In
// the 2026-07-28 era a call that needs the person's input answers with an
// input-required result and is resumed by the client's next round
// (rounds.go); before it, the question goes to the client as an
// elicitation request while the call waits.
func (s *Server) handler(target string) sdk.ToolHandler {
	return func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		if isNewEra(req) && req.Params.RequestState != "" {
			return s.resume(ctx, req)
		}
		h := newHost(req, target)
		creq := s.callRequest(req, h, target)
		if isNewEra(req) {
			return s.round(ctx, s.newRoundsCall(creq, h))
		}
		end := s.opts.Executor.Run(ctx, creq, h)
		return h.withTrace(toResult(end)), nil
	}
}

// callRequest is the executor's request for an MCP call of target.
func (s *Server) callRequest(req *sdk.CallToolRequest, h *host, target string) *executor.CallRequest {
	return &executor.CallRequest{
		CallID:         newID("mcp-call-"),
		ConversationID: s.conversation(req),
		Name:           target,
		ArgsJSON:       string(req.Params.Arguments),
		OmitExecuting:  true,
		Client:         "mcp:" + h.client,
		TraceContext:   traceContext(req.Params.Meta),
		Dialect:        s.opts.Dialect,
	}
}

// traceContext is the W3C trace context a request carries in _meta
// ("traceparent", "tracestate"), so that toold's span of the call joins the
// caller's trace.
func traceContext(meta sdk.Meta) map[string]string {
	var tc map[string]string
	for _, k := range []string{"traceparent", "tracestate"} {
		if v, ok := meta[k].(string); ok && v != "" {
			if tc == nil {
				tc = map[string]string{}
			}
			tc[k] = v
		}
	}
	return tc
}

// conversation is the toold conversation of a call: grants from approvals
// last for it. A session (HTTP before 2026-07-28, or stdio) is one
// conversation; a 2026-07-28 request over HTTP has no session, so each of
// its calls is a conversation of its own and an approval "for this
// conversation" covers that call only.
func (s *Server) conversation(req *sdk.CallToolRequest) string {
	if id := req.Session.ID(); id != "" {
		return "mcp-" + id
	}
	if req.Extra != nil && req.Extra.Header != nil { // HTTP without a session
		return newID("mcp-stateless-")
	}
	return s.stdioConversation
}

// ServeStdio serves one MCP session over in and out (newline-delimited
// JSON-RPC, as `toold mcp` does on stdin and stdout) until the client closes
// in or ctx ends. Nothing else may write to out.
func (s *Server) ServeStdio(ctx context.Context, in io.ReadCloser, out io.WriteCloser) error {
	// mcp.IOTransport is sdk.IOTransport without its two extra decodes
	// and 32 KB buffers a message.
	ss, err := s.sdk.Connect(ctx, &mcp.IOTransport{Reader: in, Writer: out}, nil)
	if err != nil {
		return err
	}
	ended := make(chan error, 1)
	go func() { ended <- ss.Wait() }()
	select {
	case err := <-ended:
		return err
	case <-ctx.Done():
		_ = ss.Close()
		<-ended
		return nil
	}
}

// HTTPHandler returns the streamable HTTP endpoint. Every request must
// carry "Authorization: Bearer TOKEN" (401 otherwise), as gRPC calls must;
// with an empty token every request is refused, so /mcp is never open to
// whatever else runs on the machine (the daemon refuses to serve /mcp
// without a token). A request with an Origin header (a browser's) is
// refused unless that origin is /mcp's own, on a loopback address: not
// from a page of another site, nor of another local port (cross-origin
// protection; but localhost, 127.0.0.1 and [::1] at /mcp's own port are
// one origin, see sameLoopbackOrigin), and requests reaching a loopback address under a
// non-loopback Host are refused too, so a web page that rebinds its DNS
// name to 127.0.0.1 cannot reach the tools. Sessions idle for 30 minutes
// are closed.
func (s *Server) HTTPHandler(token string) http.Handler {
	sessions := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s.legacy }, &sdk.StreamableHTTPOptions{
		Logger:         mcp.SDKLogger(s.opts.Logger),
		SessionTimeout: 30 * time.Minute,
	})
	// In 2026-07-28 a client cancels a call over HTTP by closing its
	// request's response stream (no notifications/cancelled is expected):
	// the request's end must end the call (round cancels a parked call).
	stateless := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s.sdk }, &sdk.StreamableHTTPOptions{
		Logger:                       mcp.SDKLogger(s.opts.Logger),
		Stateless:                    true,
		PropagateRequestCancellation: true,
	})
	// A 2026-07-28 client names its version in a header on every request
	// and has no session; an older client starts with initialize (no
	// header) and then names its session.
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Mcp-Session-Id") == "" && r.Header.Get("Mcp-Protocol-Version") >= newEra {
			if !taskHeaderMatches(w, r) {
				return
			}
			stateless.ServeHTTP(w, r)
			return
		}
		sessions.ServeHTTP(w, r)
	})
	protected := http.NewCrossOriginProtection().Handler(h)
	want := []byte(token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if o := r.Header.Get("Origin"); o != "" && !loopbackOrigin(o) {
			http.Error(w, fmt.Sprintf("toold refuses requests from the web origin %q: /mcp serves local agents, and a page must not reach it (DNS rebinding)", o), http.StatusForbidden)
			return
		}
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok {
			got, ok = strings.CutPrefix(r.Header.Get("Authorization"), "bearer ")
		}
		if len(want) == 0 || !ok || subtle.ConstantTimeCompare([]byte(got), want) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="toold"`)
			http.Error(w, "toold requires \"Authorization: Bearer TOKEN\" (the token toold was started with)", http.StatusUnauthorized)
			return
		}
		if o := r.Header.Get("Origin"); o != "" && sameLoopbackOrigin(r, o) {
			h.ServeHTTP(w, r) // this listener under another loopback name
			return
		}
		protected.ServeHTTP(w, r)
	})
}

// sameLoopbackOrigin reports whether origin is, for a browser on this
// machine, /mcp's own origin under another loopback name: the Origin and
// the request's Host both name localhost, 127.0.0.1 or [::1], with the
// request's scheme and the port it arrived on. Go's cross-origin
// protection, which compares the Origin's host with Host literally, would
// refuse http://localhost:PORT at 127.0.0.1:PORT. Other names (a rebinding
// one, another loopback address such as 127.0.0.2) and other ports are not
// the same origin.
func sameLoopbackOrigin(r *http.Request, origin string) bool {
	scheme, port := "http", "80"
	if r.TLS != nil {
		scheme, port = "https", "443"
	}
	u, err := url.Parse(origin)
	if err != nil || u.Scheme != scheme || u.User != nil || (u.Path != "" && u.Path != "/") || !loopbackName(u.Hostname()) {
		return false
	}
	op := u.Port()
	if op == "" {
		op = port
	}
	host, hp, err := net.SplitHostPort(r.Host)
	if err != nil {
		host, hp = r.Host, port
	}
	if !loopbackName(host) || hp != op {
		return false
	}
	if la, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
		if _, lp, err := net.SplitHostPort(la.String()); err != nil || lp != op {
			return false
		}
	}
	return true
}

// loopbackName reports whether host is one of the names every browser
// resolves to this machine's loopback: localhost, 127.0.0.1, ::1.
func loopbackName(host string) bool {
	switch strings.ToLower(host) {
	case "localhost", "127.0.0.1", "::1":
		return true
	}
	return false
}

// maxTaskRequest bounds the body of a tasks/* request read to check its
// Mcp-Name header; tasks/update's answers are the largest.
const maxTaskRequest = 1 << 20

// taskHeaderMatches checks, for the tasks methods, what the SDK checks for
// tools/call (SEP-2243, extended by SEP-2663): the Mcp-Name header names
// the body's params.taskId. A mismatch (or no header) is answered with 400
// and a -32020 HeaderMismatch error, and false; every other request is left
// whole for the SDK.
func taskHeaderMatches(w http.ResponseWriter, r *http.Request) bool {
	method := r.Header.Get("Mcp-Method")
	if r.Method != http.MethodPost || (method != "tasks/get" && method != "tasks/update" && method != "tasks/cancel") {
		return true
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxTaskRequest))
	if err != nil {
		http.Error(w, "toold could not read the request: "+err.Error(), http.StatusRequestEntityTooLarge)
		return false
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			TaskID string `json:"taskId"`
		} `json:"params"`
	}
	if json.Unmarshal(body, &msg) != nil || msg.Method != method {
		return true // the SDK answers malformed requests and a mismatched Mcp-Method
	}
	name := strings.TrimSpace(r.Header.Get("Mcp-Name"))
	if name == msg.Params.TaskID {
		return true
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": msg.ID, "error": map[string]any{
		"code":    sdk.CodeHeaderMismatch,
		"message": fmt.Sprintf("header mismatch: Mcp-Name %q does not name the request's taskId %q", name, msg.Params.TaskID),
	}})
	return false
}

// loopbackOrigin reports whether an Origin header names a page served from
// this machine's loopback interface (localhost, 127.0.0.0/8, ::1).
func loopbackOrigin(origin string) bool {
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return false
	}
	host := u.Hostname()
	if host == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

// Close ends every MCP session (calls still running are canceled by their
// sessions' ends).
func (s *Server) Close() {
	s.rounds.closeAll()
	s.tasks.closeAll()
	for _, srv := range []*sdk.Server{s.sdk, s.legacy} {
		for ss := range srv.Sessions() {
			_ = ss.Close()
		}
	}
}

func newID(prefix string) string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}
