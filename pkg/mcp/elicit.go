package mcp

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/tools"
)

// An upstream server may ask the person a question during a call of its
// tool (an elicitation: a message and a flat form). toold declares form
// elicitation and forwards it to the person through the call's sink — the
// same door a built-in tool's question takes, so it reaches toold's own
// client (toolctl's prompt, a gRPC agent's Input, an MCP host's
// elicitation) — one field at a time. The call is found from the request's
// context (2026-07-28: the client's multi-round-trip retry runs under the
// call) or, for a server-initiated request (2025-11-25), as the only call
// of that server waiting; with several, toold cannot tell which call asks
// and declines. A person who declines, or a sink that cannot ask, declines
// the elicitation; the server decides what that means for its tool.

// callKey carries the pending call in a CallTool context.
type callKey struct{}

// onElicit answers an elicitation request of the server.
func (u *upstream) onElicit(ctx context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
	p, _ := ctx.Value(callKey{}).(*pending)
	if p == nil {
		u.mu.Lock()
		var waiting []*pending
		for _, c := range u.calls {
			if c.asker != nil {
				waiting = append(waiting, c)
			}
		}
		u.mu.Unlock()
		if len(waiting) != 1 {
			u.m.opts.Logger.Info("MCP server asked a question that toold cannot tie to one call; declined", "mcp_server", u.name, "calls", len(waiting))
			return &sdk.ElicitResult{Action: "decline"}, nil
		}
		p = waiting[0]
	}
	if p.asker == nil || req.Params.Mode == "url" {
		return &sdk.ElicitResult{Action: "decline"}, nil
	}
	content, err := askForm(ctx, p.asker, u.name, req.Params)
	switch {
	case err == nil:
		return &sdk.ElicitResult{Action: "accept", Content: content}, nil
	case ctx.Err() != nil:
		return nil, context.Cause(ctx)
	case errors.Is(err, errdefs.ErrRejected):
		return &sdk.ElicitResult{Action: "decline"}, nil
	default:
		u.m.opts.Logger.Info("MCP server's question could not be asked; declined", "mcp_server", u.name, "err", err)
		return &sdk.ElicitResult{Action: "decline"}, nil
	}
}

// askForm asks the person for each field of the form, in the schema's
// order of required fields first, then by name, and converts each answer
// to the field's type. An empty answer takes the field's default, if it
// has one, and leaves an optional field out otherwise.
func askForm(ctx context.Context, ask func(context.Context, tools.Question) (string, error), server string, params *sdk.ElicitParams) (map[string]any, error) {
	schema, _ := params.RequestedSchema.(map[string]any)
	if schema == nil {
		if b, ok := params.RequestedSchema.(*map[string]any); ok && b != nil {
			schema = *b
		}
	}
	props, _ := schema["properties"].(map[string]any)
	var required []string
	switch r := schema["required"].(type) {
	case []string:
		required = r
	case []any:
		for _, x := range r {
			if s, ok := x.(string); ok {
				required = append(required, s)
			}
		}
	}
	names := make([]string, 0, len(props))
	for n := range props {
		names = append(names, n)
	}
	slices.SortFunc(names, func(x, y string) int {
		rx, ry := slices.Contains(required, x), slices.Contains(required, y)
		if rx != ry {
			if rx {
				return -1
			}
			return 1
		}
		return strings.Compare(x, y)
	})
	intro := fmt.Sprintf("The MCP server %q asks: %s", server, params.Message)
	content := map[string]any{}
	if len(names) == 0 {
		ans, err := ask(ctx, tools.Question{Prompt: intro, Choices: []string{"accept", "decline"}})
		if err != nil {
			return nil, err
		}
		if ans != "accept" {
			return nil, errdefs.New(errdefs.ErrRejected, "declined")
		}
		return content, nil
	}
	for i, name := range names {
		prop, _ := props[name].(map[string]any)
		typ, _ := prop["type"].(string)
		label := name
		if t, _ := prop["title"].(string); t != "" {
			label = t
		}
		if d, _ := prop["description"].(string); d != "" {
			label += " (" + d + ")"
		}
		q := tools.Question{Prompt: label}
		if i == 0 {
			q.Prompt = intro + "\n" + label
		}
		switch e := prop["enum"].(type) {
		case []any:
			for _, x := range e {
				q.Choices = append(q.Choices, fmt.Sprint(x))
			}
		case []string:
			q.Choices = e
		}
		if typ == "boolean" && len(q.Choices) == 0 {
			q.Choices = []string{"true", "false"}
		}
		def, hasDefault := prop["default"]
		if hasDefault {
			q.Prompt += fmt.Sprintf(" [empty for the default: %v]", def)
		}
		ans, err := ask(ctx, q)
		if err != nil {
			return nil, err
		}
		if ans == "" && hasDefault {
			content[name] = def // SEP-1034: an unanswered field takes its default
			continue
		}
		if ans == "" && !slices.Contains(required, name) {
			continue
		}
		v, err := typed(typ, ans)
		if err != nil {
			return nil, errdefs.New(errdefs.ErrInvalidArgument, "%s: %v", name, err)
		}
		content[name] = v
	}
	return content, nil
}

// typed converts an answer to a primitive JSON Schema type.
func typed(typ, s string) (any, error) {
	switch typ {
	case "integer":
		return strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	case "number":
		return strconv.ParseFloat(strings.TrimSpace(s), 64)
	case "boolean":
		return strconv.ParseBool(strings.TrimSpace(s))
	}
	return s, nil
}
