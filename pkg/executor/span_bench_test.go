package executor_test

import (
	"context"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/toold/toold/pkg/executor"
	"github.com/toold/toold/pkg/tools"
)

// discard is a span exporter that drops what it is given (the cost of a
// collector's network is not the executor's).
type discard struct{}

func (discard) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discard) Shutdown(context.Context) error                             { return nil }

// BenchmarkCallSpans is what tracing costs a think call: no tracer, the
// daemon's tracer without an exporter (spans that do not record), and one
// recording every call's four spans into a batch exporter (the daemon's
// setup with OTEL_EXPORTER_OTLP_ENDPOINT set, less the network).
func BenchmarkCallSpans(b *testing.B) {
	for _, bc := range []struct {
		name string
		tp   func() *sdktrace.TracerProvider
	}{
		{"none", nil},
		{"not-recording", func() *sdktrace.TracerProvider {
			return sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.NeverSample()))
		}},
		{"batch-exporter", func() *sdktrace.TracerProvider { return sdktrace.NewTracerProvider(sdktrace.WithBatcher(discard{})) }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			cfg := executor.Config{}
			if bc.tp != nil {
				tp := bc.tp()
				cfg.Tracer = tp.Tracer("toold")
				defer tp.Shutdown(context.Background())
			}
			x := newExecutor(b, cfg, &tools.Think{})
			defer x.Shutdown(context.Background())
			req := executor.CallRequest{CallID: "c", Name: "think", ArgsJSON: `{"thought":"benchmark"}`}
			b.ReportAllocs()
			for b.Loop() {
				r := req
				if end := x.Run(context.Background(), &r, &fakeHost{}); end.Err != nil {
					b.Fatal(end.Err)
				}
			}
		})
	}
}
