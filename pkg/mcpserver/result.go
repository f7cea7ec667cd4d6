package mcpserver

import (
	"fmt"
	"maps"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/events"
)

// ErrorCode names err's class ("DENIED"); INTERNAL when it has none (see
// errdefs.Table).
func ErrorCode(err error) string { return errdefs.Name(err) }

// MetaErrorCode is the _meta key of a failed result's error code.
const MetaErrorCode = "toold/error_code"

// StructuredTextKey is the key of structuredContent that carries what the
// model reads: the same text as the result's text block (the file's lines,
// the command's output, the error message), within the same truncation.
const StructuredTextKey = "text"

// toResult turns a call's End into the MCP result: its text (and JSON) as
// one text block, and for a failed call isError with "Error (CODE):
// message" first, so the model reads why.
//
// A result with structured data also gets structuredContent, and that
// carries the text too, under StructuredTextKey: hosts such as codex and
// Claude Code show the model only structuredContent when a result has one,
// so metadata alone (line numbers, exit code, byte counts) would hide the
// file's text or the command's output from the model. The spec asks for the
// other direction (a text block for clients that ignore structuredContent),
// which the text block is. Structured data that already uses the key is
// kept whole under "structured".
func toResult(end *events.End) *sdk.CallToolResult {
	res := &sdk.CallToolResult{}
	var parts []string
	var structured map[string]any
	if end.Err != nil {
		e := errdefs.As(end.Err)
		code := ErrorCode(e)
		msg := fmt.Sprintf("Error (%s): %s", code, e.Msg)
		if len(e.Suggestions) > 0 {
			msg += "\nDid you mean: " + strings.Join(e.Suggestions, ", ")
		}
		parts = append(parts, msg)
		res.IsError = true
		res.Meta = sdk.Meta{MetaErrorCode: code}
	}
	if r := end.Result; r != nil {
		if r.Text != "" {
			parts = append(parts, r.Text)
		}
		if len(r.JSON) > 0 {
			parts = append(parts, string(r.JSON))
		}
		structured = r.Structured
	}
	if len(parts) == 0 {
		parts = append(parts, "(no output)")
	}
	body := strings.Join(parts, "\n\n")
	res.Content = []sdk.Content{&sdk.TextContent{Text: body}}
	if len(structured) > 0 {
		sc := make(map[string]any, len(structured)+1)
		if _, taken := structured[StructuredTextKey]; taken {
			sc["structured"] = structured
		} else {
			maps.Copy(sc, structured)
		}
		sc[StructuredTextKey] = body
		res.StructuredContent = sc
	}
	return res
}
