package mcp

import (
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toold/toold/pkg/mcp/mcpconfig"
	"github.com/toold/toold/pkg/tools"
)

// Tools toold cannot offer are refused with a reason; it never guesses a
// schema.
func TestNewToolRefuses(t *testing.T) {
	u := newUpstream(NewManager(Options{Registry: tools.NewRegistry()}), "srv", mcpconfig.Server{Command: "x"})
	tests := []struct {
		name   string
		tool   *sdk.Tool
		reason string
	}{
		{"no schema", &sdk.Tool{Name: "a"}, "no inputSchema"},
		{"not an object", &sdk.Tool{Name: "a", InputSchema: map[string]any{"type": "string"}}, "not an object schema"},
		{"does not compile", &sdk.Tool{Name: "a", InputSchema: map[string]any{"type": "object", "properties": map[string]any{"x": map[string]any{"type": 5}}}}, "not usable"},
		{"ok, name sanitized", &sdk.Tool{Name: "files.read/v2", InputSchema: map[string]any{"type": "object"}}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tool, err := newTool(u, tt.tool)
			if tt.reason == "" {
				if err != nil || tool.Spec().Name != "srv__files_read_v2" {
					t.Fatalf("%v %v", tool, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.reason) {
				t.Fatalf("err %v, want %q", err, tt.reason)
			}
		})
	}
}

func TestRiskOf(t *testing.T) {
	yes, no := true, false
	tests := []struct {
		name string
		cfg  mcpconfig.ServerPolicy
		ann  *sdk.ToolAnnotations
		want tools.Risk
	}{
		{"no hints", mcpconfig.ServerPolicy{}, nil, tools.RiskMedium},
		{"read only", mcpconfig.ServerPolicy{}, &sdk.ToolAnnotations{ReadOnlyHint: true}, tools.RiskLow},
		{"destructive", mcpconfig.ServerPolicy{}, &sdk.ToolAnnotations{DestructiveHint: &yes}, tools.RiskHigh},
		{"not destructive", mcpconfig.ServerPolicy{}, &sdk.ToolAnnotations{DestructiveHint: &no}, tools.RiskMedium},
		{"server override", mcpconfig.ServerPolicy{Risk: "high"}, &sdk.ToolAnnotations{ReadOnlyHint: true}, tools.RiskHigh},
		{"tool override", mcpconfig.ServerPolicy{Risk: "high", ToolRisk: map[string]string{"t": "low"}}, nil, tools.RiskLow},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := riskOf(mcpconfig.Server{Toold: tt.cfg}, &sdk.Tool{Name: "t", Annotations: tt.ann}); got != tt.want {
				t.Fatalf("risk %v, want %v", got, tt.want)
			}
		})
	}
}

func TestExpand(t *testing.T) {
	t.Setenv("MCP_TEST_SET", "v")
	t.Setenv("MCP_TEST_EMPTY", "")
	tests := []struct{ in, out, missing string }{
		{"plain $HOME", "plain $HOME", ""},
		{"a ${MCP_TEST_SET} b", "a v b", ""},
		{"${MCP_TEST_UNSET:-def}", "def", ""},
		{"${MCP_TEST_EMPTY:-def}", "def", ""},
		{"[${MCP_TEST_EMPTY}]", "[]", ""},
		{"${MCP_TEST_UNSET}", "", "MCP_TEST_UNSET"},
	}
	for _, tt := range tests {
		var x expander
		if got := x.expand(tt.in); got != tt.out {
			t.Fatalf("%q -> %q, want %q", tt.in, got, tt.out)
		}
		if err := x.err(); (tt.missing == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tt.missing) {
			t.Fatalf("%q: err %v", tt.in, err)
		}
	}
}
