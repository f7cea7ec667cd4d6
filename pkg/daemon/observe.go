package daemon

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"runtime/trace"
	"time"

	pb "github.com/toold/toold/gen/toold/v1"
	"github.com/toold/toold/pkg/audit"
	"github.com/toold/toold/pkg/authz"
	"github.com/toold/toold/pkg/executor"
	"github.com/toold/toold/pkg/history"
	"github.com/toold/toold/pkg/hooks"
	"github.com/toold/toold/pkg/mcp"
	"github.com/toold/toold/pkg/service"
	"github.com/toold/toold/pkg/telemetry"
)

// observeState is what makes toold accountable and observable: metrics,
// the audit log, the call history and the pre/post tool hooks. The
// executor reaches them through Metrics, Audit, History and Hooks.
type observeState struct {
	metricsSetup *telemetry.MetricsSetup
	metrics      *telemetry.Metrics
	audit        *audit.Log
	history      *history.Store
	historyW     *history.Writer // records in the background, over history
	historyErr   error           // why history is unavailable
	auditErr     error           // why the audit log is unavailable
	hooks        *hooks.Runner
	unregMCP     func() error
	unregTerm    func() error
	debugAddr    string // the debug server's address, once serving
}

// startObserve sets up metrics (OTEL_METRICS_EXPORTER and the debug
// address's /metrics), opens the audit log and the history and builds the
// hook runner. An audit log that cannot be opened stops the daemon when
// audit.enabled is set explicitly (it does not run unaccounted); when it is
// on by default, and for a history that cannot be opened, the error is
// logged and the RPCs answer UNAVAILABLE with it.
func (m *Main) startObserve(ctx context.Context) error {
	o := &m.observe
	cfg := &m.Config
	var err error
	r := trace.StartRegion(ctx, "metrics")
	defer func() { r.End() }()
	if o.metricsSetup, err = telemetry.SetupMetrics(ctx, Version); err != nil {
		return err
	}
	if o.metrics, err = telemetry.NewMetrics(o.metricsSetup.Provider); err != nil {
		return err
	}
	r.End()
	r = trace.StartRegion(ctx, "audit")
	switch {
	case !cfg.Audit.On():
		o.auditErr = errors.New("the audit log is turned off in toold's configuration (audit.enabled)")
	default:
		o.audit, err = audit.Open(auditConfig(cfg.Audit, m.memory.stateDir))
		if err != nil && cfg.Audit.Enabled != nil {
			// Asked for explicitly: toold does not run unaccounted.
			return fmt.Errorf("audit log: %w", err)
		}
		if err != nil {
			// On by default only: like memory, an unusable state
			// directory does not stop toold; say so loudly.
			o.auditErr = fmt.Errorf("the audit log could not be opened: %w", err)
			m.Logger.Error("audit log unavailable; set audit.enabled: true to refuse to start without it", "err", err)
		}
	}
	r.End()
	r = trace.StartRegion(ctx, "history")
	switch hc := cfg.History; hc.Backend {
	case "off":
		o.historyErr = errors.New("history is turned off in toold's configuration")
	case "postgres":
		dsn := hc.DSN
		if dsn == "" {
			dsn = cfg.Memory.DSN
		}
		o.history, o.historyErr = history.OpenPostgres(ctx, dsn, historyConfig(hc))
	default:
		path := hc.Path
		if path == "" {
			path = filepath.Join(m.memory.stateDir, "history.db")
		}
		o.history, o.historyErr = history.OpenSQLite(ctx, path, historyConfig(hc))
	}
	if o.history != nil {
		o.historyW = history.NewWriter(o.history, 0, func(err error) { m.Logger.Error("history: recording calls failed", "err", err) })
	}
	if o.historyErr != nil && cfg.History.Backend != "off" {
		m.Logger.Error("history unavailable", "err", o.historyErr)
	}
	r.End()
	r = trace.StartRegion(ctx, "hooks")
	if o.hooks, err = hooks.New(cfg.Hooks, m.ws.Dir()); err != nil {
		return err
	}
	return nil
}

// executorObserve is what the executor records calls into.
func (m *Main) executorObserve() executor.Observe {
	o := &m.observe
	ob := executor.Observe{Hooks: o.hooks, Audit: o.audit, AuditContinue: m.Config.Audit.Continue(), Metrics: o.metrics}
	if o.history != nil {
		ob.History = o.historyW
	}
	if m.Config.PolicyFile != "" {
		ob.RuleSaver = policyFileSaver{path: m.Config.PolicyFile}
	}
	return ob
}

// registerObserve registers the HistoryService and AuditService and, once
// the MCP manager and the terminal manager exist, the MCP health and
// process and session gauges.
func (m *Main) registerObserve() error {
	o := &m.observe
	var q service.HistoryQuerier
	if o.history != nil {
		q = flushedHistory{x: m.exec, w: o.historyW}
	}
	pb.RegisterHistoryServiceServer(m.grpc, service.NewHistoryServer(q, o.historyErr, m.access))
	dir := ""
	var flush func(context.Context) error
	if o.audit != nil {
		dir = o.audit.Dir()
		log, x := o.audit, m.exec
		flush = func(ctx context.Context) error {
			if err := x.FlushRecords(ctx); err != nil {
				return err
			}
			log.Flush()
			return nil
		}
	}
	pb.RegisterAuditServiceServer(m.grpc, service.NewAuditServer(dir, o.auditErr, m.access, flush))
	mgr := m.mcp.manager
	var err error
	o.unregMCP, err = o.metrics.ObserveMCP(func() []telemetry.ServerHealth {
		if mgr == nil {
			return nil
		}
		var out []telemetry.ServerHealth
		for _, s := range mgr.List() {
			out = append(out, telemetry.ServerHealth{Name: s.Name, Transport: s.Transport, State: s.State.String(), Up: s.State == mcp.StateConnected, Restarts: s.Restarts})
		}
		return out
	})
	if err != nil {
		return err
	}
	term := m.terminal
	o.unregTerm, err = o.metrics.ObserveTerminal(func() (int, int) {
		if term == nil {
			return 0, 0
		}
		return term.Running(), len(term.Sessions(""))
	})
	return err
}

// flushedHistory is the history a client queries: the records of the
// calls that ended before a query (which the executor makes after a
// call's End) are stored before it reads.
type flushedHistory struct {
	x *executor.Executor
	w *history.Writer
}

func (h flushedHistory) Query(ctx context.Context, f history.Filter) ([]history.Entry, error) {
	if err := h.x.FlushRecords(ctx); err != nil {
		return nil, err
	}
	return h.w.Query(ctx, f)
}

// stopObserve flushes and closes what startObserve opened; safe to call
// more than once.
func (m *Main) stopObserve() error {
	o := &m.observe
	var errs []error
	if m.exec != nil {
		// The records of the last calls (Shutdown flushed them unless it
		// did not run), before what they go to closes.
		errs = append(errs, m.exec.FlushRecords(context.Background()))
	}
	for _, unreg := range []*func() error{&o.unregMCP, &o.unregTerm} {
		if *unreg != nil {
			errs = append(errs, (*unreg)())
			*unreg = nil
		}
	}
	if o.metricsSetup != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		errs = append(errs, o.metricsSetup.Shutdown(ctx))
		cancel()
		o.metricsSetup = nil
	}
	if o.audit != nil {
		errs = append(errs, o.audit.Close())
		o.audit = nil
	}
	if o.history != nil {
		errs = append(errs, o.historyW.Close(), o.history.Close())
		o.history, o.historyW = nil, nil
	}
	return errors.Join(errs...)
}

// Metrics returns the daemon's metric instruments (nil before Run).
func (m *Main) Metrics() *telemetry.Metrics { return m.observe.metrics }

// Audit returns the audit log (nil when it is off, or before Run).
func (m *Main) Audit() *audit.Log { return m.observe.audit }

// History returns the call history (nil when it is off or unavailable).
func (m *Main) History() *history.Store { return m.observe.history }

// Hooks returns the pre/post tool hook runner (never nil after Run).
func (m *Main) Hooks() *hooks.Runner { return m.observe.hooks }

// DebugAddr returns the address the debug server (pprof, /metrics) listens
// on, or "" when none.
func (m *Main) DebugAddr() string { return m.observe.debugAddr }

// policyFileSaver saves approved scopes as rules in the policy file.
type policyFileSaver struct{ path string }

func (p policyFileSaver) SaveRule(scope authz.Scope, example map[string]any) (string, error) {
	r := authz.RuleFromScope(scope, example, time.Now())
	return r.Name, authz.AppendRule(p.path, r)
}

// auditedGranter records revocations made through the PolicyService in
// the audit log. It returns g itself when there is no audit log, and nil
// for a nil g.
func (m *Main) auditedGranter(g authz.Granter) authz.Granter {
	if g == nil || m.observe.audit == nil {
		return g
	}
	return revokeAuditor{Granter: g, log: m.observe.audit, metrics: m.observe.metrics, logger: m.Logger}
}

type revokeAuditor struct {
	authz.Granter
	log     *audit.Log
	metrics *telemetry.Metrics
	logger  interface {
		Error(msg string, args ...any)
	}
}

// Revoke revokes the grant and records it (the record names the grant's
// conversation and scope, looked up before it goes).
func (r revokeAuditor) Revoke(id string) bool {
	var rec audit.Record
	for _, g := range r.Grants("") {
		if g.ID == id {
			rec = audit.Record{Conversation: g.ConversationID, Tool: g.Scope.Tool, Operation: g.Scope.Operation, Scope: g.Scope.Description}
		}
	}
	if !r.Granter.Revoke(id) {
		return false
	}
	rec.Kind, rec.GrantID, rec.Who = audit.KindRevocation, id, "PolicyService.RevokeGrant"
	if _, err := r.log.AppendSync(rec); err != nil {
		r.logger.Error("audit log append failed", "kind", rec.Kind, "err", err)
	} else {
		r.metrics.AuditAppended(context.Background(), rec.Kind)
	}
	return true
}
