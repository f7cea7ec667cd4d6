package daemon_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	pb "github.com/toold/toold/gen/toold/v1"
	"github.com/toold/toold/pkg/config"
	"github.com/toold/toold/pkg/daemon/daemontest"
)

// collector finds the OpenTelemetry Collector `make otelcol` builds; it is
// skipped when missing, unless TOOLD_REQUIRE_PEERS (set by `make test`)
// says the test must run.
func collector(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("TOOLD_OTELCOL"); p != "" {
		return p
	}
	p, err := exec.LookPath("otelcol-toold")
	if err == nil {
		return p
	}
	if p, err := filepath.Abs(filepath.Join("..", "..", "bin", "otelcol-toold")); err == nil {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if os.Getenv("TOOLD_REQUIRE_PEERS") != "" {
		t.Fatal("otelcol-toold is missing (TOOLD_REQUIRE_PEERS is set): run `make otelcol`")
	}
	t.Skip("otelcol-toold is missing: run `make otelcol` (or set TOOLD_REQUIRE_PEERS=1 to fail instead)")
	return ""
}

func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// startCollector runs the collector with an OTLP receiver on gRPC and HTTP
// and file exporters writing to dir; it returns the two addresses.
func startCollector(t *testing.T, bin, dir string) (grpcAddr, httpAddr string) {
	t.Helper()
	grpcAddr, httpAddr = freePort(t), freePort(t)
	cfg := fmt.Sprintf(`receivers:
  otlp:
    protocols:
      grpc: {endpoint: %q}
      http: {endpoint: %q}
exporters:
  file/traces: {path: %q}
  file/metrics: {path: %q}
service:
  telemetry:
    logs: {level: warn}
    metrics: {level: none}
  pipelines:
    traces: {receivers: [otlp], exporters: [file/traces]}
    metrics: {receivers: [otlp], exporters: [file/metrics]}
`, grpcAddr, httpAddr, filepath.Join(dir, "traces.jsonl"), filepath.Join(dir, "metrics.jsonl"))
	cfgPath := filepath.Join(dir, "otelcol.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	cmd := exec.Command(bin, "--config", cfgPath)
	cmd.Stdout, cmd.Stderr = logs, logs
	// No Pdeathsig: it fires when the forking thread exits, and toold's
	// sandbox code in this test binary ends locked threads.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
		if t.Failed() {
			t.Logf("collector log:\n%s", logs.String())
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for _, a := range []string{grpcAddr, httpAddr} {
		for {
			c, err := net.DialTimeout("tcp", a, time.Second)
			if err == nil {
				c.Close()
				break
			}
			select {
			case <-exited:
				t.Fatalf("collector exited: %v\n%s", waitErr, logs.String())
			default:
			}
			if time.Now().After(deadline) {
				t.Fatalf("collector not listening on %s:\n%s", a, logs.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return grpcAddr, httpAddr
}

// syncBuffer is a bytes.Buffer safe to read while the collector writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// otlpSpan is a span as the file exporter writes it (OTLP JSON).
type otlpSpan struct {
	TraceID      string `json:"traceId"`
	SpanID       string `json:"spanId"`
	ParentSpanID string `json:"parentSpanId"`
	Name         string `json:"name"`
}

func readSpans(t *testing.T, path string) []otlpSpan {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []otlpSpan
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var doc struct {
			ResourceSpans []struct {
				ScopeSpans []struct {
					Spans []otlpSpan `json:"spans"`
				} `json:"scopeSpans"`
			} `json:"resourceSpans"`
		}
		if json.Unmarshal(sc.Bytes(), &doc) != nil {
			continue // a line being written
		}
		for _, rs := range doc.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				out = append(out, ss.Spans...)
			}
		}
	}
	return out
}

// toold sends its traces (OTLP over gRPC) and metrics (OTLP over HTTP) to
// a real OpenTelemetry Collector: the call's span tree arrives parented on
// the client's trace context, and the call's metric points arrive.
func TestOpenTelemetryCollector(t *testing.T) {
	bin := collector(t)
	dir := t.TempDir()
	grpcAddr, httpAddr := startCollector(t, bin, dir)
	for k, v := range map[string]string{
		"OTEL_TRACES_EXPORTER":                "otlp",
		"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL":  "grpc",
		"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT":  "http://" + grpcAddr,
		"OTEL_METRICS_EXPORTER":               "otlp",
		"OTEL_EXPORTER_OTLP_METRICS_PROTOCOL": "http/protobuf",
		"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": "http://" + httpAddr + "/v1/metrics",
		"OTEL_METRIC_EXPORT_INTERVAL":         "200",
		"OTEL_BSP_SCHEDULE_DELAY":             "100",
		"OTEL_EXPORTER_OTLP_ENDPOINT":         "",
		"OTEL_EXPORTER_OTLP_PROTOCOL":         "",
	} {
		t.Setenv(k, v)
	}
	d := daemontest.Start(t, daemontest.WithConfig(func(c *config.Config) { c.ApprovalMode = "yolo" }))
	os.WriteFile(filepath.Join(d.Workspace, "a.txt"), []byte("hello\n"), 0o600)

	const traceID, parentID = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	s := newSession(t, d)
	s.send(&pb.ClientMessage{Msg: &pb.ClientMessage_Call{Call: &pb.ToolCall{CallId: "1", Name: "read_file",
		Arguments:    &pb.ToolCall_ArgumentsJson{ArgumentsJson: `{"path":"a.txt"}`},
		TraceContext: map[string]string{"traceparent": "00-" + traceID + "-" + parentID + "-01"}}}})
	for {
		ev, err := s.s.Recv()
		if err != nil {
			t.Fatal(err)
		}
		if e := ev.GetEnd(); e != nil {
			if !e.GetResult().GetSuccess() {
				t.Fatalf("call failed: %v", e)
			}
			break
		}
	}
	s.s.CloseSend()
	// Closing the daemon flushes its exporters.
	if err := d.Main.Close(); err != nil {
		t.Fatal(err)
	}

	deadline := time.Now().Add(30 * time.Second)
	var call otlpSpan
	children := map[string]bool{}
	for {
		for _, sp := range readSpans(t, filepath.Join(dir, "traces.jsonl")) {
			if sp.Name == "toold.call" && sp.TraceID == traceID {
				call = sp
			}
		}
		if call.SpanID != "" {
			for _, sp := range readSpans(t, filepath.Join(dir, "traces.jsonl")) {
				if sp.TraceID == traceID && sp.ParentSpanID == call.SpanID {
					children[sp.Name] = true
				}
			}
		}
		if children["toold.validate"] && children["toold.authorize"] && children["toold.execute"] {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("span tree did not arrive: call %+v, children %v", call, children)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if call.ParentSpanID != parentID {
		t.Fatalf("toold.call's parent is %s, want the client's span %s", call.ParentSpanID, parentID)
	}
	for {
		b, _ := os.ReadFile(filepath.Join(dir, "metrics.jsonl"))
		if bytes.Contains(b, []byte(`"name":"toold.calls"`)) && bytes.Contains(b, []byte(`"name":"toold.call.duration"`)) &&
			strings.Contains(string(b), `"stringValue":"read_file"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("metric points did not arrive:\n%.2000s", b)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
