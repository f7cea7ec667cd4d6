package mcp_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/events"
	"github.com/toold/toold/pkg/executor"
	"github.com/toold/toold/pkg/mcp"
	"github.com/toold/toold/pkg/mcp/mcpconfig"
)

// formSchema is the form the upstream tool asks the person to fill.
var formSchema = map[string]any{
	"type": "object",
	"properties": map[string]any{
		"name": map[string]any{"type": "string", "title": "Your name"},
		"age":  map[string]any{"type": "integer"},
	},
	"required": []string{"name"},
}

// An upstream server can ask the person a question through toold, in both
// protocol eras: toold's client declares form elicitation and forwards the
// form to the call's person one field at a time (here a host that
// answers); what the person answers reaches the server, typed. A host that
// cannot ask declines, and the server's tool says so.
func TestUpstreamElicitationReachesThePerson(t *testing.T) {
	for _, era := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(era, func(t *testing.T) {
			server := sdk.NewServer(&sdk.Implementation{Name: "asks", Version: "1"}, &sdk.ServerOptions{HasTools: true})
			sdk.AddTool(server, &sdk.Tool{Name: "greet", Description: "asks who you are"}, func(ctx context.Context, req *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
				var res *sdk.ElicitResult
				if era == "2026-07-28" {
					// Multi round trip: ask in the result, read the answer on
					// the client's next round.
					if req.Params.RequestState == "" {
						return &sdk.CallToolResult{InputRequests: sdk.InputRequestMap{"who": &sdk.ElicitParams{Message: "Who are you?", RequestedSchema: formSchema}}, RequestState: "r1"}, nil, nil
					}
					res, _ = req.Params.InputResponses["who"].(*sdk.ElicitResult)
					if res == nil {
						return nil, nil, fmt.Errorf("no answer")
					}
				} else {
					var err error
					if res, err = req.Session.Elicit(ctx, &sdk.ElicitParams{Message: "Who are you?", RequestedSchema: formSchema}); err != nil {
						return nil, nil, err
					}
				}
				text := res.Action
				if res.Action == "accept" {
					text = fmt.Sprintf("hello %v, %T %v", res.Content["name"], res.Content["age"], res.Content["age"])
				}
				return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: text}}}, nil, nil
			})
			url := serveHTTP(t, sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return server }, &sdk.StreamableHTTPOptions{Stateless: era == "2026-07-28"}))
			f := newFixture(t, mcp.Options{})
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := f.m.Start(ctx, map[string]mcpconfig.Server{"asks": {URL: url}}); err != nil {
				t.Fatal(err)
			}
			person := &recorder{answer: func(q *events.Question) (string, error) {
				switch {
				case strings.Contains(q.Prompt, "Your name"):
					return "Ada", nil
				case strings.Contains(q.Prompt, "age"):
					return "36", nil
				}
				return "", fmt.Errorf("unexpected question %q", q.Prompt)
			}}
			end := f.svc.Run(ctx, &executor.CallRequest{CallID: "c1", ConversationID: "t", Name: "asks__greet", ArgsJSON: `{}`}, person)
			if end.Err != nil || endText(end) != "hello Ada, float64 36" {
				t.Fatalf("%q %v (asked %q)", endText(end), end.Err, person.asked)
			}
			if len(person.asked) != 2 || !strings.Contains(person.asked[0], `The MCP server "asks" asks: Who are you?`) {
				t.Fatalf("questions %q", person.asked)
			}
			// A person who declines.
			declines := &recorder{answer: func(*events.Question) (string, error) {
				return "", errdefs.New(errdefs.ErrRejected, "no")
			}}
			end = f.svc.Run(ctx, &executor.CallRequest{CallID: "c2", ConversationID: "t", Name: "asks__greet", ArgsJSON: `{}`}, declines)
			if end.Err != nil || endText(end) != "decline" {
				t.Fatalf("declined: %q %v", endText(end), end.Err)
			}
			// A host that cannot ask.
			end, _ = f.call(ctx, "asks__greet", `{}`)
			if end.Err != nil || endText(end) != "decline" {
				t.Fatalf("no person: %q %v", endText(end), end.Err)
			}
		})
	}
}

// toold's call of an upstream tool carries the call's W3C trace context in
// _meta, so the server's spans join toold's trace.
func TestUpstreamCallCarriesTraceContext(t *testing.T) {
	server := sdk.NewServer(&sdk.Implementation{Name: "tp", Version: "1"}, &sdk.ServerOptions{HasTools: true})
	sdk.AddTool(server, &sdk.Tool{Name: "tp", Description: "echoes traceparent"}, func(_ context.Context, req *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
		tp, _ := req.Params.Meta["traceparent"].(string)
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: tp}}}, nil, nil
	})
	url := serveHTTP(t, sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return server }, nil))
	f := newFixture(t, mcp.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := f.m.Start(ctx, map[string]mcpconfig.Server{"tp": {URL: url}}); err != nil {
		t.Fatal(err)
	}
	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	end := f.svc.Run(ctx, &executor.CallRequest{CallID: "c", ConversationID: "t", Name: "tp__tp", ArgsJSON: `{}`,
		TraceContext: map[string]string{"traceparent": "00-" + traceID + "-00f067aa0ba902b7-01"}}, &recorder{})
	if end.Err != nil || !strings.HasPrefix(endText(end), "00-"+traceID+"-") {
		t.Fatalf("the server saw traceparent %q (%v), want trace %s", endText(end), end.Err, traceID)
	}
}
