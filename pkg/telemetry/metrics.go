package telemetry

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/contrib/exporters/autoexport"
	"go.opentelemetry.io/otel/attribute"
	promexp "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	semconv "go.opentelemetry.io/otel/semconv/v1.37.0"
)

// MetricsSetup is what SetupMetrics built.
type MetricsSetup struct {
	// Provider makes the instruments.
	Provider *sdkmetric.MeterProvider
	// Prometheus serves every metric as Prometheus text (the debug
	// address's /metrics).
	Prometheus http.Handler
	// Exporting is true when OTEL_METRICS_EXPORTER (or an OTLP endpoint)
	// sends the metrics somewhere besides /metrics.
	Exporting bool
}

// Shutdown flushes and stops the exporters.
func (s *MetricsSetup) Shutdown(ctx context.Context) error {
	if s == nil || s.Provider == nil {
		return nil
	}
	return s.Provider.Shutdown(ctx)
}

// SetupMetrics builds a meter provider with two readers: a Prometheus
// registry of its own (served as text by Prometheus) and, chosen by the
// standard environment, an exporter: OTEL_METRICS_EXPORTER "otlp" (with
// OTEL_EXPORTER_OTLP_PROTOCOL / _METRICS_PROTOCOL grpc or http/protobuf
// and the usual endpoint variables), "prometheus" (its own HTTP server on
// OTEL_EXPORTER_PROMETHEUS_HOST:PORT, default localhost:9464), "console"
// (stdout) or "none". With it unset, OTLP is used when an OTLP endpoint
// variable is set, and nothing otherwise — as for traces.
func SetupMetrics(ctx context.Context, version string) (*MetricsSetup, error) {
	reg := prometheus.NewRegistry()
	prom, err := promexp.New(promexp.WithRegisterer(reg), promexp.WithoutScopeInfo())
	if err != nil {
		return nil, err
	}
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(
		semconv.ServiceName(serviceName()),
		semconv.ServiceVersion(version),
	))
	if err != nil {
		res = resource.Default()
	}
	opts := []sdkmetric.Option{sdkmetric.WithResource(res), sdkmetric.WithReader(prom), sdkmetric.WithView(durationView)}
	exporting := false
	if name := metricsExporterName(); name != "none" {
		if err := checkMetricsExporter(name); err != nil {
			return nil, err
		}
		r, err := autoexport.NewMetricReader(ctx)
		if err != nil {
			return nil, fmt.Errorf("OTEL_METRICS_EXPORTER=%s: %w", name, err)
		}
		opts = append(opts, sdkmetric.WithReader(r))
		exporting = true
	}
	return &MetricsSetup{
		Provider:   sdkmetric.NewMeterProvider(opts...),
		Prometheus: promhttp.HandlerFor(reg, promhttp.HandlerOpts{}),
		Exporting:  exporting,
	}, nil
}

// metricsExporterName returns the exporter the environment asks for, or
// "none".
func metricsExporterName() string {
	name := strings.ToLower(strings.TrimSpace(os.Getenv("OTEL_METRICS_EXPORTER")))
	if name != "" {
		return name
	}
	if os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT") != "" {
		os.Setenv("OTEL_METRICS_EXPORTER", "otlp") // autoexport reads it
		return "otlp"
	}
	return "none"
}

func checkMetricsExporter(name string) error {
	switch name {
	case "otlp", "prometheus", "console":
	default:
		return fmt.Errorf("OTEL_METRICS_EXPORTER=%q: want otlp, prometheus, console or none", name)
	}
	if name != "otlp" {
		return nil
	}
	proto := os.Getenv("OTEL_EXPORTER_OTLP_METRICS_PROTOCOL")
	if proto == "" {
		proto = os.Getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	switch proto {
	case "", "grpc", "http/protobuf":
		return nil
	}
	return fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL=%q: want grpc or http/protobuf", proto)
}

// durationView gives the duration histograms buckets in seconds from 1ms
// to 10 minutes (the SDK's defaults are made for milliseconds).
var durationView = sdkmetric.NewView(
	sdkmetric.Instrument{Unit: "s", Kind: sdkmetric.InstrumentKindHistogram},
	sdkmetric.Stream{Aggregation: sdkmetric.AggregationExplicitBucketHistogram{
		Boundaries: []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600},
	}},
)

// Metrics are toold's instruments. Every method is safe on a nil
// *Metrics (it does nothing), so callers need not check.
type Metrics struct {
	calls            metric.Int64Counter
	duration         metric.Float64Histogram
	approvalsWaiting metric.Int64UpDownCounter
	approvalWait     metric.Float64Histogram
	queueDepth       metric.Int64Gauge
	outputDropped    metric.Int64Counter
	outputCoalesced  metric.Int64Counter
	hooks            metric.Float64Histogram
	auditRecords     metric.Int64Counter
	meter            metric.Meter
}

// NewMetrics makes the instruments on mp.
func NewMetrics(mp metric.MeterProvider) (*Metrics, error) {
	m := &Metrics{meter: mp.Meter("github.com/toold/toold")}
	var errs []error
	add := func(err error) { errs = append(errs, err) }
	var err error
	m.calls, err = m.meter.Int64Counter("toold.calls", metric.WithDescription("Tool calls ended, by tool, operation, outcome and error code."), metric.WithUnit("{call}"))
	add(err)
	m.duration, err = m.meter.Float64Histogram("toold.call.duration", metric.WithDescription("Duration of tool calls, from ToolCall to ToolCallEnd, time waiting for approval excluded."), metric.WithUnit("s"))
	add(err)
	m.approvalsWaiting, err = m.meter.Int64UpDownCounter("toold.approvals.waiting", metric.WithDescription("Approval requests waiting for a person's answer."), metric.WithUnit("{approval}"))
	add(err)
	m.approvalWait, err = m.meter.Float64Histogram("toold.approval.wait", metric.WithDescription("How long approval requests waited for an answer, by answer."), metric.WithUnit("s"))
	add(err)
	m.queueDepth, err = m.meter.Int64Gauge("toold.stream.queue.depth", metric.WithDescription("Events waiting in a stream's send queue."), metric.WithUnit("{event}"))
	add(err)
	m.outputDropped, err = m.meter.Int64Counter("toold.output.dropped", metric.WithDescription("Output bytes dropped on the way to a client."), metric.WithUnit("By"))
	add(err)
	m.outputCoalesced, err = m.meter.Int64Counter("toold.output.coalesced", metric.WithDescription("Output chunks merged into earlier ones while they waited to be sent."), metric.WithUnit("{chunk}"))
	add(err)
	m.hooks, err = m.meter.Float64Histogram("toold.hook.duration", metric.WithDescription("Pre/post tool hook runs, by hook, event and verdict."), metric.WithUnit("s"))
	add(err)
	m.auditRecords, err = m.meter.Int64Counter("toold.audit.records", metric.WithDescription("Records appended to the audit log, by kind."), metric.WithUnit("{record}"))
	add(err)
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return m, nil
}

// CallEnded counts a call and records its duration. outcome is "success"
// or "error"; code is the error code ("" on success).
func (m *Metrics) CallEnded(ctx context.Context, tool, op, outcome, code string, d time.Duration) {
	if m == nil {
		return
	}
	a := callAttrsFor(callKey{tool, op, outcome, code})
	m.calls.Add(ctx, 1, a.calls...)
	m.duration.Record(ctx, d.Seconds(), a.duration...)
}

// callKey and callAttrs: the attribute sets of a call's metrics, built once
// per tool, operation, outcome and code instead of on every call (they
// were a tenth of a no-op call's allocations).
type callKey struct{ tool, op, outcome, code string }

// The options are kept as the slices the instruments take: passing one
// option made a slice per call.
type callAttrs struct {
	calls    []metric.AddOption
	duration []metric.RecordOption
}

// callAttrsCache holds at most maxCallAttrs sets; past that (a daemon
// with very many MCP tools) sets are built per call, as before.
var (
	callAttrsCache sync.Map // callKey -> *callAttrs
	callAttrsCount atomic.Int64
)

const maxCallAttrs = 4096

func callAttrsFor(k callKey) *callAttrs {
	if a, ok := callAttrsCache.Load(k); ok {
		return a.(*callAttrs)
	}
	a := &callAttrs{
		calls: []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(attribute.String("tool", k.tool), attribute.String("operation", k.op),
			attribute.String("outcome", k.outcome), attribute.String("code", k.code)))},
		duration: []metric.RecordOption{metric.WithAttributeSet(attribute.NewSet(attribute.String("tool", k.tool), attribute.String("operation", k.op),
			attribute.String("outcome", k.outcome)))},
	}
	if callAttrsCount.Load() < maxCallAttrs {
		if _, loaded := callAttrsCache.LoadOrStore(k, a); !loaded {
			callAttrsCount.Add(1)
		}
	}
	return a
}

// ApprovalWaiting adds delta (+1 when a request is sent, -1 when it is
// answered or given up) to the approvals waiting.
func (m *Metrics) ApprovalWaiting(ctx context.Context, delta int64) {
	if m == nil {
		return
	}
	m.approvalsWaiting.Add(ctx, delta)
}

// ApprovalAnswered records how long a request waited; answer is approve,
// deny, timeout or canceled.
func (m *Metrics) ApprovalAnswered(ctx context.Context, tool, answer string, wait time.Duration) {
	if m == nil {
		return
	}
	m.approvalWait.Record(ctx, wait.Seconds(), metric.WithAttributes(attribute.String("tool", tool), attribute.String("answer", answer)))
}

// QueueDepth records a stream's send queue depth.
func (m *Metrics) QueueDepth(ctx context.Context, n int) {
	if m == nil {
		return
	}
	m.queueDepth.Record(ctx, int64(n))
}

// OutputDropped counts output bytes dropped.
func (m *Metrics) OutputDropped(ctx context.Context, bytes int) {
	if m == nil || bytes <= 0 {
		return
	}
	m.outputDropped.Add(ctx, int64(bytes))
}

// OutputCoalesced counts output chunks merged into earlier ones.
func (m *Metrics) OutputCoalesced(ctx context.Context, chunks int) {
	if m == nil || chunks <= 0 {
		return
	}
	m.outputCoalesced.Add(ctx, int64(chunks))
}

// ObserveTerminal registers the gauges toold.processes.running and
// toold.sessions.open, read from count at each collection. The returned
// function unregisters.
func (m *Metrics) ObserveTerminal(count func() (processes, sessions int)) (func() error, error) {
	if m == nil {
		return func() error { return nil }, nil
	}
	procs, err := m.meter.Int64ObservableGauge("toold.processes.running", metric.WithDescription("Commands and background processes running."), metric.WithUnit("{process}"))
	if err != nil {
		return nil, err
	}
	sess, err := m.meter.Int64ObservableGauge("toold.sessions.open", metric.WithDescription("Terminal sessions open."), metric.WithUnit("{session}"))
	if err != nil {
		return nil, err
	}
	reg, err := m.meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		p, s := count()
		o.ObserveInt64(procs, int64(p))
		o.ObserveInt64(sess, int64(s))
		return nil
	}, procs, sess)
	if err != nil {
		return nil, err
	}
	return reg.Unregister, nil
}

// HookRan records one hook run; verdict is allow, deny, ask, failed or "".
func (m *Metrics) HookRan(ctx context.Context, hook, event, verdict string, d time.Duration) {
	if m == nil {
		return
	}
	m.hooks.Record(ctx, d.Seconds(), metric.WithAttributes(attribute.String("hook", hook), attribute.String("event", event), attribute.String("verdict", verdict)))
}

// AuditAppended counts an audit record of kind.
func (m *Metrics) AuditAppended(ctx context.Context, kind string) {
	if m == nil {
		return
	}
	m.auditRecords.Add(ctx, 1, auditAttrsFor(kind)...)
}

// auditAttrs caches the attribute set of each audit record kind (a handful:
// audit's Kind constants), built on every record before (4% of a no-op
// call's CPU with three records a call).
var auditAttrs sync.Map // kind -> []metric.AddOption

func auditAttrsFor(kind string) []metric.AddOption {
	if a, ok := auditAttrs.Load(kind); ok {
		return a.([]metric.AddOption)
	}
	a := []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(attribute.String("kind", kind)))}
	auditAttrs.Store(kind, a)
	return a
}

// ServerHealth is one MCP server's state for the health gauge.
type ServerHealth struct {
	Name, Transport, State string
	// Up is true when connected.
	Up bool
	// Restarts counts reconnections.
	Restarts int
}

// ObserveMCP registers a gauge toold.mcp.server.up (1 connected, 0
// otherwise, by server, transport and state) and a counter of restarts,
// read from list at each collection. The returned function unregisters.
func (m *Metrics) ObserveMCP(list func() []ServerHealth) (func() error, error) {
	if m == nil {
		return func() error { return nil }, nil
	}
	up, err := m.meter.Int64ObservableGauge("toold.mcp.server.up", metric.WithDescription("1 when the MCP server is connected, 0 otherwise."))
	if err != nil {
		return nil, err
	}
	restarts, err := m.meter.Int64ObservableCounter("toold.mcp.server.restarts", metric.WithDescription("Reconnections of the MCP server."), metric.WithUnit("{restart}"))
	if err != nil {
		return nil, err
	}
	reg, err := m.meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		for _, s := range list() {
			v := int64(0)
			if s.Up {
				v = 1
			}
			attrs := metric.WithAttributes(attribute.String("server", s.Name), attribute.String("transport", s.Transport))
			o.ObserveInt64(up, v, metric.WithAttributes(attribute.String("server", s.Name), attribute.String("transport", s.Transport), attribute.String("state", s.State)))
			o.ObserveInt64(restarts, int64(s.Restarts), attrs)
		}
		return nil
	}, up, restarts)
	if err != nil {
		return nil, err
	}
	return reg.Unregister, nil
}
