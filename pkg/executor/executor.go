// Package executor runs tool calls: it resolves, validates, authorizes
// (asking through the call's Host when policy says ask), runs them under
// their timeouts, and shapes their results. It owns what every transport
// shares: admission (the daemon-wide call limit, draining, the shutdown
// kill), the per-conversation event log a stream reads, reattaching to it
// after a dropped stream, and one panic guard around every call into a tool.
//
// It knows nothing of gRPC: pkg/service adapts it to the ExecuteTool
// stream (one Attachment per stream), pkg/mcpserver to MCP (one Run per
// call).
package executor

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/toold/toold/pkg/authz"
	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/events"
	"github.com/toold/toold/pkg/tools"
)

// Config configures an Executor. Zero durations and limits take defaults.
type Config struct {
	// Registry holds the tools. Required: New refuses a nil one.
	Registry *tools.Registry
	// Authorizer decides on calls. Required: New refuses a nil one (a
	// security sidecar's zero value must not allow everything; pass
	// authz.AllowAll{} to mean that).
	Authorizer authz.Authorizer
	// Granter records the grants people approve; nil records none (an
	// approval then covers only its call).
	Granter authz.Granter
	// Mode is the server's approval mode; streams may only tighten it.
	Mode authz.Mode
	// DefaultTimeout applies to calls that ask for none (default 2 min).
	DefaultTimeout time.Duration
	// MaxTimeout caps what a call may ask for (default 30 min).
	MaxTimeout time.Duration
	// ApprovalTimeout ends a call waiting for an approval or an answer with
	// APPROVAL_TIMEOUT; zero waits until the call is canceled or its
	// conversation's stream is gone for good.
	ApprovalTimeout time.Duration
	// MaxCallsPerStream bounds concurrent calls of one stream (and the
	// streams resuming it) (default 64).
	MaxCallsPerStream int
	// MaxCalls bounds concurrent calls on the daemon (default 1024).
	MaxCalls int
	// Log bounds each stream's event log: what waits for the reader, and
	// the tail kept for a stream that resumes.
	Log events.LogConfig
	// ResumeGrace is how long the calls of a stream that ended without
	// closing its side keep running, logging and waiting for answers, for
	// a new stream to resume them (default 60 s; negative: none, the calls
	// end DISCONNECTED at once).
	ResumeGrace time.Duration
	// InlineBudget is how long a call may run on its stream's receiving
	// goroutine before the stream receives on another one (see inline.go;
	// default DefaultInlineBudget).
	InlineBudget time.Duration
	// RecordLinger is how long an ended call's records wait for others
	// to run with them, off the call's path (see recorder.go; default
	// DefaultRecordLinger).
	RecordLinger time.Duration
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
	// Observe holds hooks, the audit log, history and metrics (observe.go).
	Observe Observe
	// Checkpoints records what each call that may change the workspace
	// changed (a *checkpoint.Recorder); nil records nothing.
	Checkpoints Checkpointer
}

// Checkpointer records the workspace changes of calls (a
// *checkpoint.Recorder). Begin opens the window of a call before it runs
// and returns the function that closes it once the call has ended; scope
// lists the paths the call may write (the effect's Writes), nil everything
// (a command).
type Checkpointer interface {
	Begin(ctx context.Context, conversation, callID string, scope []string) (end func())
}

func (c Config) withDefaults() Config {
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
	if c.ResumeGrace == 0 {
		c.ResumeGrace = time.Minute
	}
	if c.InlineBudget <= 0 {
		c.InlineBudget = DefaultInlineBudget
	}
	if c.RecordLinger <= 0 {
		c.RecordLinger = DefaultRecordLinger
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Conversations.Logger == nil {
		c.Conversations.Logger = c.Logger
	}
	return c
}

// Executor runs calls. Create it with New; stop it with Shutdown. It is
// safe for concurrent use.
type Executor struct {
	cfg   Config
	convs *Conversations
	rec   *recorder // ended calls' records (recorder.go)

	mu       sync.Mutex
	active   int           // calls running on the daemon
	idle     chan struct{} // closed when active drops to zero during drain
	draining chan struct{} // closed when Shutdown starts
	kill     context.Context
	killFn   context.CancelCauseFunc
	// detached holds, by conversation, the sessions whose stream dropped
	// and that wait (their grace) for a stream to resume them.
	detached map[string][]*session
	// live holds every session by conversation, to tell a resume whose
	// stream toold has not yet seen drop.
	live map[string]map[*session]struct{}
}

// New returns an Executor. It refuses a Config without a Registry or an
// Authorizer (ErrInvalidArgument), changing nothing.
func New(cfg Config) (*Executor, error) {
	switch {
	case cfg.Registry == nil:
		return nil, errdefs.New(errdefs.ErrInvalidArgument, "executor: Config.Registry is required")
	case cfg.Authorizer == nil:
		return nil, errdefs.New(errdefs.ErrInvalidArgument, "executor: Config.Authorizer is required (a nil authorizer is not allow-all; pass authz.AllowAll{} to allow every call)")
	}
	kill, killFn := context.WithCancelCause(context.Background())
	x := &Executor{cfg: cfg.withDefaults(), draining: make(chan struct{}), kill: kill, killFn: killFn,
		detached: map[string][]*session{}, live: map[string]map[*session]struct{}{}}
	x.convs = NewConversations(x.cfg.Conversations)
	x.rec = newRecorder(x.cfg.RecordLinger, recorderMax)
	return x, nil
}

// Conversations returns the conversation registry (the TerminalService
// checks secrets with it).
func (x *Executor) Conversations() *Conversations { return x.convs }

// Mode returns the server's approval mode.
func (x *Executor) Mode() authz.Mode { return x.cfg.Mode }

// Registry returns the tools.
func (x *Executor) Registry() *tools.Registry { return x.cfg.Registry }

// Authorizer returns the policy.
func (x *Executor) Authorizer() authz.Authorizer { return x.cfg.Authorizer }

// Causes a transport gives when it cancels a call's context, so the call
// ends with the right code: CANCELED for ErrCanceledByClient, DISCONNECTED
// for ErrClientGone.
var (
	ErrCanceledByClient = errors.New("canceled by the client")
	ErrClientGone       = errors.New("the client is gone")
)

// Errors that say why a call's context ended.
var (
	errShutdown        = errors.New("toold is shutting down")
	errCallTimeout     = errors.New("call timeout")
	errIdleTimeout     = errors.New("no progress within the call timeout")
	errApprovalTimeout = errors.New("approval timeout")
)

// The refusals of admission, one wording for every transport.
func errDraining() error {
	return errdefs.New(errdefs.ErrUnavailable, "toold is shutting down and accepts no new calls; retry on a new connection")
}

func (x *Executor) errDaemonFull() error {
	return errdefs.New(errdefs.ErrResourceExhausted, "too many calls running on toold (limit %d); wait for some to end and retry", x.cfg.MaxCalls)
}

func (x *Executor) errStreamFull() error {
	return errdefs.New(errdefs.ErrResourceExhausted, "too many calls running on this stream (limit %d); wait for some to end and retry", x.cfg.MaxCallsPerStream)
}

// admit reserves a daemon-wide call slot, or says why there is none.
func (x *Executor) admit() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if isClosed(x.draining) {
		return errDraining()
	}
	if x.active >= x.cfg.MaxCalls {
		return x.errDaemonFull()
	}
	x.active++
	return nil
}

func (x *Executor) release() {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.active--
	if x.active == 0 && x.idle != nil {
		close(x.idle)
		x.idle = nil
	}
}

// killOnShutdown cancels the context of a call run outside any stream (Run)
// when the shutdown grace ends; the returned func stops that. A stream's
// calls are found in their sessions instead (killCalls): no registration
// per call.
func (x *Executor) killOnShutdown(cancel context.CancelCauseFunc) func() bool {
	return context.AfterFunc(x.kill, func() { cancel(context.Cause(x.kill)) })
}

// FlushRecords waits until the records of every call that ended before it
// — metrics, history rows, audit records, which run after a call's End
// (recorder.go) — have been handed to the history writer and the audit
// log, or until ctx ends. Read history or the audit log after it to see
// every ended call.
func (x *Executor) FlushRecords(ctx context.Context) error {
	return x.rec.flush(ctx)
}

// Draining returns a channel closed when Shutdown has begun.
func (x *Executor) Draining() <-chan struct{} { return x.draining }

// Shutdown stops the executor: new calls end UNAVAILABLE at once, streams
// waiting to be resumed are given up (their calls end DISCONNECTED), running
// calls get until ctx ends to finish, then they are canceled (each still
// ends with its End, code CANCELED). Shutdown returns when no call runs. It
// is safe to call more than once. The records of the calls that ended are
// flushed (FlushRecords) before it returns.
func (x *Executor) Shutdown(ctx context.Context) {
	defer func() { _ = x.rec.flush(context.Background()) }() // no deadline: no error
	// No conversation is reaped from now on: shutdown ends them all.
	x.convs.Close()
	x.mu.Lock()
	if !isClosed(x.draining) {
		close(x.draining)
	}
	var detached []*session
	for _, ss := range x.detached {
		detached = append(detached, ss...)
	}
	x.mu.Unlock()
	for _, s := range detached {
		s.expire()
	}
	x.mu.Lock()
	var idle chan struct{}
	if x.active > 0 {
		if x.idle == nil {
			x.idle = make(chan struct{})
		}
		idle = x.idle
	}
	x.mu.Unlock()
	if idle == nil {
		return
	}
	select {
	case <-idle:
		return
	case <-ctx.Done():
	}
	x.cfg.Logger.Warn("grace period over; canceling running calls")
	x.killCalls(errShutdown)
	<-idle
}

// Run runs one call outside any stream (the MCP server's calls) under the
// daemon's rules: it counts against the daemon-wide call limit, is refused
// (UNAVAILABLE) while toold shuts down, and is canceled when the shutdown
// grace ends. ctx is the call's context: canceling it cancels the call, as
// the client's doing (CANCELED) unless its cause is ErrClientGone
// (DISCONNECTED). It returns the call's End; refused calls emit no events.
func (x *Executor) Run(ctx context.Context, req *CallRequest, host Host) *events.End {
	if req.Received.IsZero() {
		req.Received = time.Now()
	}
	if err := x.admit(); err != nil {
		return &events.End{Err: err, Duration: time.Since(req.Received)}
	}
	defer x.release()
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
	defer x.killOnShutdown(cancel)()
	if req.Mode == authz.ModeUnset {
		req.Mode = x.cfg.Mode
	}
	end, record := x.execute(ctx, req, host)
	record()
	return end
}

// killCalls cancels every running call with cause: Run's through the kill
// context, a stream's in its session's calls. A call admitted later is
// refused (Shutdown drains first), and a session's calls are registered
// under its lock in the step that admits them, so none is missed.
func (x *Executor) killCalls(cause error) {
	x.killFn(cause)
	x.mu.Lock()
	var ss []*session
	for _, m := range x.live {
		for s := range m {
			ss = append(ss, s)
		}
	}
	x.mu.Unlock() // a session's lock is never taken under x.mu (endLocked takes them the other way)
	for _, s := range ss {
		s.mu.Lock()
		for _, rc := range s.calls {
			rc.cancel(cause)
		}
		s.mu.Unlock()
	}
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
