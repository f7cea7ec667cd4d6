package mcp

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/mcp/mcpconfig"
	"github.com/toold/toold/pkg/procgroup"
	"github.com/toold/toold/pkg/tools"
)

// upstream is one configured MCP server and the goroutine (run) that keeps
// a session to it. Calls use the current session; while there is none they
// fail UNAVAILABLE.
type upstream struct {
	m       *Manager
	name    string
	cfg     mcpconfig.Server
	source  string
	cancel  context.CancelFunc // ends run; nil for a disabled server
	first   chan struct{}      // closed after the first connection attempt
	done    chan struct{}      // closed when run has returned
	refresh chan struct{}      // cap 1: the server's tool list changed

	firstOnce sync.Once

	mu          sync.Mutex
	st          Status
	session     *sdk.ClientSession
	calls       map[string]*pending // by progress token
	fingerprint string              // of the registered tools, to report changes
	oauth       *oauthFlow          // an HTTP server's OAuth client (oauth.go)
	authPrev    State               // the state an authorization interrupted
}

func newUpstream(m *Manager, name string, cfg mcpconfig.Server) *upstream {
	return &upstream{
		m:       m,
		name:    name,
		cfg:     cfg,
		source:  tools.MCPSourcePrefix + name,
		first:   make(chan struct{}),
		done:    make(chan struct{}),
		refresh: make(chan struct{}, 1),
		calls:   map[string]*pending{},
		st:      Status{Name: name, Config: cfg, Transport: cfg.Transport(), State: StateConnecting, Since: time.Now()},
	}
}

func (u *upstream) markFirst() { u.firstOnce.Do(func() { close(u.first) }) }

// awaitFirst waits for the first connection attempt to finish, or ctx.
func (u *upstream) awaitFirst(ctx context.Context) {
	select {
	case <-u.first:
	case <-ctx.Done():
	}
}

func (u *upstream) status() Status {
	u.mu.Lock()
	defer u.mu.Unlock()
	st := u.st
	st.Tools = slices.Clone(st.Tools)
	st.Refused = slices.Clone(st.Refused)
	return st
}

func (u *upstream) setState(s State, err error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.st.State, u.st.Since = s, time.Now()
	if err != nil {
		u.st.Err = err.Error()
	}
}

// shutdown stops run, which closes the session and ends the process, and
// takes the server's tools out of the registry.
func (u *upstream) shutdown(ctx context.Context) error {
	if u.cancel != nil {
		u.cancel()
	}
	select {
	case <-u.done:
	case <-ctx.Done():
		return ctx.Err()
	}
	u.setState(StateStopped, nil)
	if err := u.m.opts.Registry.ReplaceSource(u.source); err != nil {
		return err
	}
	u.mu.Lock()
	had := u.fingerprint != ""
	u.fingerprint = ""
	u.st.Tools = nil
	u.mu.Unlock()
	if had {
		u.m.changed()
	}
	return nil
}

// run connects, serves until the connection ends, and reconnects with
// backoff, until ctx ends.
func (u *upstream) run(ctx context.Context) {
	defer close(u.done)
	defer u.markFirst()
	log := u.m.opts.Logger.With("mcp_server", u.name)
	failures := 0
	for attempt := 0; ; attempt++ {
		if attempt > 0 {
			u.mu.Lock()
			u.st.Restarts++
			u.mu.Unlock()
		}
		u.setState(StateConnecting, nil)
		connectedFor, err := u.connectAndServe(ctx)
		if ctx.Err() != nil {
			return
		}
		if connectedFor >= u.m.opts.StableAfter {
			failures = 0
		}
		delay := backoff(u.m.opts.MinBackoff, u.m.opts.MaxBackoff, failures)
		failures++
		log.Warn("MCP server unavailable; reconnecting", "err", err, "retry_in", delay.Round(time.Millisecond), "attempt", attempt+1)
		u.mu.Lock()
		u.st.State, u.st.Since, u.st.Err, u.st.PID = StateBackoff, time.Now(), err.Error(), 0
		u.st.NextAttempt = time.Now().Add(delay)
		u.mu.Unlock()
		u.markFirst()
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// backoff is min doubled per failure up to max, with ±20% jitter.
func backoff(lo, hi time.Duration, failures int) time.Duration {
	d := lo
	for range failures {
		d *= 2
		if d >= hi {
			d = hi
			break
		}
	}
	return time.Duration(float64(d) * (0.8 + 0.4*rand.Float64()))
}

// connectAndServe runs one session: connect, register the tools, then
// refresh them on list_changed until the connection ends or ctx does. It
// returns how long the session was up and why it ended.
func (u *upstream) connectAndServe(ctx context.Context) (time.Duration, error) {
	log := u.m.opts.Logger.With("mcp_server", u.name)
	conn, err := u.connect(ctx)
	if err != nil {
		return 0, err
	}
	defer conn.close()
	if err := u.refreshTools(ctx, conn.cs); err != nil {
		return 0, fmt.Errorf("listing tools: %w", err)
	}
	began := time.Now()
	init := conn.cs.InitializeResult()
	u.mu.Lock()
	u.session = conn.cs
	u.st.State, u.st.Since, u.st.Err, u.st.NextAttempt = StateConnected, began, "", time.Time{}
	if conn.cmd != nil && conn.cmd.Process != nil {
		u.st.PID = conn.cmd.Process.Pid
	}
	if init != nil {
		u.st.ProtocolVersion = init.ProtocolVersion
		if init.ServerInfo != nil {
			u.st.ServerName, u.st.ServerVersion = init.ServerInfo.Name, init.ServerInfo.Version
		}
	}
	tools, protocol := len(u.st.Tools), u.st.ProtocolVersion
	u.mu.Unlock()
	defer func() {
		u.mu.Lock()
		u.session = nil
		u.mu.Unlock()
	}()
	u.markFirst()
	log.Info("MCP server connected", "transport", u.cfg.Transport(), "tools", tools, "protocol", protocol)

	ended := make(chan error, 1)
	go func() { ended <- conn.cs.Wait() }()
	for {
		select {
		case <-ctx.Done():
			_ = conn.cs.Close()
			<-ended
			return time.Since(began), ctx.Err()
		case err := <-ended:
			if err == nil {
				err = errors.New("the server closed the connection")
			}
			if conn.cmd != nil {
				err = fmt.Errorf("the server process ended: %w", err)
			}
			return time.Since(began), err
		case <-u.refresh:
			if err := u.refreshTools(ctx, conn.cs); err != nil && ctx.Err() == nil {
				log.Warn("refreshing the MCP server's tools failed; keeping the previous list", "err", err)
			}
		}
	}
}

// connection is one live session and, for stdio, its process.
type connection struct {
	cs     *sdk.ClientSession
	cmd    *exec.Cmd
	cancel func() // ends the context the session was connected under
}

// close ends the session (for stdio: closes stdin, waits, then SIGTERM and
// SIGKILL, as the spec says) and kills what is left of the process group.
func (c *connection) close() {
	_ = c.cs.Close()
	c.cancel()
	killGroup(c.cmd)
}

// killGroup kills the process group of a started stdio server, sweeping up
// children it left behind (npx starts node, for one).
func killGroup(cmd *exec.Cmd) {
	_ = procgroup.Kill(cmd)
}

func (u *upstream) connect(ctx context.Context) (*connection, error) {
	client := sdk.NewClient(&sdk.Implementation{Name: "toold", Version: u.m.opts.Version}, &sdk.ClientOptions{
		Logger: SDKLogger(u.m.opts.Logger.With("mcp_server", u.name)),
		// Form elicitation, forwarded to the person of the call that asks
		// (elicit.go); no roots or sampling.
		Capabilities:                &sdk.ClientCapabilities{Elicitation: &sdk.ElicitationCapabilities{Form: &sdk.FormElicitationCapabilities{}}},
		ElicitationHandler:          u.onElicit,
		ToolListChangedHandler:      u.onListChanged,
		ProgressNotificationHandler: u.onProgress,
		LoggingMessageHandler:       u.onLog,
	})
	// The SSE transport keeps its event stream under the context Connect
	// gets, so that context lives as long as the session (connection.close
	// ends it); the handshake's time limit cancels it only while Connect
	// runs.
	cctx, cancel := context.WithCancelCause(ctx)
	// The limit pauses while a person authorizes (oauth.go).
	limit := &handshakeLimit{d: u.m.opts.ConnectTimeout, fire: func() { cancel(errHandshakeTimeout) }}
	tr, cmd, err := u.transport(limit)
	if err != nil {
		cancel(nil)
		return nil, err
	}
	limit.start()
	cs, err := client.Connect(cctx, tr, nil)
	limit.stop()
	if err != nil {
		cancel(nil)
		if cmd != nil && cmd.Process != nil {
			// End and reap what the failed handshake left running.
			killGroup(cmd)
			_ = cmd.Wait()
		}
		if errors.Is(context.Cause(cctx), errHandshakeTimeout) {
			return nil, fmt.Errorf("no answer to the handshake within %s", u.m.opts.ConnectTimeout)
		}
		var ae *authError
		if errors.As(err, &ae) {
			return nil, ae
		}
		return nil, fmt.Errorf("connect: %w", err)
	}
	return &connection{cs: cs, cmd: cmd, cancel: func() { cancel(nil) }}, nil
}

var errHandshakeTimeout = errors.New("handshake timeout")

func (u *upstream) onListChanged(context.Context, *sdk.ToolListChangedRequest) {
	select {
	case u.refresh <- struct{}{}:
	default: // a refresh is already pending; it will see this change too
	}
}

func (u *upstream) onLog(_ context.Context, req *sdk.LoggingMessageRequest) {
	u.m.opts.Logger.Debug("MCP server log message", "mcp_server", u.name, "level", string(req.Params.Level), "logger", req.Params.Logger, "data", req.Params.Data)
}

// refreshTools lists the server's tools and replaces the registered ones.
func (u *upstream) refreshTools(ctx context.Context, cs *sdk.ClientSession) error {
	lctx, cancel := context.WithTimeout(ctx, u.m.opts.ConnectTimeout)
	defer cancel()
	var remote []*sdk.Tool
	for t, err := range cs.Tools(lctx, nil) {
		if err != nil {
			return err
		}
		remote = append(remote, t)
	}
	wrapped, refused := u.buildTools(remote)
	ts := make([]tools.Tool, len(wrapped))
	for i, t := range wrapped {
		ts[i] = t
	}
	if err := u.m.opts.Registry.ReplaceSource(u.source, ts...); err != nil {
		return err
	}
	names := make([]string, len(wrapped))
	h := sha256.New()
	for i, t := range wrapped {
		names[i] = t.spec.Name
		op := t.spec.Operations[0]
		fmt.Fprintf(h, "%s\x00%s\x00%s\x00%d\x00", t.spec.Name, t.spec.Description, op.Schema, op.Risk)
	}
	slices.Sort(names)
	fp := hex.EncodeToString(h.Sum(nil))
	u.mu.Lock()
	u.st.Tools, u.st.Refused = names, refused
	changed := fp != u.fingerprint
	u.fingerprint = fp
	u.mu.Unlock()
	log := u.m.opts.Logger.With("mcp_server", u.name)
	for _, r := range refused {
		log.Warn("MCP tool refused", "tool", r.Name, "reason", r.Reason)
	}
	if changed {
		log.Info("MCP tools registered", "tools", len(names), "refused", len(refused))
		u.m.changed()
	}
	return nil
}

// buildTools wraps the server's tools, refusing those toold cannot offer.
func (u *upstream) buildTools(remote []*sdk.Tool) ([]*Tool, []RefusedTool) {
	others := map[string]string{} // registry name -> source, of other sources
	for _, in := range u.m.opts.Registry.List() {
		if in.Spec.Source != u.source {
			others[in.Spec.Name] = in.Spec.Source
		}
	}
	var out []*Tool
	var refused []RefusedTool
	seen := map[string]string{}
	for _, rt := range remote {
		t, err := newTool(u, rt)
		if err == nil {
			if prev, dup := seen[t.spec.Name]; dup {
				err = fmt.Errorf("its toold name %s is already taken by the server's tool %q", t.spec.Name, prev)
			} else if src, taken := others[t.spec.Name]; taken {
				err = fmt.Errorf("its toold name %s is taken by a tool of %s", t.spec.Name, src)
			}
		}
		if err != nil {
			refused = append(refused, RefusedTool{Name: rt.Name, Reason: err.Error()})
			continue
		}
		seen[t.spec.Name] = rt.Name
		out = append(out, t)
	}
	return out, refused
}

// pending is a running call's inbox for progress notifications, and the
// goroutine that emits them (the forwarder, started by the first).
type pending struct {
	// asker asks the call's person a question (nil when the call's client
	// cannot answer).
	asker func(ctx context.Context, q tools.Question) (string, error)
	// emit turns a note into a Progress event: only the forwarder calls
	// it, then Run once the forwarder is done. alive resets the call's idle
	// timer (the forwarder, before each note).
	emit  func(progressNote)
	alive func()

	mu       sync.Mutex
	notes    chan progressNote // made with the forwarder
	stop     chan struct{}     // closed by finish: the forwarder returns
	stopped  chan struct{}     // closed by the forwarder when it returns
	finished bool              // finish ran: no forwarder starts any more
	last     progressNote      // the forwarder's last note, read after stopped
}

type progressNote struct {
	msg             string
	progress, total float64
}

// push adds a note without blocking the SDK's notification goroutine,
// starting the forwarder with the call's first: when the inbox is full (the
// client reads slowly), the oldest note is dropped, so the newest progress
// always gets through. A note after finish without a forwarder (the call
// reported no progress) is dropped, as Settling says.
func (p *pending) push(n progressNote) {
	p.mu.Lock()
	if p.notes == nil {
		if p.finished {
			p.mu.Unlock()
			return
		}
		p.notes = make(chan progressNote, progressInbox)
		p.stop, p.stopped = make(chan struct{}), make(chan struct{})
		go p.forward()
	}
	notes := p.notes
	p.mu.Unlock()
	for {
		select {
		case notes <- n:
			return
		default:
		}
		select {
		case <-notes:
		default:
		}
	}
}

// forward emits notes until finish stops it.
func (p *pending) forward() {
	defer close(p.stopped)
	for {
		select {
		case n := <-p.notes:
			p.alive()
			p.emit(n)
			p.last = n
		case <-p.stop:
			return
		}
	}
}

// finish is called by Run when the SDK's call returned: it stops the
// forwarder, if one started, and returns the last note it emitted and
// whether the call reported progress (then Run settles).
func (p *pending) finish() (last progressNote, progressed bool) {
	p.mu.Lock()
	p.finished = true
	started := p.notes != nil
	p.mu.Unlock()
	if !started {
		return progressNote{}, false
	}
	close(p.stop)
	<-p.stopped
	return p.last, true
}

func (u *upstream) onProgress(_ context.Context, req *sdk.ProgressNotificationClientRequest) {
	tok, ok := req.Params.ProgressToken.(string)
	if !ok {
		return
	}
	u.mu.Lock()
	p := u.calls[tok]
	u.mu.Unlock()
	if p != nil {
		p.push(progressNote{msg: req.Params.Message, progress: req.Params.Progress, total: req.Params.Total})
	}
}

// current returns the live session, or an UNAVAILABLE error saying when
// to retry.
func (u *upstream) current() (*sdk.ClientSession, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.session != nil {
		return u.session, nil
	}
	switch u.st.State {
	case StateBackoff:
		wait := time.Until(u.st.NextAttempt).Round(time.Second)
		return nil, errdefs.New(errdefs.ErrUnavailable,
			"MCP server %s is unavailable (%s); toold reconnects in %s: retry after that", u.name, firstLine(u.st.Err), max(wait, time.Second))
	case StateStopped:
		return nil, errdefs.New(errdefs.ErrUnavailable, "MCP server %s was removed", u.name)
	case StateAuthorizing:
		return nil, errdefs.New(errdefs.ErrUnavailable,
			"MCP server %s waits for a person to authorize toold (OAuth): the operator runs toolctl mcp login %s; retry after that", u.name, u.name)
	}
	return nil, errdefs.New(errdefs.ErrUnavailable, "MCP server %s is (re)connecting; retry in a few seconds", u.name)
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return tools.Clip(s, 200)
}
