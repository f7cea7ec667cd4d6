package authz_test

import (
	"context"
	"testing"

	"github.com/toold/toold/pkg/authz"
	"github.com/toold/toold/pkg/tools"
)

// BenchmarkAuthorize is the policy's share of a call's latency.
func BenchmarkAuthorize(b *testing.B) {
	f := newFixture(b)
	e, err := authz.NewEngine(authz.EngineConfig{Workspace: f.w, Home: f.home})
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		req  *authz.Request
	}{
		{"think", &authz.Request{ConversationID: "c", Mode: authz.ModeAuto, Tool: "think", Operation: "think", Risk: tools.RiskLow, Effect: tools.Effect{Display: "Thinking"}}},
		{"read_file", readReq(authz.ModeAuto, "src/main.go")},
		{"run_command", cmdReq(authz.ModeYOLO, "go test ./... && git status")},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := e.Authorize(context.Background(), c.req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
