package main

import (
	"context"
	"net"
	"sync/atomic"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
)

// otlpSink is the bench's trace collector: an OTLP/gRPC TraceService on
// 127.0.0.1 that counts the spans toold exports and drops them, so that
// the ladder's rung (i) measures what exporting costs toold (building,
// batching, converting and sending its spans over OTLP/gRPC, as to a
// collector) and not what a collector does with them.
type otlpSink struct {
	coltrace.UnimplementedTraceServiceServer
	addr  string
	spans atomic.Int64
	stop  func()
}

func startOTLPSink() (*otlpSink, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &otlpSink{addr: l.Addr().String()}
	gs := grpc.NewServer()
	coltrace.RegisterTraceServiceServer(gs, s)
	go gs.Serve(l) //nolint:errcheck // ends with Stop
	s.stop = gs.Stop
	return s, nil
}

// Export counts the request's spans.
func (s *otlpSink) Export(_ context.Context, req *coltrace.ExportTraceServiceRequest) (*coltrace.ExportTraceServiceResponse, error) {
	var n int64
	for _, rs := range req.GetResourceSpans() {
		for _, ss := range rs.GetScopeSpans() {
			n += int64(len(ss.GetSpans()))
		}
	}
	s.spans.Add(n)
	return &coltrace.ExportTraceServiceResponse{}, nil
}

// env is toold's environment to export its spans to the sink.
func (s *otlpSink) env() []string {
	return []string{
		"OTEL_TRACES_EXPORTER=otlp",
		"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=grpc",
		"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=http://" + s.addr,
		"OTEL_EXPORTER_OTLP_TRACES_INSECURE=true",
	}
}
