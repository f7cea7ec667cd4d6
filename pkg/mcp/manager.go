// Package mcp makes toold a client of external MCP servers: a Manager keeps
// one supervised connection per configured server (stdio, streamable HTTP or
// SSE, through the official Go SDK) and registers each server's tools in
// the tool registry as "SERVER__TOOL", where the executor resolves,
// validates, authorizes and runs them like any other tool.
//
// The serving side (toold's tools offered over MCP) is in pkg/mcpserver.
package mcp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/mcp/mcpconfig"
	"github.com/toold/toold/pkg/tools"
)

// Errors of the Manager's administration methods; check with errors.Is.
var (
	// ErrServerNotFound: no server has the name.
	ErrServerNotFound = errors.New("no such MCP server")
	// ErrServerExists: a server with the name is already configured.
	ErrServerExists = errors.New("MCP server already exists")
)

// Options configure a Manager. Zero values take the documented defaults.
type Options struct {
	// Registry receives the servers' tools. Required.
	Registry *tools.Registry
	// Logger receives connection events, refused tools, and each stdio
	// server's stderr (one record per line, with the server's name).
	Logger *slog.Logger
	// Limits shape results for the model: text beyond ReadBytes is cut.
	Limits tools.Limits
	// Version is toold's version, sent in the MCP handshake.
	Version string
	// OnChange, when set, is called after the registry's MCP tools changed
	// (a server connected, refreshed its list, or was removed). It is
	// called from a Manager goroutine and must not block for long.
	OnChange func()
	// MinBackoff and MaxBackoff bound the delay before reconnecting a
	// server that failed or exited (defaults 500ms and 30s; the delay
	// doubles per failed attempt, with jitter, and starts over once a
	// connection lasted StableAfter).
	MinBackoff, MaxBackoff time.Duration
	// StableAfter is how long a connection must last to reset the backoff
	// (default 30s).
	StableAfter time.Duration
	// ConnectTimeout bounds one connection attempt: start, handshake and
	// the first tool listing (default 30s).
	ConnectTimeout time.Duration
	// IdleTimeout is the default of mcpconfig.ServerPolicy.IdleTimeout
	// (default 60s).
	IdleTimeout time.Duration
	// HTTPClient carries the HTTP and SSE transports; nil uses a client
	// without an overall timeout (SSE streams are long-lived).
	HTTPClient *http.Client
	// TokenDir is where the OAuth tokens of HTTP servers are kept, one 0600
	// file per server (toold uses STATE_DIR/mcp-oauth, which commands cannot
	// read). Empty keeps them in memory: a restart asks a person again.
	TokenDir string
	// AuthTimeout bounds how long an OAuth authorization waits for a person
	// to open its URL and finish (default 10m); then the attempt fails and
	// the next one shows a new URL.
	AuthTimeout time.Duration
}

func (o Options) withDefaults() Options {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	o.Limits = o.Limits.WithDefaults()
	if o.Version == "" {
		o.Version = "dev"
	}
	if o.MinBackoff <= 0 {
		o.MinBackoff = 500 * time.Millisecond
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = 30 * time.Second
	}
	if o.MaxBackoff < o.MinBackoff {
		o.MaxBackoff = o.MinBackoff
	}
	if o.StableAfter <= 0 {
		o.StableAfter = 30 * time.Second
	}
	if o.ConnectTimeout <= 0 {
		o.ConnectTimeout = 30 * time.Second
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = 60 * time.Second
	}
	if o.AuthTimeout <= 0 {
		o.AuthTimeout = 10 * time.Minute
	}
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	}
	return o
}

// Manager owns the connections to the configured MCP servers. Each server
// has one goroutine that connects, registers the server's tools, refreshes
// them on notifications/tools/list_changed, and reconnects with backoff
// when the connection is lost (a crashed stdio server is restarted). A
// server's tools stay registered while it reconnects, so listings stay
// stable; calls meanwhile end UNAVAILABLE. Create it with NewManager; stop
// it with Close, which ends every goroutine and subprocess it started.
type Manager struct {
	opts   Options
	stop   context.CancelFunc // ends every server goroutine
	base   context.Context    // parent of the server goroutines' contexts
	token  atomic.Uint64      // progress tokens
	mu     sync.Mutex
	byName map[string]*upstream
	closed bool
}

// NewManager returns a Manager with no servers.
func NewManager(opts Options) *Manager {
	if opts.Registry == nil {
		panic("mcp.NewManager: Options.Registry is required")
	}
	base, stop := context.WithCancel(context.Background())
	return &Manager{opts: opts.withDefaults(), base: base, stop: stop, byName: map[string]*upstream{}}
}

// Start starts every server of servers that is not disabled, then waits
// until each has finished its first connection attempt or ctx ends,
// whichever is first; servers still connecting then join later. A server
// that fails is retried with backoff; its error shows in List. Start fails
// only when an entry is invalid or a name is already in use, and then
// starts none. Stored OAuth tokens of servers not in servers (removed from
// the configuration) are deleted.
func (m *Manager) Start(ctx context.Context, servers map[string]mcpconfig.Server) error {
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(servers)) {
		if err := servers[name].Validate(name); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return errdefs.Wrap(errdefs.ErrInvalidArgument, err, "%v", err)
	}
	// Tokens of servers no longer configured are removed servers' tokens.
	removed, err := pruneTokens(m.opts.TokenDir, func(name string) bool { _, ok := servers[name]; return ok })
	if err != nil {
		m.opts.Logger.Warn("removing the stored OAuth tokens of MCP servers no longer configured failed", "dir", m.opts.TokenDir, "err", err)
	}
	if len(removed) > 0 {
		m.opts.Logger.Info("removed the stored OAuth tokens of MCP servers no longer configured", "servers", removed)
	}
	var started []*upstream
	for _, name := range slices.Sorted(maps.Keys(servers)) {
		u, err := m.add(name, servers[name])
		if err != nil {
			return err
		}
		started = append(started, u)
	}
	for _, u := range started {
		u.awaitFirst(ctx)
	}
	return nil
}

// Add starts a server at runtime and waits for its first connection
// attempt (or ctx) before returning its status. The server is then
// supervised like a configured one until Remove or Close. It fails with
// ErrServerExists when the name is taken and with an ErrInvalidArgument
// error when the entry is invalid.
func (m *Manager) Add(ctx context.Context, name string, cfg mcpconfig.Server) (Status, error) {
	if err := cfg.Validate(name); err != nil {
		return Status{}, errdefs.Wrap(errdefs.ErrInvalidArgument, err, "%v", err)
	}
	u, err := m.add(name, cfg)
	if err != nil {
		return Status{}, err
	}
	u.awaitFirst(ctx)
	return u.status(), nil
}

func (m *Manager) add(name string, cfg mcpconfig.Server) (*upstream, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, errdefs.New(errdefs.ErrUnavailable, "toold is shutting down")
	}
	if _, taken := m.byName[name]; taken {
		return nil, fmt.Errorf("%w: %q; remove it first", ErrServerExists, name)
	}
	u := newUpstream(m, name, cfg)
	m.byName[name] = u
	if cfg.Disabled {
		u.setState(StateDisabled, nil)
		close(u.first)
		close(u.done)
		return u, nil
	}
	ctx, cancel := context.WithCancel(m.base)
	u.cancel = cancel
	go u.run(ctx)
	return u, nil
}

// Remove stops a server: its connection is closed (a stdio server's
// process group is ended), its tools leave the registry, calls running
// on it end, and its stored OAuth token is deleted (Options.TokenDir). It returns once the server's goroutine has ended, or with
// ctx's error. It fails with ErrServerNotFound for an unknown name.
func (m *Manager) Remove(ctx context.Context, name string) error {
	m.mu.Lock()
	u, ok := m.byName[name]
	if ok {
		delete(m.byName, name)
	}
	m.mu.Unlock()
	if !ok {
		return fmt.Errorf("%w: %q", ErrServerNotFound, name)
	}
	err := u.shutdown(ctx)
	// Its stored OAuth token goes too: a server added again under this
	// name starts unauthorized.
	u.mu.Lock()
	store := newTokenStore(m.opts.TokenDir, name)
	if u.oauth != nil {
		store = u.oauth.store
	}
	u.mu.Unlock()
	if ferr := store.forget(); ferr != nil {
		m.opts.Logger.Warn("removing the stored OAuth token of a removed MCP server failed", "mcp_server", name, "err", ferr)
		err = errors.Join(err, ferr)
	}
	return err
}

// Reauthorize discards an HTTP server's stored OAuth token (the file and
// the token in memory) and restarts it with the same entry, so that its
// next connection asks a person to authorize again; calls running on it
// end, as with Remove. It returns the server's status after the first
// connection attempt (StateAuthorizing with the URL when the server wants
// OAuth), or fails with ErrServerNotFound, or an ErrInvalidArgument error
// for a stdio server, which has no authorization.
func (m *Manager) Reauthorize(ctx context.Context, name string) (Status, error) {
	m.mu.Lock()
	u, ok := m.byName[name]
	m.mu.Unlock()
	if !ok {
		return Status{}, fmt.Errorf("%w: %q", ErrServerNotFound, name)
	}
	if u.cfg.URL == "" {
		return Status{}, errdefs.New(errdefs.ErrInvalidArgument, "MCP server %q is a stdio server: it has no OAuth authorization to renew", name)
	}
	if err := m.Remove(ctx, name); err != nil {
		return Status{}, err
	}
	return m.Add(ctx, name, u.cfg)
}

// List returns the status of every server, sorted by name.
func (m *Manager) List() []Status {
	m.mu.Lock()
	ups := slices.Collect(maps.Values(m.byName))
	m.mu.Unlock()
	out := make([]Status, 0, len(ups))
	for _, u := range ups {
		out = append(out, u.status())
	}
	slices.SortFunc(out, func(a, b Status) int { return cmpString(a.Name, b.Name) })
	return out
}

// Close stops every server like Remove and waits for them. Later Adds fail.
// It is safe to call more than once.
func (m *Manager) Close() error {
	m.mu.Lock()
	m.closed = true
	ups := slices.Collect(maps.Values(m.byName))
	m.byName = map[string]*upstream{}
	m.mu.Unlock()
	var wg sync.WaitGroup
	for _, u := range ups {
		wg.Go(func() { _ = u.shutdown(context.Background()) })
	}
	wg.Wait()
	m.stop()
	return nil
}

func (m *Manager) changed() {
	if m.opts.OnChange != nil {
		m.opts.OnChange()
	}
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// SDKLogger returns a logger for the go-sdk's own records: only warnings
// and errors pass, the SDK's per-session info records are dropped.
func SDKLogger(l *slog.Logger) *slog.Logger {
	return slog.New(minLevel{l.Handler(), slog.LevelWarn}).With("component", "go-sdk")
}

// minLevel drops records below a level.
type minLevel struct {
	slog.Handler
	min slog.Level
}

// Enabled implements slog.Handler.
func (h minLevel) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.min && h.Handler.Enabled(ctx, l)
}

// WithAttrs implements slog.Handler.
func (h minLevel) WithAttrs(as []slog.Attr) slog.Handler {
	return minLevel{h.Handler.WithAttrs(as), h.min}
}

// WithGroup implements slog.Handler.
func (h minLevel) WithGroup(name string) slog.Handler {
	return minLevel{h.Handler.WithGroup(name), h.min}
}
