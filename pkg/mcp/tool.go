package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/propagation"

	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/mcp/mcpconfig"
	"github.com/toold/toold/pkg/tools"
)

// Tool is one tool of an MCP server, registered as "SERVER__TOOL". Its
// schema is the server's inputSchema, so toold coerces and validates the
// arguments before the server sees them; its risk comes from the server's
// annotations unless the configuration overrides it. Running it calls the
// tool on the server's current session.
type Tool struct {
	up     *upstream
	remote string // the tool's name on the server
	spec   tools.Spec
	hosts  []string
}

var (
	_ tools.Tool          = (*Tool)(nil)
	_ tools.ProgressTimed = (*Tool)(nil)
)

// ProgressResetsTimeout implements tools.ProgressTimed: a call of an MCP
// tool may run as long as the server reports progress; the call's timeout
// counts time without progress, and toold's maximum timeout caps the call.
func (t *Tool) ProgressResetsTimeout() bool { return true }

// notName matches what is replaced in a tool's name to make the toold name
// valid for every model provider (OpenAI allows [A-Za-z0-9_-]).
var notName = regexp.MustCompile(`[^A-Za-z0-9_-]`)

// newTool wraps rt, or says why it cannot be offered.
func newTool(u *upstream, rt *sdk.Tool) (*Tool, error) {
	if rt.Name == "" {
		return nil, errors.New("it has no name")
	}
	if rt.InputSchema == nil {
		return nil, errors.New("it has no inputSchema, which MCP requires; toold does not guess a tool's arguments (fix the server)")
	}
	schema, err := json.Marshal(rt.InputSchema)
	if err != nil {
		return nil, fmt.Errorf("its inputSchema does not encode: %v", err)
	}
	var obj map[string]any
	if json.Unmarshal(schema, &obj) != nil || obj["type"] != "object" {
		return nil, errors.New(`its inputSchema is not an object schema ({"type": "object", ...}), which MCP requires`)
	}
	desc := rt.Description
	if desc == "" {
		desc = rt.Title
	}
	name := u.name + "__" + notName.ReplaceAllString(rt.Name, "_")
	t := &Tool{
		up:     u,
		remote: rt.Name,
		spec: tools.Spec{
			Name:        name,
			Description: desc,
			Source:      u.source,
			Operations: []tools.OperationSpec{{
				Name:        name,
				Description: desc,
				Risk:        riskOf(u.cfg, rt),
				Schema:      schema,
				Long:        true, // a remote tool's time is the server's: offered as an MCP task
			}},
		},
	}
	if u.cfg.URL != "" {
		if pu, err := url.Parse(u.cfg.URL); err == nil && pu.Host != "" {
			t.hosts = []string{pu.Host}
		}
	}
	// Compile the schema alone, so one bad tool is refused, not the server.
	if err := tools.CheckSchemas(t); err != nil {
		return nil, fmt.Errorf("its inputSchema is not usable: %v", err)
	}
	return t, nil
}

// riskOf maps a tool to a risk: the configured tool_risk, else the server's
// configured risk, else the annotations (readOnlyHint low, destructiveHint
// high), else medium. Annotations of an untrusted server are only hints,
// which is why the configuration wins.
func riskOf(cfg mcpconfig.Server, rt *sdk.Tool) tools.Risk {
	if r, ok := cfg.Toold.ToolRisk[rt.Name]; ok {
		return parseRisk(r)
	}
	if cfg.Toold.Risk != "" {
		return parseRisk(cfg.Toold.Risk)
	}
	if a := rt.Annotations; a != nil {
		if a.ReadOnlyHint {
			return tools.RiskLow
		}
		if a.DestructiveHint != nil && *a.DestructiveHint {
			return tools.RiskHigh
		}
	}
	return tools.RiskMedium
}

func parseRisk(s string) tools.Risk {
	switch r, _ := mcpconfig.ParseRisk(s); r {
	case "low":
		return tools.RiskLow
	case "medium":
		return tools.RiskMedium
	}
	return tools.RiskHigh
}

// Spec implements tools.Tool.
func (t *Tool) Spec() tools.Spec { return t.spec }

// Describe implements tools.Tool: the display line names the server and
// the tool; an HTTP server's host is the call's network effect.
func (t *Tool) Describe(call *tools.Call) tools.Effect {
	args, _ := json.Marshal(call.Args)
	return tools.Effect{
		Display: tools.Clip(fmt.Sprintf("MCP %s: %s %s", t.up.name, t.remote, args), 100),
		Hosts:   t.hosts,
	}
}

// Errors that say why a call's own context ended.
var (
	errIdle     = errors.New("the MCP server went idle")
	errMaxTime  = errors.New("the MCP server's max_timeout passed")
	errSinkGone = errors.New("the call's client is gone")
)

// Settling: progress notifications that preceded the result on the wire
// may reach the handler after CallTool returned (the SDK delivers
// notifications on another goroutine). After the result, toold waits for
// the stragglers: until progress reaches its total (at most settleTotal),
// or, without a total, until settleQuiet passes without one. Calls that
// reported no progress do not wait.
const (
	settleTotal = 250 * time.Millisecond
	settleQuiet = 20 * time.Millisecond
	// progressInbox bounds the notes waiting for a slow client per call.
	progressInbox = 64
)

// Run implements tools.Tool. It calls the tool with a progress token and
// turns progress notifications into Progress events. The call ends when
// the server answers, when it sends neither progress nor a result for the
// server's idle timeout (TIMEOUT; progress resets it), when max_timeout
// passes, or when ctx ends; ending early sends notifications/cancelled and
// leaves the session usable. A result with isError and a JSON-RPC error
// both end the call with a typed error; structuredContent is kept.
//
// The SDK's call runs on Run's goroutine: its result wakes the caller
// directly (bench row 8 pays for every goroutine hand-off on the way
// back). Progress is emitted by a goroutine of its own, started by the
// call's first notification (pending.push), so a slow client never holds
// up the SDK's reader; the idle timer cancels the call from the timer's
// goroutine.
func (t *Tool) Run(ctx context.Context, call *tools.Call, sink *tools.Sink) (*tools.Result, error) {
	u := t.up
	cs, err := u.current()
	if err != nil {
		return nil, err
	}
	token := "toold-" + strconv.FormatUint(u.m.token.Add(1), 10)
	p := &pending{}
	if sink != nil {
		p.asker = sink.Ask
	}
	idle := time.Duration(u.cfg.Toold.IdleTimeout)
	if idle <= 0 {
		idle = u.m.opts.IdleTimeout
	}
	cctx, cancel := context.WithCancelCause(context.WithValue(ctx, callKey{}, p))
	defer cancel(nil)
	if mt := time.Duration(u.cfg.Toold.MaxTimeout); mt > 0 {
		var stop context.CancelFunc
		cctx, stop = context.WithTimeoutCause(cctx, mt, errMaxTime)
		defer stop()
	}
	timer := time.AfterFunc(idle, func() { cancel(errIdle) })
	defer timer.Stop()
	p.alive = func() { timer.Reset(idle) }
	p.emit = func(n progressNote) {
		if sink.Progress(progressText(n), fraction(n)) != nil {
			cancel(errSinkGone)
		}
	}
	u.mu.Lock()
	u.calls[token] = p
	u.mu.Unlock()
	defer func() {
		u.mu.Lock()
		delete(u.calls, token)
		u.mu.Unlock()
	}()

	meta := sdk.Meta{"progressToken": token}
	// The call's W3C trace context, so the server's spans join toold's
	// trace of the call.
	carrier := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(cctx, carrier)
	for k, v := range carrier {
		meta[k] = v
	}
	res, err := cs.CallTool(cctx, &sdk.CallToolParams{
		Name:      t.remote,
		Arguments: call.Args,
		Meta:      meta,
	})
	if last, progressed := p.finish(); progressed {
		t.settle(p, last)
	}
	if err != nil {
		return nil, t.callError(cctx, err, idle)
	}
	return t.result(res)
}

// settle emits the progress that arrives shortly after the result (see
// Settling), once the forwarder has stopped; last is the last note emitted.
func (t *Tool) settle(p *pending, last progressNote) {
	wait := settleQuiet
	if last.total > 0 && last.progress < last.total {
		wait = settleTotal
	}
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	for {
		select {
		case n := <-p.notes:
			p.emit(n)
			if n.total > 0 && n.progress >= n.total {
				// Complete; take what is already queued and stop.
				for {
					select {
					case n := <-p.notes:
						p.emit(n)
					default:
						return
					}
				}
			}
			if n.total <= 0 {
				deadline.Reset(settleQuiet)
			}
		case <-deadline.C:
			return
		}
	}
}

func progressText(n progressNote) string {
	if n.msg != "" {
		return n.msg
	}
	if n.total > 0 {
		return fmt.Sprintf("%g/%g", n.progress, n.total)
	}
	return fmt.Sprintf("%g", n.progress)
}

func fraction(n progressNote) float64 {
	if n.total > 0 {
		return min(max(n.progress/n.total, 0), 1)
	}
	return -1
}

// codeRejected is the code of the go-sdk's jsonrpc2.ErrRejected ("rejected
// by transport"), which its transports wrap, together with the reason,
// around a request they could not send (internal to the SDK, so not
// importable).
const codeRejected = -32005

// callError classifies a failed CallTool. ctx is the call's own context,
// whose cause says why toold ended it; when the executor's context ended,
// the executor reports that instead.
func (t *Tool) callError(ctx context.Context, err error, idle time.Duration) error {
	server := t.up.name
	switch cause := context.Cause(ctx); {
	case errors.Is(cause, errIdle):
		return errdefs.Wrap(errdefs.ErrTimeout, err,
			"MCP server %s sent neither progress nor a result for %s, so the call was canceled; retry, or raise toold.idle_timeout for the server", server, idle)
	case errors.Is(cause, errMaxTime):
		return errdefs.Wrap(errdefs.ErrTimeout, err,
			"the call to MCP server %s ran past the server's max_timeout of %s and was canceled", server, time.Duration(t.up.cfg.Toold.MaxTimeout))
	case errors.Is(cause, errSinkGone):
		return errdefs.Wrap(errdefs.ErrDisconnected, err, "the call's client is gone; the call to MCP server %s was canceled", server)
	case ctx.Err() != nil:
		return errdefs.Wrap(errdefs.ErrCanceled, err, "the call to MCP server %s was canceled", server)
	}
	if msg := t.up.authFailure(); msg != "" {
		// The transport's authorization failed (the SDK reports it as a
		// rejected request).
		return errdefs.Wrap(errdefs.ErrUnavailable, err, "MCP server %s is not authorized: %s", server, msg)
	}
	var we *jsonrpc.Error
	if errors.As(err, &we) && we.Code == codeRejected {
		// Not the server's answer: the SDK's transport could not deliver
		// the request (the connection failed, a header could not be set).
		// The reason is in the errors it wrapped, not in we.Message.
		return errdefs.Wrap(errdefs.ErrUnavailable, err, "the call did not reach MCP server %s: %s", server, tools.Clip(err.Error(), 1000))
	}
	if errors.As(err, &we) {
		switch we.Code {
		case jsonrpc.CodeInvalidParams:
			return errdefs.Wrap(errdefs.ErrInvalidArgument, err, "MCP server %s rejected the call: %s", server, tools.Clip(we.Message, 2000))
		case jsonrpc.CodeMethodNotFound:
			return errdefs.Wrap(errdefs.ErrFailed, err, "MCP server %s does not implement tools/call: %s", server, tools.Clip(we.Message, 500))
		}
		return errdefs.Wrap(errdefs.ErrFailed, err, "MCP server %s failed the call (JSON-RPC error %d): %s", server, we.Code, tools.Clip(we.Message, 2000))
	}
	if errors.Is(err, sdk.ErrConnectionClosed) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return errdefs.Wrap(errdefs.ErrUnavailable, err,
			"MCP server %s closed the connection during the call (it may have crashed); toold reconnects: retry in a few seconds", server)
	}
	return errdefs.Wrap(errdefs.ErrUnavailable, err, "the call to MCP server %s failed: %s", server, tools.Clip(err.Error(), 500))
}

// result converts a CallToolResult. isError becomes an ErrFailed error next
// to the result, whose text and structured content are kept.
func (t *Tool) result(res *sdk.CallToolResult) (*tools.Result, error) {
	if res == nil {
		res = &sdk.CallToolResult{}
	}
	var parts []string
	for _, c := range res.Content {
		if s := contentText(c); s != "" {
			parts = append(parts, s)
		}
	}
	out := &tools.Result{
		Text:     strings.Join(parts, "\n"),
		Metadata: map[string]any{"mcp_server": t.up.name, "mcp_tool": t.remote},
	}
	if res.StructuredContent != nil {
		if m, ok := normalize(res.StructuredContent).(map[string]any); ok {
			out.Structured = m
		} else {
			out.Structured = map[string]any{"value": normalize(res.StructuredContent)}
		}
		if out.Text == "" {
			out.JSON, _ = json.Marshal(res.StructuredContent)
		}
	}
	if limit := t.up.m.opts.Limits.ReadBytes; len(out.Text) > limit {
		total := len(out.Text)
		cut := limit
		for cut > 0 && cut < len(out.Text) && out.Text[cut]&0xC0 == 0x80 {
			cut-- // do not split a UTF-8 sequence
		}
		out.Text = out.Text[:cut]
		out.Truncation = &tools.Truncation{
			ShownBytes: uint64(cut), TotalBytes: uint64(total),
			Continuation: "the MCP tool's output was cut to its first bytes; ask the tool for less (a narrower query or a page)",
		}
	}
	if res.IsError {
		msg := out.Text
		if msg == "" {
			msg = "no details"
		}
		return out, errdefs.New(errdefs.ErrFailed, "MCP tool %s.%s reported an error: %s", t.up.name, t.remote, tools.Clip(msg, 2000))
	}
	return out, nil
}

// contentText renders one content block as text for the model. Binary
// blocks are described, not dumped.
func contentText(c sdk.Content) string {
	switch c := c.(type) {
	case *sdk.TextContent:
		return c.Text
	case *sdk.ImageContent:
		return fmt.Sprintf("[image: %s, %d bytes]", c.MIMEType, len(c.Data))
	case *sdk.AudioContent:
		return fmt.Sprintf("[audio: %s, %d bytes]", c.MIMEType, len(c.Data))
	case *sdk.ResourceLink:
		return fmt.Sprintf("[resource link: %s %s]", c.Name, c.URI)
	case *sdk.EmbeddedResource:
		if r := c.Resource; r != nil {
			if r.Text != "" {
				return r.Text
			}
			return fmt.Sprintf("[resource: %s %s, %d bytes]", r.URI, r.MIMEType, len(r.Blob))
		}
	}
	return ""
}

// normalize turns a decoded JSON value into plain map/slice types.
func normalize(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	var out any
	_ = json.Unmarshal(b, &out)
	return out
}
