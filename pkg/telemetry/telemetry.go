// Package telemetry sets up OpenTelemetry tracing for toold.
//
// The exporter is chosen by the standard environment variables:
// OTEL_TRACES_EXPORTER ("otlp", "console" or "none") and, for OTLP,
// OTEL_EXPORTER_OTLP_PROTOCOL ("grpc", "http/protobuf") with the usual
// OTEL_EXPORTER_OTLP_* endpoint, header and TLS variables, which the OTLP
// exporters read themselves. With none of them set, no exporter runs: spans
// are still created (trace ids appear in events and logs) but go nowhere.
// Setting OTEL_EXPORTER_OTLP_ENDPOINT (or ..._TRACES_ENDPOINT) alone implies
// "otlp".
package telemetry

import (
	"context"
	"fmt"
	"os"
	"strings"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.37.0"
)

// Setup builds a tracer provider from the environment. The returned
// shutdown flushes and stops the exporter; exporting reports whether an
// exporter is configured (without one the provider's spans do not record).
func Setup(ctx context.Context, version string) (tp *sdktrace.TracerProvider, shutdown func(context.Context) error, exporting bool, err error) {
	exp, err := exporterFromEnv(ctx)
	if err != nil {
		return nil, nil, false, err
	}
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(
		semconv.ServiceName(serviceName()),
		semconv.ServiceVersion(version),
	))
	if err != nil {
		res = resource.Default()
	}
	opts := []sdktrace.TracerProviderOption{sdktrace.WithResource(res)}
	if exp != nil {
		opts = append(opts, sdktrace.WithBatcher(exp))
	} else {
		// Nothing would receive the spans: keep them non-recording. They
		// still carry trace ids, which events and logs show.
		opts = append(opts, sdktrace.WithSampler(sdktrace.NeverSample()))
	}
	tp = sdktrace.NewTracerProvider(opts...)
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	return tp, tp.Shutdown, exp != nil, nil
}

func serviceName() string {
	if s := os.Getenv("OTEL_SERVICE_NAME"); s != "" {
		return s
	}
	return "toold"
}

func exporterFromEnv(ctx context.Context) (sdktrace.SpanExporter, error) {
	name := strings.ToLower(strings.TrimSpace(os.Getenv("OTEL_TRACES_EXPORTER")))
	if name == "" {
		if os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") == "" && os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") == "" {
			return nil, nil
		}
		name = "otlp"
	}
	switch name {
	case "none":
		return nil, nil
	case "console":
		return stdouttrace.New(stdouttrace.WithWriter(os.Stderr))
	case "otlp":
		proto := os.Getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
		if proto == "" {
			proto = os.Getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
		}
		switch proto {
		case "", "grpc":
			return otlptracegrpc.New(ctx)
		case "http/protobuf":
			return otlptracehttp.New(ctx)
		default:
			return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL=%q: want grpc or http/protobuf", proto)
		}
	}
	return nil, fmt.Errorf("OTEL_TRACES_EXPORTER=%q: want otlp, console or none", name)
}
