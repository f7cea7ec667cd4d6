package mcp_test

import (
	"context"
	"errors"
	"log/slog"
	"os/exec"
	"slices"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toold/toold/pkg/authz"
	"github.com/toold/toold/pkg/executor"
	"github.com/toold/toold/pkg/mcp"
	"github.com/toold/toold/pkg/mcp/mcpconfig"
	"github.com/toold/toold/pkg/mcp/mcptest"
	"github.com/toold/toold/pkg/tools"
)

// BenchmarkEchoStdio splits bench row 8 (server-everything's echo through
// toold vs the go-sdk directly) below the gRPC service: the go-sdk's own
// call to a server of its own (direct), the same call through toold's MCP
// tool (Registry.Resolve, Prepare, Tool.Run: what pkg/mcp adds), and through
// the executor without audit or history (what the call pipeline adds).
func BenchmarkEchoStdio(b *testing.B) {
	peers := mcptest.Require(b)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	reg := tools.NewRegistry()
	m := mcp.NewManager(mcp.Options{Registry: reg, Logger: slog.New(slog.DiscardHandler)})
	defer m.Close()
	if err := m.Start(ctx, map[string]mcpconfig.Server{"everything": peers.EverythingStdio()}); err != nil {
		b.Fatal(err)
	}
	x, err := executor.New(executor.Config{Registry: reg, Authorizer: authz.AllowAll{}})
	if err != nil {
		b.Fatal(err)
	}
	cfg := peers.EverythingStdio()
	direct, err := sdk.NewClient(&sdk.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx,
		&sdk.CommandTransport{Command: exec.Command(cfg.Command, cfg.Args...), TerminateDuration: time.Second}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer direct.Close()
	// Both servers warm (node compiles what it runs often) before any is
	// measured.
	for i := 0; i < 500; i++ {
		if _, err := direct.CallTool(ctx, &sdk.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "ping"}}); err != nil {
			b.Fatal(err)
		}
		if end := x.Run(ctx, &executor.CallRequest{CallID: "w", ConversationID: "t", Name: "everything__echo", ArgsJSON: `{"message":"ping"}`}, &recorder{}); end == nil || end.Err != nil {
			b.Fatalf("%+v", end)
		}
	}
	// The three alternate call by call, so that the machine's noise falls
	// on all of them; each reports its median.
	paths := []struct {
		name string
		call func() error
	}{
		{"direct", func() error {
			_, err := direct.CallTool(ctx, &sdk.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "ping"}})
			return err
		}},
		{"tool", func() error {
			args := map[string]any{"message": "ping"}
			tg, err := reg.Resolve("everything__echo", args)
			if err == nil {
				_, err = tg.Prepare(args)
			}
			if err == nil {
				_, err = tg.Tool.Run(ctx, &tools.Call{Operation: tg.Operation, Args: args}, nil)
			}
			return err
		}},
		{"executor", func() error {
			end := x.Run(ctx, &executor.CallRequest{CallID: "c", ConversationID: "t", Name: "everything__echo", ArgsJSON: `{"message":"ping"}`}, &recorder{})
			if end == nil {
				return errors.New("no end")
			}
			return end.Err
		}},
	}
	times := make([][]time.Duration, len(paths))
	for b.Loop() {
		for i, p := range paths {
			t0 := time.Now()
			if err := p.call(); err != nil {
				b.Fatalf("%s: %v", p.name, err)
			}
			times[i] = append(times[i], time.Since(t0))
		}
	}
	for i, p := range paths {
		slices.Sort(times[i])
		b.ReportMetric(float64(times[i][len(times[i])/2].Microseconds()), p.name+"-p50-µs")
	}
}
