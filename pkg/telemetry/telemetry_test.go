package telemetry

import (
	"context"
	"testing"
)

func TestExporterFromEnv(t *testing.T) {
	tests := []struct {
		name     string
		env      map[string]string
		wantNone bool
		wantErr  bool
	}{
		{name: "nothing set", env: map[string]string{}, wantNone: true},
		{name: "none", env: map[string]string{"OTEL_TRACES_EXPORTER": "none"}, wantNone: true},
		{name: "console", env: map[string]string{"OTEL_TRACES_EXPORTER": "console"}},
		{name: "endpoint implies otlp", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4317"}},
		{name: "otlp http", env: map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}},
		{name: "bad protocol", env: map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "carrier-pigeon"}, wantErr: true},
		{name: "bad exporter", env: map[string]string{"OTEL_TRACES_EXPORTER": "zipkin-v0"}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, k := range []string{"OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"} {
				t.Setenv(k, tt.env[k])
			}
			exp, err := exporterFromEnv(context.Background())
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v", err)
			}
			if err == nil && (exp == nil) != tt.wantNone {
				t.Fatalf("exporter = %T, want none: %v", exp, tt.wantNone)
			}
			if exp != nil {
				exp.Shutdown(context.Background())
			}
		})
	}
}

// Without an exporter spans do not record but still carry trace ids.
func TestNoExporterStillHasTraceIDs(t *testing.T) {
	t.Setenv("OTEL_TRACES_EXPORTER", "")
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
	tp, shutdown, exporting, err := Setup(context.Background(), "test")
	if err != nil || exporting {
		t.Fatal(err, exporting)
	}
	defer shutdown(context.Background())
	_, span := tp.Tracer("t").Start(context.Background(), "x")
	defer span.End()
	if span.IsRecording() || !span.SpanContext().HasTraceID() {
		t.Fatalf("recording=%v trace id=%v", span.IsRecording(), span.SpanContext().HasTraceID())
	}
}
