// Package daemon wires toold together: it builds every dependency in order
// from a config.Config, serves gRPC on a unix socket and optionally TCP, and
// shuts down gracefully. cmd/toold is a thin wrapper around Main; end-to-end
// tests use the same Main to start a real daemon on a temp socket.
package daemon

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors"
	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/auth"
	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/logging"
	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/recovery"
	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/selector"
	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/reflection"
	"google.golang.org/grpc/status"

	pb "github.com/toold/toold/gen/toold/v1"
	"github.com/toold/toold/pkg/authz"
	"github.com/toold/toold/pkg/config"
	"github.com/toold/toold/pkg/events"
	"github.com/toold/toold/pkg/executor"
	"github.com/toold/toold/pkg/netguard"
	"github.com/toold/toold/pkg/service"
	"github.com/toold/toold/pkg/telemetry"
	"github.com/toold/toold/pkg/tools"
	"github.com/toold/toold/pkg/tools/collab"
	"github.com/toold/toold/pkg/tools/dialect"
	"github.com/toold/toold/pkg/tools/fileops"
	"github.com/toold/toold/pkg/tools/memops"
	"github.com/toold/toold/pkg/tools/terminal"
	"github.com/toold/toold/pkg/tools/vcs"
	"github.com/toold/toold/pkg/tools/web"
	"github.com/toold/toold/pkg/workspace"
)

// Version is toold's version, reported in Welcome and traces.
var Version = "0.1.0-dev"

// Main is a toold daemon. Set Config (and optionally Logger and
// TracerProvider), call Run, and Close when done.
type Main struct {
	// Config is the daemon's configuration.
	Config config.Config
	// Logger receives the daemon's logs; nil builds one from Config.Log
	// writing to stderr.
	Logger *slog.Logger
	// TracerProvider makes the spans; nil builds one from the OTEL_*
	// environment (see pkg/telemetry).
	TracerProvider *sdktrace.TracerProvider
	// Authorizer, when set, replaces the policy built from Config (tests),
	// with the capabilities in Capabilities (nil fields: none).
	Authorizer authz.Authorizer
	// Capabilities are the Authorizer's; set by Run when it builds the
	// policy from Config.
	Capabilities authz.Capabilities
	// MCPDialect, when set, makes the MCP server (toold mcp, /mcp) present
	// that agent's tool set ("claude-code", "codex", …) instead of toold's.
	MCPDialect string

	ws   *workspace.Workspace
	mode authz.Mode // the server's approval mode, parsed once
	// engine is the policy engine when the daemon built it (nil when
	// Main.Authorizer was given).
	engine   *authz.Engine
	registry *tools.Registry
	exec     *executor.Executor
	svc      *service.Server
	// wsServer is the WorkspaceService (watching files).
	wsServer  *service.WorkspaceServer
	health    *health.Server
	grpc      *grpc.Server
	listeners []net.Listener
	socket    string   // the socket path we created, removed on Close
	stateLock *os.File // holds the state directory (statelock.go)
	tpClose   func(context.Context) error
	debug     *http.Server
	mcp       mcpState    // see mcp.go
	memory    memoryState // see memory.go
	terminal  *terminal.Manager
	// terminalOff is why there is no terminal (no shell), or nil.
	terminalOff error
	// stateLocked says this toold holds its state directory (statelock.go):
	// what outlives it (processes, the egress proxy's port) is kept there.
	stateLocked bool
	egress      *netguard.Proxy // terminal.network: proxy
	leftovers   leftoverState   // see leftovers.go
	checkpts    checkpointState // see checkpoints.go
	observe     observeState    // see observe.go
	// healthSrv serves health only on Config.HealthListen (health.go).
	peers *peerGuard // see peers.go
	self  selfAddrs  // toold's own TCP listeners (peers.go)
	// operatorKey is the operator credential (operator.go); access decides
	// with it and the conversations' secrets who reads what.
	operatorKey string
	access      *service.Access
	healthSrv   *grpc.Server
	healthAddr  string
	serveWG     sync.WaitGroup
	trimStop    chan struct{} // memtrim.go
	closeOnce   sync.Once
	closeErr    error
}

// Run builds the daemon and starts serving. It returns once the listeners
// are open (or with the error that prevented it); serving continues until
// Close.
func (m *Main) Run(ctx context.Context) (err error) {
	defer func() {
		if err != nil {
			m.release()
		}
	}()
	// Nothing toold inherited reaches the processes it starts.
	closeInheritedOnExec() // inherited.go
	steps := &startupSteps{ctx: ctx}
	defer steps.end()
	steps.next("config")
	cfg := &m.Config
	if err := cfg.Validate(); err != nil {
		return err
	}
	if m.Logger == nil {
		m.Logger = NewLogger(cfg.Log, os.Stderr)
	}
	exporting := true // a TracerProvider given by the caller records
	if m.TracerProvider == nil {
		steps.next("telemetry")
		tp, shutdown, exp, err := telemetry.Setup(ctx, Version)
		if err != nil {
			return err
		}
		m.TracerProvider, m.tpClose, exporting = tp, shutdown, exp
	}
	var tracer trace.Tracer
	if exporting {
		tracer = m.TracerProvider.Tracer("github.com/toold/toold")
	}
	// The approval mode is parsed once, here (Validate checked it); the
	// rest of the daemon uses m.mode.
	m.mode, _ = authz.ParseMode(cfg.ApprovalMode)
	mode := m.mode

	steps.next("workspace and state")
	if m.ws, err = workspace.Open(cfg.Workspace); err != nil {
		return err
	}
	if m.memory.stateDir, err = config.StateDir(cfg.StateDir); err != nil {
		return err
	}
	if held, err := m.lockStateDir(m.memory.stateDir); held && err != nil {
		return err
	} else if err != nil {
		m.Logger.Warn("state directory unusable", "dir", m.memory.stateDir, "err", err)
	} else {
		m.stateLocked = true
	}
	// Without a usable state directory toold still runs (as memory does):
	// then nobody is the operator, and a conversation's records need its
	// secret.
	key, replaced, err := loadOperatorKey(m.memory.stateDir)
	if err != nil {
		m.Logger.Warn("no operator credential: reading other conversations' records is refused to everyone", "err", err)
	}
	if replaced != "" {
		m.Logger.Warn("operator credential: " + replaced)
	}
	m.operatorKey = key
	m.access = service.NewAccess(key, heldConversations{m})
	if m.Authorizer == nil {
		steps.next("policy")
		eng, err := m.newEngine()
		if err != nil {
			return err
		}
		m.Authorizer, m.Capabilities, m.engine = eng, eng.Capabilities(), eng
	}
	// What the policy can do besides deciding is passed on explicitly
	// (Main.Capabilities; a test's replacement policy brings its own).
	granter := m.Capabilities.Granter
	explainer := m.Capabilities.Explainer
	// The terminal (its sandbox probes start processes and wait for them)
	// is set up while the rest is built; startTerminal's wait joins it
	// before the tools are registered (startup.go).
	waitTerminal := m.startTerminal()
	defer waitTerminal()
	steps.next("dialects")
	m.registry = tools.NewRegistry()
	if err := m.registry.RegisterDialect(dialect.All()...); err != nil {
		return err
	}
	steps.next("observe")
	if err := m.startObserve(ctx); err != nil {
		return err
	}
	steps.next("memory")
	m.openMemory()
	steps.next("web and journals")
	more := m.moreOptions(toolLimits(cfg.Output))
	more.JournalDir = m.recoverJournals() // checkpoints.go
	steps.next("wait for terminal")
	if err := waitTerminal(); err != nil {
		return err
	}
	if m.terminalOff != nil {
		m.registry.SetUnavailable(terminalOff(m.terminalOff))
	}
	steps.next("tools")
	builtins := BuiltinTools(m.ws, toolLimits(cfg.Output), m.Capabilities, m.terminal, m.memory.tool, more)
	if u, off := web.SearchUnavailable(more.Web); off {
		m.registry.SetUnavailable(u) // listed as such, not offered
	}
	if m.terminal == nil {
		builtins = slices.DeleteFunc(builtins, func(t tools.Tool) bool { return t.Spec().Name == terminal.ToolName })
	}
	if err := m.registry.Register(builtins...); err != nil {
		return err
	}
	steps.next("executor")
	m.startCheckpoints() // checkpoints.go
	m.exec, err = executor.New(executor.Config{
		Registry:          m.registry,
		Authorizer:        m.Authorizer,
		Granter:           granter,
		Mode:              mode,
		DefaultTimeout:    time.Duration(cfg.Timeouts.Default),
		MaxTimeout:        time.Duration(cfg.Timeouts.Max),
		ApprovalTimeout:   time.Duration(cfg.ApprovalTimeout),
		MaxCallsPerStream: cfg.Limits.CallsPerStream,
		MaxCalls:          cfg.Limits.Calls,
		ResumeGrace:       time.Duration(cfg.Conversations.ResumeGrace),
		Log:               events.LogConfig{TailEvents: cfg.Conversations.TailEvents, TailBytes: cfg.Conversations.TailBytes},
		Conversations: executor.ConversationConfig{
			IdleTTL: time.Duration(cfg.Conversations.IdleTTL),
			MaxIdle: cfg.Conversations.MaxIdle,
			State:   conversationState{term: m.terminal, grants: granter},
		},
		Version:     Version,
		Workspace:   m.ws.Dir(),
		Logger:      m.Logger,
		Tracer:      tracer,
		Observe:     m.executorObserve(), // observe.go
		Checkpoints: m.checkpointer(),
	})
	if err != nil {
		return err
	}
	m.adoptTerminal() // survive.go
	m.svc = service.New(m.exec, service.Options{
		KeepaliveInterval: time.Duration(cfg.Keepalive),
		MaxMessageBytes:   cfg.Limits.MessageBytes,
		Logger:            m.Logger,
		Sandbox:           m.terminal.Layers(), // nil without a sandbox or a shell
	})
	steps.next("mcp")
	if err := m.startMCP(ctx); err != nil {
		return err
	}
	steps.next("grpc")
	m.peers = m.newPeerGuard()
	m.grpc = m.newGRPCServer()
	m.health = health.NewServer()
	healthpb.RegisterHealthServer(m.grpc, m.health)
	pb.RegisterToolServiceServer(m.grpc, m.svc)
	// Explain through the PolicyService judges commands as running outside
	// the sandbox: toolctl hook asks about commands an agent runs itself.
	pb.RegisterPolicyServiceServer(m.grpc, service.NewPolicyServer(m.exec, authz.OutsideSandbox(explainer), m.auditedGranter(granter), m.access, m.Logger))
	pb.RegisterAdminServiceServer(m.grpc, service.NewAdmin(m.mcp.manager, cfg.Token != "", m.access))
	pb.RegisterTerminalServiceServer(m.grpc, service.NewTerminalServer(service.TerminalsOf(m.terminal), cfg.Token != "", m.exec.Conversations(), m.access))
	pb.RegisterMemoryServiceServer(m.grpc, m.memory.server)
	m.wsServer = service.NewWorkspaceServer(m.ws, m.exec, explainer, m.access)
	pb.RegisterWorkspaceServiceServer(m.grpc, m.wsServer)
	pb.RegisterTextCallServiceServer(m.grpc, service.NewTextCallServer(m.registry))
	m.registerCheckpoints() // checkpoints.go
	if err := m.registerObserve(); err != nil {
		return err
	}
	reflection.Register(m.grpc)
	m.health.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	m.health.SetServingStatus(pb.ToolService_ServiceDesc.ServiceName, healthpb.HealthCheckResponse_SERVING)
	m.health.SetServingStatus(SandboxHealthService, m.sandboxHealth())

	steps.next("listen")
	if cfg.Socket != "" && cfg.Socket != "-" {
		perm, _ := cfg.SocketPerm() // checked by Validate
		l, err := listenUnix(cfg.Socket, perm)
		if err != nil {
			return err
		}
		m.socket = cfg.Socket
		m.listeners = append(m.listeners, l)
	}
	if cfg.Listen != "" {
		l, err := net.Listen("tcp", cfg.Listen)
		if err != nil {
			return err
		}
		m.listeners = append(m.listeners, m.shareTCP(l))
	}
	if cfg.DebugAddr != "" {
		if err := m.serveDebug(cfg.DebugAddr); err != nil {
			return err
		}
	}
	if cfg.HealthListen != "" {
		if err := m.serveHealth(cfg.HealthListen); err != nil {
			return err
		}
	}
	// Tools and the egress proxy never connect to these (peers.go).
	var own []string
	for _, a := range []string{m.TCPAddr(), m.observe.debugAddr, m.healthAddr} {
		if a != "" {
			own = append(own, a)
		}
	}
	m.self.set(own)
	for _, l := range m.listeners {
		m.serveWG.Add(1)
		go func() {
			defer m.serveWG.Done()
			if err := m.grpc.Serve(l); err != nil && !listenerClosed(err) {
				m.Logger.Error("serve failed", "addr", l.Addr().String(), "err", err)
			}
		}()
	}
	m.startLeftovers()
	// Start-up leaves garbage (schema compilation, policy parsing); give
	// its pages back once, and unmap the executable's pages that only
	// start-up used (textdrop.go), so an idle daemon stays small.
	go func() {
		debug.FreeOSMemory()
		if _, err := dropStartupText(); err != nil {
			m.Logger.Debug("start-up's executable pages stay mapped", "err", err)
		}
	}()
	m.startTrim() // and after every burst (memtrim.go)
	m.Logger.Info("toold serving", "version", Version, "socket", m.socket, "tcp", m.TCPAddr(),
		"workspace", m.ws.Dir(), "approval_mode", mode.String(), "tools", len(m.registry.List()))
	return nil
}

// BuiltinTools lists the built-in tools, in the order ListTools shows them.
// caps are the policy's capabilities: its Granter records the grants of
// user_collaboration (nil disables them), its Sensitivity withholds
// sensitive files from walks and its UseChecker checks file tools at use.
// term runs the commands and sessions of terminal_operations (with nil,
// the tool is listed and its calls fail UNAVAILABLE). more configures the
// tools after terminal_operations (web, version control); without it they
// take their defaults. mem is memory_operations (nil: listed, its calls
// fail UNAVAILABLE).
func BuiltinTools(ws *workspace.Workspace, limits tools.Limits, caps authz.Capabilities, term *terminal.Manager, mem *memops.MemoryOperations, more ...MoreOptions) []tools.Tool {
	// Sensitive files (keys, .env...) are left out of listings and searches
	// when the policy knows them, so a walk cannot read what a direct read
	// would be denied.
	var sensitive func(string) bool
	if caps.Sensitivity != nil {
		sensitive = caps.Sensitivity.Sensitive
	}
	// The file tools check again, when they run, what they are about to
	// touch (a path that changed since the decision; a hard link to a
	// sensitive file).
	guard := caps.UseChecker
	var mo MoreOptions
	if len(more) > 0 {
		mo = more[0]
	}
	termTool := terminal.New(term, limits)
	// The file tools refuse to change what the sandbox makes read-only for
	// commands beside the git directories: what a person's git runs from
	// the work tree (the terminal manager computes it for both).
	var gitNamed tools.GitNamed
	if term != nil {
		gitNamed = term
	}
	if mem == nil {
		mem = memops.New(nil, "", errors.New("no memory store is configured"))
	}
	return []tools.Tool{
		&tools.Think{},
		fileops.New(ws, limits, fileops.Options{Sensitive: sensitive, Guard: guard, JournalDir: mo.JournalDir, GitNamed: gitNamed}),
		&collab.UserCollaboration{},
		termTool,
		web.New(mo.Web),
		vcs.New(vcsOptions(ws, termTool, term, limits, mo.GitHooks)),
		mem,
	}
}

// terminalOff describes terminal_operations as unavailable because err.
func terminalOff(err error) tools.Unavailable {
	spec := terminal.New(nil, tools.Limits{}).Spec()
	u := tools.Unavailable{Name: spec.Name, Reason: err.Error() + "; install bash or sh (or set terminal.shell) to run commands"}
	for _, op := range spec.Operations {
		u.Operations = append(u.Operations, op.Name)
	}
	return u
}

// SocketPath returns the unix socket path, or "" when none.
func (m *Main) SocketPath() string { return m.socket }

// TCPAddr returns the TCP address being served, or "" when none.
func (m *Main) TCPAddr() string {
	for _, l := range m.listeners {
		if l.Addr().Network() == "tcp" {
			return l.Addr().String()
		}
	}
	return ""
}

// Workspace returns the workspace directory.
func (m *Main) Workspace() string { return m.ws.Dir() }

// Registry returns the tool registry (tests add tools to it).
func (m *Main) Registry() *tools.Registry { return m.registry }

// Terminal returns the manager of commands and terminal sessions (nil
// when toold runs without a shell).
func (m *Main) Terminal() *terminal.Manager { return m.terminal }

// Close shuts down gracefully: health reports NOT_SERVING, new calls are
// refused, running calls get Config.ShutdownGrace to finish and are then
// canceled (each still gets its ToolCallEnd), streams end, listeners close.
// A second call returns the first's result.
func (m *Main) Close() error {
	m.closeOnce.Do(func() { m.closeErr = m.shutdown() })
	return m.closeErr
}

func (m *Main) shutdown() error {
	if m.health != nil {
		m.health.Shutdown()
	}
	if m.svc != nil {
		grace := time.Duration(m.Config.ShutdownGrace)
		ctx, cancel := context.WithTimeout(context.Background(), grace)
		m.exec.Shutdown(ctx)
		cancel()
	}
	if m.debug != nil {
		_ = m.debug.Close()
	}
	m.stopMCP()
	// Background processes and sessions end with the daemon; attached
	// terminals then get SessionExited and their streams end.
	m.closeTerminal()
	// Todo and file watchers end, so that their streams do not hold
	// GracefulStop.
	if m.memory.server != nil {
		m.memory.server.Shutdown()
	}
	if m.wsServer != nil {
		m.wsServer.Shutdown()
	}
	if m.grpc != nil {
		// Streams end on their own once their calls have ended; unary RPCs
		// are short. Force the rest after a moment.
		done := make(chan struct{})
		go func() { m.grpc.GracefulStop(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			m.Logger.Warn("graceful stop timed out; forcing")
			m.grpc.Stop()
			<-done
		}
	}
	m.stopHealth()
	m.stopTrim()
	m.serveWG.Wait()
	return m.release()
}

// closeTerminal stops every command, background process and session
// (SIGTERM, SIGKILL after terminal.kill_grace) and deletes kept outputs.
// It is safe to call more than once.
func (m *Main) closeTerminal() error {
	defer m.closeEgress()
	if m.terminal == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(m.Config.Terminal.KillGrace)+10*time.Second)
	defer cancel()
	return m.terminal.Close(ctx)
}

// release frees what Run acquired.
func (m *Main) release() error {
	var errs []error
	m.stopLeftovers()
	m.stopMCP()
	errs = append(errs, m.closeTerminal())
	errs = append(errs, m.closeMemory())
	errs = append(errs, m.closeCheckpoints())
	errs = append(errs, m.stopObserve())
	m.stopHealth()
	for _, l := range m.listeners {
		_ = l.Close()
	}
	m.listeners = nil
	if m.socket != "" {
		if err := os.Remove(m.socket); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	if m.ws != nil {
		errs = append(errs, m.ws.Close())
	}
	errs = append(errs, m.unlockStateDir())
	if m.tpClose != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		errs = append(errs, m.tpClose(ctx))
		cancel()
	}
	return errors.Join(errs...)
}

// newGRPCServer builds the server: the service's codec and message limit,
// the peer guard's credentials, and ServerChain with the peer guard.
func (m *Main) newGRPCServer() *grpc.Server {
	opts := append(m.svc.GRPCServerOptions(), m.peers.serverOption())
	opts = append(opts, ServerChain(m.Logger, m.TracerProvider, m.Config.Token, m.peers.unary, m.peers.stream)...)
	return grpc.NewServer(opts...)
}

// ServerChain returns the stats handler and interceptor chains of toold's
// gRPC server, in the house order: the otelgrpc stats handler (spans from
// tp), then logging (with trace ids, to logger), the refusal of toold's
// own commands (guardUnary, guardStream: the peer guard, see peers.go;
// health included; nil leaves it out), auth by token (health exempt; ""
// checks nothing), and recovery last, so a panic in a handler becomes
// INTERNAL for that RPC. toold builds its server with it (newGRPCServer);
// toolbench's ladder builds servers with it to measure what the chain
// costs a call without the rest of toold.
func ServerChain(logger *slog.Logger, tp trace.TracerProvider, token string, guardUnary grpc.UnaryServerInterceptor, guardStream grpc.StreamServerInterceptor) []grpc.ServerOption {
	logf := logging.LoggerFunc(func(ctx context.Context, lvl logging.Level, msg string, fields ...any) {
		logger.Log(ctx, slog.Level(lvl), msg, fields...)
	})
	logOpts := []logging.Option{
		logging.WithLogOnEvents(logging.FinishCall),
		logging.WithFieldsFromContext(traceFields),
		logging.WithLevels(func(c codes.Code) logging.Level {
			if c == codes.OK || c == codes.Canceled {
				return logging.LevelDebug
			}
			return logging.DefaultServerCodeToLevel(c)
		}),
	}
	authFn := tokenAuth(token)
	notHealth := selector.MatchFunc(func(_ context.Context, cm interceptors.CallMeta) bool {
		return cm.Service != healthpb.Health_ServiceDesc.ServiceName
	})
	recoveryOpt := recovery.WithRecoveryHandlerContext(func(ctx context.Context, p any) error {
		logger.ErrorContext(ctx, "panic in handler", "panic", p, "stack", string(debug.Stack()))
		return status.Error(codes.Internal, "internal error; the details are in the toold log")
	})
	unary := []grpc.UnaryServerInterceptor{logging.UnaryServerInterceptor(logf, logOpts...)}
	stream := []grpc.StreamServerInterceptor{logging.StreamServerInterceptor(logf, logOpts...)}
	if guardUnary != nil {
		unary = append(unary, guardUnary)
	}
	if guardStream != nil {
		stream = append(stream, guardStream)
	}
	unary = append(unary,
		selector.UnaryServerInterceptor(auth.UnaryServerInterceptor(authFn), notHealth),
		recovery.UnaryServerInterceptor(recoveryOpt))
	stream = append(stream,
		selector.StreamServerInterceptor(auth.StreamServerInterceptor(authFn), notHealth),
		recovery.StreamServerInterceptor(recoveryOpt))
	return []grpc.ServerOption{
		grpc.StatsHandler(otelgrpc.NewServerHandler(otelgrpc.WithTracerProvider(tp))),
		grpc.ChainUnaryInterceptor(unary...),
		grpc.ChainStreamInterceptor(stream...),
	}
}

func traceFields(ctx context.Context) logging.Fields {
	if sc := trace.SpanContextFromContext(ctx); sc.HasTraceID() {
		return logging.Fields{"trace_id", sc.TraceID().String()}
	}
	return nil
}

// tokenAuth checks the bearer token when one is configured.
func tokenAuth(token string) auth.AuthFunc {
	want := []byte(token)
	return func(ctx context.Context) (context.Context, error) {
		if len(want) == 0 {
			return ctx, nil
		}
		got, err := auth.AuthFromMD(ctx, "bearer")
		if err != nil {
			return nil, status.Error(codes.Unauthenticated, "missing token: send \"authorization: bearer TOKEN\"")
		}
		if subtle.ConstantTimeCompare([]byte(got), want) != 1 {
			return nil, status.Error(codes.Unauthenticated, "invalid token")
		}
		return ctx, nil
	}
}

// listenUnix listens on a unix socket with mode perm (0600 or 0660). A stale socket file
// (nobody listening) is replaced; a live one is an error; a missing parent
// directory is an error (it is not created).
func listenUnix(path string, perm os.FileMode) (net.Listener, error) {
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode()&os.ModeSocket == 0 {
			return nil, fmt.Errorf("%s exists and is not a socket", path)
		}
		if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
			c.Close()
			return nil, fmt.Errorf("%s: another toold is listening there", path)
		} else if !errors.Is(err, syscall.ECONNREFUSED) {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if err := os.Remove(path); err != nil {
			return nil, err
		}
	}
	// A missing directory is a mistake (a typo, a volume not mounted), not
	// something to create silently at / and leave behind.
	if dir := filepath.Dir(path); dir != "." {
		if fi, err := os.Stat(dir); err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return nil, fmt.Errorf("socket %s: directory %s does not exist (create it first, or choose another --socket)", path, dir)
			}
			return nil, fmt.Errorf("socket %s: %w", path, err)
		} else if !fi.IsDir() {
			return nil, fmt.Errorf("socket %s: %s is not a directory", path, dir)
		}
	}
	l, err := net.Listen("unix", path)
	if err != nil {
		return nil, err
	}
	// net.Listen created the socket under the umask (typically 0755: no one
	// else may connect, since connecting needs write permission); narrow it.
	if err := os.Chmod(path, perm); err != nil {
		l.Close()
		return nil, err
	}
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	return l, nil
}

// NewLogger builds the daemon's slog logger.
func NewLogger(c config.Log, w io.Writer) *slog.Logger {
	var lvl slog.Level
	switch strings.ToLower(c.Level) {
	case "debug":
		lvl = slog.LevelDebug
	case "warn":
		lvl = slog.LevelWarn
	case "error":
		lvl = slog.LevelError
	}
	opts := &slog.HandlerOptions{Level: lvl}
	if c.Format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}
