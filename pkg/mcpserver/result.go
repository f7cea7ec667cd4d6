package mcpserver

import (
	"fmt"
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

// toResult turns a call's End into the MCP result: its text (and JSON) as
// one text block, structured data as structuredContent, and for a failed
// call isError with "Error (CODE): message" first, so the model reads why.
func toResult(end *events.End) *sdk.CallToolResult {
	res := &sdk.CallToolResult{}
	var parts []string
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
		if len(r.Structured) > 0 {
			res.StructuredContent = r.Structured
		}
	}
	if len(parts) == 0 {
		parts = append(parts, "(no output)")
	}
	res.Content = []sdk.Content{&sdk.TextContent{Text: strings.Join(parts, "\n\n")}}
	return res
}
