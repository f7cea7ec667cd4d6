package telemetry

import (
	"context"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

var metricsEnv = []string{"OTEL_METRICS_EXPORTER", "OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL"}

func TestSetupMetricsFromEnv(t *testing.T) {
	tests := []struct {
		name          string
		env           map[string]string
		wantExporting bool
		wantErr       bool
	}{
		{name: "nothing set", env: map[string]string{}},
		{name: "none", env: map[string]string{"OTEL_METRICS_EXPORTER": "none"}},
		{name: "console", env: map[string]string{"OTEL_METRICS_EXPORTER": "console"}, wantExporting: true},
		{name: "endpoint implies otlp", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1"}, wantExporting: true},
		{name: "otlp http", env: map[string]string{"OTEL_METRICS_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1"}, wantExporting: true},
		{name: "bad protocol", env: map[string]string{"OTEL_METRICS_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "smoke-signals"}, wantErr: true},
		{name: "bad exporter", env: map[string]string{"OTEL_METRICS_EXPORTER": "graphite"}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, k := range metricsEnv {
				t.Setenv(k, tt.env[k])
			}
			s, err := SetupMetrics(context.Background(), "test")
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v", err)
			}
			if err != nil {
				return
			}
			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			defer cancel()
			defer s.Shutdown(ctx)
			if s.Exporting != tt.wantExporting {
				t.Fatalf("exporting = %v, want %v", s.Exporting, tt.wantExporting)
			}
		})
	}
}

// Every instrument shows in the Prometheus text.
func TestPrometheusText(t *testing.T) {
	for _, k := range metricsEnv {
		t.Setenv(k, "")
	}
	s, err := SetupMetrics(context.Background(), "test")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown(context.Background())
	m, err := NewMetrics(s.Provider)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	m.CallEnded(ctx, "file_operations", "read_file", "success", "", 20*time.Millisecond)
	m.CallEnded(ctx, "terminal_operations", "run_command", "error", "TIMEOUT", 3*time.Second)
	m.ApprovalWaiting(ctx, 1)
	m.ApprovalWaiting(ctx, 1)
	m.ApprovalWaiting(ctx, -1)
	m.ApprovalAnswered(ctx, "terminal_operations", "approve", 2*time.Second)
	m.QueueDepth(ctx, 7)
	m.OutputDropped(ctx, 100)
	m.OutputCoalesced(ctx, 3)
	unregT, err := m.ObserveTerminal(func() (int, int) { return 2, 1 })
	if err != nil {
		t.Fatal(err)
	}
	defer unregT()
	m.HookRan(ctx, "guard", "PreToolUse", "deny", 4*time.Millisecond)
	m.AuditAppended(ctx, "call.end")
	unreg, err := m.ObserveMCP(func() []ServerHealth {
		return []ServerHealth{{Name: "everything", Transport: "stdio", State: "connected", Up: true, Restarts: 2}}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer unreg()
	var nilM *Metrics
	nilM.CallEnded(ctx, "x", "", "success", "", 0) // nil-safe

	rec := httptest.NewRecorder()
	s.Prometheus.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	text := string(body)
	for _, want := range []string{
		`toold_calls_total{code="",operation="read_file",outcome="success",tool="file_operations"} 1`,
		`toold_calls_total{code="TIMEOUT",operation="run_command",outcome="error",tool="terminal_operations"} 1`,
		`toold_call_duration_seconds_bucket{operation="run_command",outcome="error",tool="terminal_operations",le="5"} 1`,
		`toold_approvals_waiting 1`,
		`toold_approval_wait_seconds_count{answer="approve",tool="terminal_operations"} 1`,
		`toold_stream_queue_depth 7`,
		`toold_output_dropped_bytes_total 100`,
		`toold_output_coalesced_total 3`,
		`toold_processes_running 2`,
		`toold_sessions_open 1`,
		`toold_hook_duration_seconds_count{event="PreToolUse",hook="guard",verdict="deny"} 1`,
		`toold_audit_records_total{kind="call.end"} 1`,
		`toold_mcp_server_up{server="everything",state="connected",transport="stdio"} 1`,
		`toold_mcp_server_restarts_total{server="everything",transport="stdio"} 2`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("missing %s", want)
		}
	}
	if t.Failed() {
		t.Log(text)
	}
}

// BenchmarkCallEnded is the metrics of one ended call (its attribute sets
// are built once per tool, operation, outcome and code).
func BenchmarkCallEnded(b *testing.B) {
	setup, err := SetupMetrics(context.Background(), "bench")
	if err != nil {
		b.Fatal(err)
	}
	m, err := NewMetrics(setup.Provider)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		m.CallEnded(ctx, "think", "", "success", "", time.Millisecond)
	}
}

// A call's metrics allocate nothing once its attribute sets are cached:
// the options are passed as the cached slices (one option passed alone
// made a slice per measurement).
func TestCallMetricsAllocateNothing(t *testing.T) {
	setup, err := SetupMetrics(context.Background(), "test")
	if err != nil {
		t.Fatal(err)
	}
	defer setup.Shutdown(context.Background())
	m, err := NewMetrics(setup.Provider)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if n := testing.AllocsPerRun(100, func() {
		m.CallEnded(ctx, "think", "", "success", "", time.Millisecond)
		m.AuditAppended(ctx, "call.end")
	}); n != 0 {
		t.Fatalf("a call's metrics: %v allocations, want 0", n)
	}
}
