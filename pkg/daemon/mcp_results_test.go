package daemon_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toold/toold/pkg/config"
	"github.com/toold/toold/pkg/daemon/daemontest"
	"github.com/toold/toold/pkg/mcpserver"
)

// bearer adds the token to every request of an MCP client over HTTP.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// connectMCPHTTP connects a go-sdk client to the daemon's /mcp at the
// protocol revision era, checking that it was negotiated.
func connectMCPHTTP(t *testing.T, d *daemontest.Daemon, token, era string, opts *sdk.ClientOptions) *sdk.ClientSession {
	t.Helper()
	tr := &sdk.StreamableClientTransport{
		Endpoint:   "http://" + d.Main.TCPAddr() + "/mcp",
		HTTPClient: &http.Client{Transport: bearer{token}},
	}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "results-test", Version: "1"}, opts).Connect(context.Background(), tr, &sdk.ClientSessionOptions{ProtocolVersion: era})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	if got := cs.InitializeResult().ProtocolVersion; got != era {
		t.Fatalf("negotiated %s, want %s", got, era)
	}
	return cs
}

// mcpEras are the protocol revisions /mcp serves.
var mcpEras = []string{"2026-07-28", "2025-11-25"}

// Over HTTP, in both eras, a command the policy asks about (AUTO) runs
// when the person approves it through the client (an elicitation request
// in 2025-11-25, an input-required result in 2026-07-28), and a client
// that can show no question gets DENIED with the reason; the command's
// effect (a file) happens only when approved.
func TestMCPHTTPApprovalInBothEras(t *testing.T) {
	d := daemontest.Start(t, daemontest.WithConfig(func(c *config.Config) {
		c.Listen = "127.0.0.1:0"
		c.Token = "s3cret"
		c.MCP.HTTP = true
		c.ApprovalMode = "ask"
	}))
	for _, era := range mcpEras {
		for _, approve := range []bool{true, false} {
			name := era + "/no elicitation"
			opts := &sdk.ClientOptions{}
			var asked string
			if approve {
				name = era + "/approved"
				opts.ElicitationHandler = func(_ context.Context, r *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
					asked = r.Params.Message
					return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"decision": "approve once"}}, nil
				}
			}
			t.Run(name, func(t *testing.T) {
				cs := connectMCPHTTP(t, d, "s3cret", era, opts)
				marker := "effect-" + strings.ReplaceAll(name, "/", "-")
				res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "run_command", Arguments: map[string]any{"command": "touch " + marker + " && echo APPROVED-RUN"}})
				if err != nil {
					t.Fatal(err)
				}
				var txt string
				for _, c := range res.Content {
					if tc, ok := c.(*sdk.TextContent); ok {
						txt += tc.Text
					}
				}
				_, statErr := os.Stat(filepath.Join(d.Workspace, marker))
				if approve {
					if res.IsError || !strings.Contains(txt, "APPROVED-RUN") || statErr != nil || !strings.Contains(asked, "touch "+marker) {
						t.Fatalf("approved call: isError %v %q, effect %v, asked %q", res.IsError, txt, statErr, asked)
					}
					return
				}
				if !res.IsError || !strings.Contains(txt, "Error (DENIED)") || !strings.Contains(txt, "elicitation") || statErr == nil {
					t.Fatalf("a client without elicitation: isError %v %q, effect %v", res.IsError, txt, statErr)
				}
			})
		}
	}
}

// Whatever a host shows the model carries the result's body: codex and
// Claude Code show only structuredContent when a result has one, other
// hosts the text block. Both hold the file's text and the command's
// output, with the same truncation.
func TestMCPResultsCarryTheBodyInBothForms(t *testing.T) {
	d := daemontest.Start(t, daemontest.WithConfig(func(c *config.Config) {
		c.Listen = "127.0.0.1:0"
		c.Token = "s3cret"
		c.MCP.HTTP = true
		c.ApprovalMode = "yolo"
		c.Output.ReadLines = 3
	}))
	os.WriteFile(filepath.Join(d.Workspace, "marker.txt"), []byte("FILE-MARKER-1\nline2\nline3\nline4-cut\n"), 0o644)
	for _, era := range mcpEras {
		t.Run(era, func(t *testing.T) { testResultsCarryTheBody(t, connectMCPHTTP(t, d, "s3cret", era, nil)) })
	}
}

func testResultsCarryTheBody(t *testing.T, cs *sdk.ClientSession) {
	tests := []struct {
		name       string
		tool       string
		args       map[string]any
		want       []string
		notWant    string
		structured string // a key of the tool's own structured data, kept
	}{
		{"read_file", "read_file", map[string]any{"path": "marker.txt"}, []string{"FILE-MARKER-1", "line3"}, "line4-cut", "path"},
		{"run_command", "run_command", map[string]any{"command": "echo CMD-$((40+2))-MARKER"}, []string{"CMD-42-MARKER"}, "", "exit_code"},
		{"failed call", "read_file", map[string]any{"path": "missing.txt"}, []string{"Error (EXECUTION_FAILED)"}, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: tt.tool, Arguments: tt.args})
			if err != nil {
				t.Fatal(err)
			}
			var txt string
			for _, c := range res.Content {
				if tc, ok := c.(*sdk.TextContent); ok {
					txt += tc.Text
				}
			}
			for _, w := range tt.want {
				if !strings.Contains(txt, w) {
					t.Fatalf("text content lacks %q: %q", w, txt)
				}
			}
			if tt.notWant != "" && strings.Contains(txt, tt.notWant) {
				t.Fatalf("text content not truncated: %q", txt)
			}
			if tt.structured == "" && res.StructuredContent == nil {
				return
			}
			sc, ok := res.StructuredContent.(map[string]any)
			if !ok {
				t.Fatalf("structuredContent %T %v", res.StructuredContent, res.StructuredContent)
			}
			if sc[mcpserver.StructuredTextKey] != txt {
				t.Fatalf("structuredContent[%q] = %q, want the text content %q", mcpserver.StructuredTextKey, sc[mcpserver.StructuredTextKey], txt)
			}
			if tt.structured != "" && sc[tt.structured] == nil {
				t.Fatalf("structuredContent lost the tool's %q: %v", tt.structured, sc)
			}
		})
	}
}
