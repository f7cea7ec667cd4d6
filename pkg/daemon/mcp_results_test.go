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

// connectMCPHTTP connects a go-sdk client to the daemon's /mcp.
func connectMCPHTTP(t *testing.T, d *daemontest.Daemon, token string) *sdk.ClientSession {
	t.Helper()
	tr := &sdk.StreamableClientTransport{
		Endpoint:   "http://" + d.Main.TCPAddr() + "/mcp",
		HTTPClient: &http.Client{Transport: bearer{token}},
	}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "results-test", Version: "1"}, nil).Connect(context.Background(), tr, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
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
	cs := connectMCPHTTP(t, d, "s3cret")
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
