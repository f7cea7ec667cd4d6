package mcphosts_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
)

// A scripted model: a local endpoint speaking one provider's wire protocol
// that replays a turn of tool calls and then a final answer. Where the
// conversation is comes from the request itself (how many tool results it
// carries), as a stateless model API would see it, so the hosts' side
// requests (titles, classifiers, token counts) do not disturb the script.

// step is one tool call of the script and what the host must send back.
type step struct {
	tool string         // toold's tool, a suffix of the host's name for it ("read_file" matches "mcp__toold__read_file")
	own  bool           // tool is the host's own tool, by its exact name (Bash)
	args map[string]any // the call's arguments
	// want are the strings the host's next request to the model must hold
	// (the tool's result passed on); none may appear before this step.
	want []string
}

// wire is a provider's wire protocol, as far as the script needs it.
type wire interface {
	// inspect reads a request: the tool names it offers the model and how
	// many tool results its conversation carries. ok is false for a request
	// that is none of the model API's (answered 404).
	inspect(r *http.Request, body []byte) (tools []string, results int, ok bool)
	// call answers with one call of tool; n numbers the script's calls.
	call(w http.ResponseWriter, r *http.Request, tool string, n int, args map[string]any)
	// text answers with a final text.
	text(w http.ResponseWriter, r *http.Request, text string)
	// side answers a request that offers none of toold's tools (a title,
	// a classifier): plain text, or JSON where the request asks for it.
	side(w http.ResponseWriter, r *http.Request, body []byte)
}

// model replays steps over a wire and records what it was sent.
type model struct {
	wire  wire
	steps []step
	final string // the final answer, a marker the host prints

	mu       sync.Mutex
	turns    int      // requests answered as part of the turn
	requests []string // every request: method, path, body
	tools    []string // the tools the host offered in its first turn request
	reached  []bool   // per step: its want arrived in the next request
	errs     []string
}

func newModel(w wire, final string, steps ...step) *model {
	return &model{wire: w, steps: steps, final: final, reached: make([]bool, len(steps))}
}

func (m *model) errorf(format string, args ...any) {
	m.errs = append(m.errs, fmt.Sprintf(format, args...))
}

func (m *model) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	m.mu.Lock()
	m.requests = append(m.requests, r.Method+" "+r.URL.String()+" "+string(body))
	if d := os.Getenv("MCPHOSTS_DUMP"); d != "" { // debugging: every request, whole
		if f, err := os.OpenFile(d, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600); err == nil {
			fmt.Fprintf(f, "%s %s\n%s\n\n", r.Method, r.URL, body)
			f.Close()
		}
	}
	tools, results, ok := m.wire.inspect(r, body)
	if !ok {
		m.mu.Unlock()
		http.NotFound(w, r)
		return
	}
	if m.steps[0].name(tools) == "" {
		m.mu.Unlock()
		m.wire.side(w, r, body)
		return
	}
	m.turns++
	if m.tools == nil {
		m.tools = tools
	}
	if results > len(m.steps) {
		m.errorf("request with %d tool results, the script made %d calls", results, len(m.steps))
		results = len(m.steps)
	}
	// The results so far must have reached the model; the next step's
	// markers must not be there yet (they would prove nothing).
	for i := 0; i < results; i++ {
		if len(m.steps[i].want) == 0 {
			m.reached[i] = true // nothing to look for: its result came back
		}
		for _, s := range m.steps[i].want {
			if strings.Contains(string(body), s) {
				m.reached[i] = true
			} else if i == results-1 {
				m.errorf("step %d (%s): the host's next request to the model lacks %q", i+1, m.steps[i].tool, s)
				m.reached[i] = false
			}
		}
	}
	if results < len(m.steps) {
		for _, s := range m.steps[results].want {
			if strings.Contains(string(body), s) {
				m.errorf("step %d: %q in the request before the call was made", results+1, s)
			}
		}
	}
	m.mu.Unlock()
	if results == len(m.steps) {
		m.wire.text(w, r, "All done: "+m.final)
		return
	}
	st := m.steps[results]
	m.wire.call(w, r, st.name(tools), results+1, st.args)
}

// check fails t unless every step's result reached the model.
func (m *model) check(t *testing.T) {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, e := range m.errs {
		t.Error(e)
	}
	for i, ok := range m.reached {
		if !ok {
			t.Errorf("step %d (%s %v): its result never reached the model (want %q)", i+1, m.steps[i].tool, m.steps[i].args, m.steps[i].want)
		}
	}
	if t.Failed() {
		t.Logf("tools offered: %v", m.tools)
		for _, r := range m.requests {
			t.Logf("request: %.3000s", r)
		}
	}
}

// pick is the host's name for toold's tool: the name ending in suffix
// that also names toold (mcp__toold__read_file).
func pick(names []string, suffix string) string {
	for _, n := range names {
		if strings.HasSuffix(n, suffix) && strings.Contains(n, "toold") {
			return n
		}
	}
	return ""
}

// name is the host's name of the step's tool.
func (s step) name(names []string) string {
	if s.own {
		if slices.Contains(names, s.tool) {
			return s.tool
		}
		return ""
	}
	return pick(names, s.tool)
}

// sse writes one server-sent event.
func sse(w http.ResponseWriter, event string, data any) {
	b, _ := json.Marshal(data)
	if event != "" {
		fmt.Fprintf(w, "event: %s\n", event)
	}
	fmt.Fprintf(w, "data: %s\n\n", b)
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}

func sseHeader(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
}

// openAIResponses is the OpenAI Responses API (POST /v1/responses,
// streamed as server-sent events), as codex speaks it.
type openAIResponses struct{}

func (openAIResponses) inspect(r *http.Request, body []byte) ([]string, int, bool) {
	var req struct {
		Tools []struct {
			Type  string `json:"type"`
			Name  string `json:"name"`
			Tools []struct {
				Name string `json:"name"`
			} `json:"tools"` // a namespace's (codex offers an MCP server's tools as namespace mcp__SERVER)
		} `json:"tools"`
		Input []struct {
			Type string `json:"type"`
		} `json:"input"`
	}
	if json.Unmarshal(body, &req) != nil {
		return nil, 0, false
	}
	var names []string
	for _, t := range req.Tools {
		names = append(names, t.Name)
		for _, nt := range t.Tools {
			names = append(names, t.Name+"/"+nt.Name)
		}
	}
	n := 0
	for _, in := range req.Input {
		if in.Type == "function_call_output" {
			n++
		}
	}
	return names, n, true
}

func (o openAIResponses) call(w http.ResponseWriter, r *http.Request, tool string, n int, args map[string]any) {
	a, _ := json.Marshal(args)
	item := map[string]any{"type": "function_call", "id": fmt.Sprintf("fc_%d", n), "call_id": fmt.Sprintf("call_toold_%d", n),
		"name": tool, "arguments": string(a), "status": "completed"}
	if ns, name, ok := strings.Cut(tool, "/"); ok {
		item["namespace"], item["name"] = ns, name
	}
	o.stream(w, n, item)
}

func (o openAIResponses) text(w http.ResponseWriter, r *http.Request, text string) {
	item := map[string]any{"type": "message", "id": "msg_final", "role": "assistant", "status": "completed",
		"content": []any{map[string]any{"type": "output_text", "text": text, "annotations": []any{}}}}
	o.stream(w, 0, item)
}

func (openAIResponses) stream(w http.ResponseWriter, n int, item map[string]any) {
	sseHeader(w)
	id := fmt.Sprintf("resp_%d", n)
	resp := map[string]any{"id": id, "object": "response", "status": "in_progress", "model": "scripted", "output": []any{}}
	sse(w, "response.created", map[string]any{"type": "response.created", "response": resp})
	sse(w, "response.output_item.added", map[string]any{"type": "response.output_item.added", "output_index": 0, "item": item})
	sse(w, "response.output_item.done", map[string]any{"type": "response.output_item.done", "output_index": 0, "item": item})
	done := map[string]any{"id": id, "object": "response", "status": "completed", "model": "scripted", "output": []any{item},
		"usage": map[string]any{"input_tokens": 10, "output_tokens": 5, "total_tokens": 15,
			"input_tokens_details": map[string]any{"cached_tokens": 0}, "output_tokens_details": map[string]any{"reasoning_tokens": 0}}}
	sse(w, "response.completed", map[string]any{"type": "response.completed", "response": done})
}

func (o openAIResponses) side(w http.ResponseWriter, r *http.Request, _ []byte) { o.text(w, r, "ok") }

// anthropicMessages is the Anthropic Messages API (POST /v1/messages,
// streamed as server-sent events), as Claude Code speaks it.
type anthropicMessages struct{}

func (anthropicMessages) inspect(r *http.Request, body []byte) ([]string, int, bool) {
	var req struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
		Messages []struct {
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if json.Unmarshal(body, &req) != nil {
		return nil, 0, false
	}
	var names []string
	for _, t := range req.Tools {
		names = append(names, t.Name)
	}
	n := 0
	for _, m := range req.Messages {
		var blocks []struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(m.Content, &blocks) == nil {
			for _, b := range blocks {
				if b.Type == "tool_result" {
					n++
				}
			}
		}
	}
	return names, n, true
}

func (a anthropicMessages) call(w http.ResponseWriter, r *http.Request, tool string, n int, args map[string]any) {
	in, _ := json.Marshal(args)
	a.stream(w, n, "tool_use", map[string]any{"type": "tool_use", "id": fmt.Sprintf("toolu_toold_%d", n), "name": tool, "input": map[string]any{}},
		map[string]any{"type": "input_json_delta", "partial_json": string(in)})
}

func (a anthropicMessages) text(w http.ResponseWriter, r *http.Request, text string) {
	a.stream(w, 0, "end_turn", map[string]any{"type": "text", "text": ""}, map[string]any{"type": "text_delta", "text": text})
}

func (anthropicMessages) stream(w http.ResponseWriter, n int, stop string, block, delta map[string]any) {
	sseHeader(w)
	sse(w, "message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": fmt.Sprintf("msg_%d", n), "type": "message", "role": "assistant", "model": "claude-scripted",
		"content": []any{}, "stop_reason": nil, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": 10, "output_tokens": 1}}})
	sse(w, "content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": block})
	sse(w, "content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": delta})
	sse(w, "content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
	sse(w, "message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": 5}})
	sse(w, "message_stop", map[string]any{"type": "message_stop"})
}

func (a anthropicMessages) side(w http.ResponseWriter, r *http.Request, _ []byte) { a.text(w, r, "ok") }

// geminiAPI is the Gemini API (POST
// /v1beta/models/MODEL:streamGenerateContent?alt=sse, and the unstreamed
// :generateContent), as gemini-cli speaks it.
type geminiAPI struct{}

func (geminiAPI) inspect(r *http.Request, body []byte) ([]string, int, bool) {
	var req struct {
		Tools []struct {
			FunctionDeclarations []struct {
				Name string `json:"name"`
			} `json:"functionDeclarations"`
		} `json:"tools"`
		Contents []struct {
			Parts []map[string]json.RawMessage `json:"parts"`
		} `json:"contents"`
	}
	if json.Unmarshal(body, &req) != nil {
		return nil, 0, false
	}
	var names []string
	for _, t := range req.Tools {
		for _, f := range t.FunctionDeclarations {
			names = append(names, f.Name)
		}
	}
	n := 0
	for _, c := range req.Contents {
		for _, p := range c.Parts {
			if _, ok := p["functionResponse"]; ok {
				n++
			}
		}
	}
	return names, n, true
}

func (g geminiAPI) call(w http.ResponseWriter, r *http.Request, tool string, n int, args map[string]any) {
	g.answer(w, r, map[string]any{"functionCall": map[string]any{"id": fmt.Sprintf("call_toold_%d", n), "name": tool, "args": args}})
}

func (g geminiAPI) text(w http.ResponseWriter, r *http.Request, text string) {
	g.answer(w, r, map[string]any{"text": text})
}

func (geminiAPI) answer(w http.ResponseWriter, r *http.Request, part map[string]any) {
	resp := map[string]any{
		"candidates": []any{map[string]any{"content": map[string]any{"role": "model", "parts": []any{part}},
			"finishReason": "STOP", "index": 0}},
		"usageMetadata": map[string]any{"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
		"modelVersion":  "gemini-scripted",
	}
	if strings.Contains(r.URL.Path, ":streamGenerateContent") {
		sseHeader(w)
		sse(w, "", resp)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(resp)
}

// side answers gemini-cli's classifiers (the model router asks for JSON
// of a schema; answered "ok" it retries with backoff for minutes) with a
// value of the schema asked for.
func (g geminiAPI) side(w http.ResponseWriter, r *http.Request, body []byte) {
	var req struct {
		GenerationConfig struct {
			Schema json.RawMessage `json:"responseJsonSchema"`
		} `json:"generationConfig"`
	}
	json.Unmarshal(body, &req)
	if len(req.GenerationConfig.Schema) == 0 {
		g.text(w, r, "ok")
		return
	}
	var schema any
	json.Unmarshal(req.GenerationConfig.Schema, &schema)
	b, _ := json.Marshal(exampleOf(schema))
	g.text(w, r, string(b))
}

// exampleOf is a small value of a JSON schema (Gemini's upper-case types
// too): the first enum value, 1, false, "scripted", an object of its
// properties.
func exampleOf(schema any) any {
	s, _ := schema.(map[string]any)
	if e, ok := s["enum"].([]any); ok && len(e) > 0 {
		return e[0]
	}
	switch t, _ := s["type"].(string); strings.ToLower(t) {
	case "object":
		o := map[string]any{}
		props, _ := s["properties"].(map[string]any)
		for k, v := range props {
			o[k] = exampleOf(v)
		}
		return o
	case "array":
		return []any{exampleOf(s["items"])}
	case "integer", "number":
		return 1
	case "boolean":
		return false
	}
	return "scripted"
}
