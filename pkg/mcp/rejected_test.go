package mcp_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/mcp"
	"github.com/toold/toold/pkg/mcp/mcpconfig"
)

// A tools/call the SDK's transport could not deliver (the connection
// dropped under the request) ends UNAVAILABLE with the transport's reason,
// not only the SDK's outer "rejected by transport".
func TestCallRejectedByTransportSaysWhy(t *testing.T) {
	server := sdk.NewServer(&sdk.Implementation{Name: "drop", Version: "1"}, &sdk.ServerOptions{HasTools: true})
	sdk.AddTool(server, &sdk.Tool{Name: "ping", Description: "ping"}, func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "pong"}}}, nil, nil
	})
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return server }, nil)
	var drop atomic.Bool
	url := serveHTTP(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(b))
		if drop.Load() && bytes.Contains(b, []byte(`"tools/call"`)) {
			// The connection ends under the request, without an answer.
			if c, _, err := http.NewResponseController(w).Hijack(); err == nil {
				c.Close()
			}
			return
		}
		h.ServeHTTP(w, r)
	}))
	f := newFixture(t, mcp.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := f.m.Start(ctx, map[string]mcpconfig.Server{"drop": {URL: url}}); err != nil {
		t.Fatal(err)
	}
	if end, _ := f.call(ctx, "drop__ping", `{}`); end.Err != nil || endText(end) != "pong" {
		t.Fatalf("first call: %q %v", endText(end), end.Err)
	}
	drop.Store(true)
	end, _ := f.call(ctx, "drop__ping", `{}`)
	if !errors.Is(end.Err, errdefs.ErrUnavailable) {
		t.Fatalf("call over a dropped connection: %v, want UNAVAILABLE", end.Err)
	}
	msg := end.Err.Error()
	if !strings.Contains(msg, "rejected by transport") || !strings.Contains(msg, "EOF") {
		t.Fatalf("call over a dropped connection: %q, want the transport's reason (EOF) after the SDK's rejection", msg)
	}
}
