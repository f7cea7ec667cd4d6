// Package service adapts toold's executor to gRPC: it converts between the
// wire types in gen/ and the plain Go types of pkg/tools, pkg/authz and
// pkg/events, and runs the ExecuteTool stream state machine.
package service

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	pb "github.com/toold/toold/gen/toold/v1"
	"github.com/toold/toold/pkg/authz"
	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/events"
	"github.com/toold/toold/pkg/tools"
)

// Config configures a Server. Zero durations and limits take defaults.
type Config struct {
	// Registry holds the tools. Required.
	Registry *tools.Registry
	// Authorizer decides on calls; nil allows everything.
	Authorizer authz.Authorizer
	// Mode is the server's approval mode; streams may only tighten it.
	Mode authz.Mode
	// DefaultTimeout applies to calls that ask for none (default 2 min).
	DefaultTimeout time.Duration
	// MaxTimeout caps what a call may ask for (default 30 min).
	MaxTimeout time.Duration
	// ApprovalTimeout ends a call waiting for an approval or an answer with
	// APPROVAL_TIMEOUT; zero waits until the call is canceled or the stream
	// ends.
	ApprovalTimeout time.Duration
	// MaxCallsPerStream bounds concurrent calls on one stream (default 64).
	MaxCallsPerStream int
	// MaxCalls bounds concurrent calls on the daemon (default 1024).
	MaxCalls int
	// KeepaliveInterval is how long a stream may be idle before a Keepalive
	// event (default 15 s; negative disables).
	KeepaliveInterval time.Duration
	// Queue bounds each stream's event queue.
	Queue events.QueueConfig
	// MaxMessageBytes bounds one client message (default 4 MiB); a larger
	// one is refused on its own (see GRPCServerOptions).
	MaxMessageBytes int
	// Conversations binds conversations to secrets and reaps idle ones.
	Conversations ConversationConfig
	// Version and Workspace are reported in Welcome.
	Version, Workspace string
	// Logger receives one line per call and the details of internal errors.
	Logger *slog.Logger
	// Tracer makes the per-call spans. Nil means nothing would receive
	// them (no exporter): calls then get trace ids generated locally, for
	// events and logs, and no spans.
	Tracer trace.Tracer
}

func (c Config) withDefaults() Config {
	if c.Authorizer == nil {
		c.Authorizer = authz.AllowAll{}
	}
	if c.Mode == authz.ModeUnset {
		c.Mode = authz.ModeAuto
	}
	if c.DefaultTimeout <= 0 {
		c.DefaultTimeout = 2 * time.Minute
	}
	if c.MaxTimeout <= 0 {
		c.MaxTimeout = 30 * time.Minute
	}
	if c.DefaultTimeout > c.MaxTimeout {
		c.DefaultTimeout = c.MaxTimeout
	}
	if c.MaxCallsPerStream <= 0 {
		c.MaxCallsPerStream = 64
	}
	if c.MaxCalls <= 0 {
		c.MaxCalls = 1024
	}
	if c.KeepaliveInterval == 0 {
		c.KeepaliveInterval = 15 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.MaxMessageBytes <= 0 {
		c.MaxMessageBytes = DefaultMaxMessageBytes
	}
	if c.Conversations.Logger == nil {
		c.Conversations.Logger = c.Logger
	}
	return c
}

// Server implements the ToolService. Create it with New; stop it with
// Shutdown.
type Server struct {
	pb.UnimplementedToolServiceServer

	cfg   Config
	exec  *Executor
	convs *Conversations

	mu       sync.Mutex
	active   int           // calls running on the daemon
	idle     chan struct{} // closed when active drops to zero during drain
	draining chan struct{} // closed when Shutdown starts
	kill     context.Context
	killFn   context.CancelCauseFunc
}

// New returns a Server.
func New(cfg Config) *Server {
	kill, killFn := context.WithCancelCause(context.Background())
	s := &Server{cfg: cfg.withDefaults(), draining: make(chan struct{}), kill: kill, killFn: killFn}
	s.exec = &Executor{cfg: &s.cfg}
	s.convs = NewConversations(s.cfg.Conversations)
	return s
}

// Conversations returns the server's conversation registry (the
// TerminalService checks secrets with it).
func (s *Server) Conversations() *Conversations { return s.convs }

var _ pb.ToolServiceServer = (*Server)(nil)

// acquire reserves a daemon-wide call slot.
func (s *Server) acquire() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.active >= s.cfg.MaxCalls {
		return false
	}
	s.active++
	return true
}

func (s *Server) release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.active--
	if s.active == 0 && s.idle != nil {
		close(s.idle)
		s.idle = nil
	}
}

// Draining returns a channel closed when Shutdown has begun.
func (s *Server) Draining() <-chan struct{} { return s.draining }

// Shutdown stops the executor: new calls end UNAVAILABLE at once, running
// calls get until ctx ends to finish, then they are canceled (each still
// ends with a ToolCallEnd, code CANCELED). Streams end with OK once their
// calls have ended. Shutdown returns when no call runs. It is safe to call
// more than once.
func (s *Server) Shutdown(ctx context.Context) {
	// No conversation is reaped from now on: shutdown ends them all.
	s.convs.Close()
	s.mu.Lock()
	select {
	case <-s.draining:
	default:
		close(s.draining)
	}
	var idle chan struct{}
	if s.active > 0 {
		if s.idle == nil {
			s.idle = make(chan struct{})
		}
		idle = s.idle
	}
	s.mu.Unlock()
	if idle == nil {
		return
	}
	select {
	case <-idle:
		return
	case <-ctx.Done():
	}
	s.cfg.Logger.Warn("grace period over; canceling running calls")
	s.killFn(errShutdown)
	<-idle
}

// ListTools implements pb.ToolServiceServer.
func (s *Server) ListTools(_ context.Context, req *pb.ListToolsRequest) (*pb.ListToolsResponse, error) {
	infos := s.cfg.Registry.List()
	resp := &pb.ListToolsResponse{Tools: make([]*pb.ToolSpec, 0, len(infos))}
	for _, in := range infos {
		ts := &pb.ToolSpec{
			Name:        in.Spec.Name,
			Description: in.Spec.Description,
			InputSchema: string(in.Schema),
			Risk:        riskToPB(in.Risk),
			Source:      in.Spec.Source,
			Aliases:     in.Spec.Aliases,
		}
		if in.Spec.Consolidated() {
			for _, op := range in.Spec.Operations {
				ts.Operations = append(ts.Operations, &pb.Operation{
					Name: op.Name, Description: op.Description, Risk: riskToPB(op.Risk), InputSchema: string(op.Schema),
				})
			}
		}
		resp.Tools = append(resp.Tools, ts)
	}
	for _, u := range s.cfg.Registry.Unavailable() {
		resp.Unavailable = append(resp.Unavailable, &pb.UnavailableTool{Name: u.Name, Operations: u.Operations, Reason: u.Reason})
	}
	if req.GetFormat() != pb.ToolFormat_TOOL_FORMAT_UNSPECIFIED || req.GetStrict() {
		r, err := render(infos, req.GetFormat(), req.GetFlatOperations(), req.GetStrict())
		if err != nil {
			return nil, err
		}
		resp.RenderedJson = r
	}
	return resp, nil
}

// RunCall runs one call for a transport other than ExecuteTool (the MCP
// server) under the daemon's rules: it counts against the daemon-wide call
// limit, is refused (UNAVAILABLE) while toold shuts down, and is canceled
// when the shutdown grace ends. ctx is the call's context: canceling it
// cancels the call, as the client's doing (CANCELED) unless its cause is
// ErrClientGone (DISCONNECTED). It returns the call's End; refused calls
// emit no events.
func (s *Server) RunCall(ctx context.Context, req *CallRequest, host Host) *events.End {
	if req.Received.IsZero() {
		req.Received = time.Now()
	}
	if isClosed(s.draining) {
		return &events.End{Err: errdefs.New(errdefs.ErrUnavailable, "toold is shutting down and accepts no new calls"), Duration: time.Since(req.Received)}
	}
	if !s.acquire() {
		return &events.End{Err: errdefs.New(errdefs.ErrResourceExhausted, "too many calls running on toold (limit %d); wait and retry", s.cfg.MaxCalls), Duration: time.Since(req.Received)}
	}
	defer s.release()
	parent := ctx
	ctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	defer cancel(nil)
	stopParent := context.AfterFunc(parent, func() {
		if cause := context.Cause(parent); errors.Is(cause, ErrClientGone) {
			cancel(ErrClientGone)
			return
		}
		cancel(ErrCanceledByClient)
	})
	defer stopParent()
	stop := context.AfterFunc(s.kill, func() { cancel(context.Cause(s.kill)) })
	defer stop()
	if req.Mode == authz.ModeUnset {
		req.Mode = s.cfg.Mode
	}
	return s.exec.Execute(ctx, req, host)
}

// Mode returns the server's approval mode.
func (s *Server) Mode() authz.Mode { return s.cfg.Mode }
