package executor_test

import (
	"context"
	"sync/atomic"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/toold/toold/pkg/events"
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

// BenchmarkStreamThink is a stream's think call below the wire: admitted
// by Start, run on the caller's goroutine as a stream's receiver runs it
// (inline), its Start, Executing and End read back from the session's log
// as the stream's sender reads them. What it costs is the executor's and
// the session's share of a no-op call (the ladder's step (e) → (f)).
func BenchmarkStreamThink(b *testing.B) {
	x := newExecutor(b, executor.Config{}, &tools.Think{})
	defer x.Shutdown(context.Background())
	a, err := x.Open(executor.OpenOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer a.Close()
	ctx := context.Background()
	var buf []events.Event
	// A call runs past the inline budget only on a loaded machine (the
	// budget's timer hands receiving off); counted, not an error.
	var handoffs atomic.Int64
	handoff := func() { handoffs.Add(1) }
	b.ReportAllocs()
	for b.Loop() {
		run, err := a.Start(&executor.CallRequest{CallID: "c", Name: "think", ArgsJSON: `{"thought":"benchmark"}`})
		if err != nil || run == nil {
			b.Fatalf("Start: %v", err)
		}
		run(handoff)
		for n := 0; n < 3; {
			buf, err = a.Read(ctx, buf[:0], 0, 0)
			if err != nil {
				b.Fatal(err)
			}
			n += len(buf)
		}
	}
	b.ReportMetric(float64(handoffs.Load())/float64(b.N), "handoffs/op")
}
