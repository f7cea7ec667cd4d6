package mcp

import (
	"encoding/json"
	"errors"
	"testing"
	"unicode/utf8"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/mcp/mcpconfig"
	"github.com/toold/toold/pkg/tools"
)

// FuzzResult decodes any JSON as an MCP tools/call result and converts it
// for the model: a result always comes back, its text is cut to the limit
// without splitting a character, and isError is an
// ErrFailed error beside the result, never anything else.
func FuzzResult(f *testing.F) {
	for _, s := range []string{
		`{"content":[{"type":"text","text":"hello"}]}`,
		`{"content":[{"type":"text","text":"héllo wörld, more than the limit"}],"isError":true}`,
		`{"content":[{"type":"image","data":"AAAA","mimeType":"image/png"},{"type":"resource_link","uri":"file:///x","name":"x"}]}`,
		`{"content":[{"type":"resource","resource":{"uri":"file:///a","text":"body"}}],"structuredContent":{"a":[1,2]}}`,
		`{"content":[],"structuredContent":{"n":1e308}}`,
		`{"isError":true}`,
	} {
		f.Add([]byte(s))
	}
	const limit = 16
	m := NewManager(Options{Registry: tools.NewRegistry(), Limits: tools.Limits{ReadBytes: limit}})
	u := newUpstream(m, "srv", mcpconfig.Server{Command: "x"})
	tool, err := newTool(u, &sdk.Tool{Name: "t", InputSchema: map[string]any{"type": "object"}})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var res sdk.CallToolResult
		if json.Unmarshal(data, &res) != nil {
			return
		}
		out, err := tool.result(&res)
		if out == nil {
			t.Fatal("no result")
		}
		if len(out.Text) > limit {
			t.Fatalf("text of %d bytes past the limit %d", len(out.Text), limit)
		}
		if out.Truncation != nil && out.Truncation.ShownBytes != uint64(len(out.Text)) {
			t.Fatalf("truncation says %d bytes shown, text has %d", out.Truncation.ShownBytes, len(out.Text))
		}
		if !utf8.ValidString(out.Text) { // JSON strings decode to valid UTF-8: a cut must keep it so
			t.Fatalf("cut inside a character: %q", out.Text)
		}
		if res.IsError != (err != nil) {
			t.Fatalf("isError %v, err %v", res.IsError, err)
		}
		if err != nil && !errors.Is(err, errdefs.ErrFailed) {
			t.Fatalf("isError as %v", err)
		}
	})
}
