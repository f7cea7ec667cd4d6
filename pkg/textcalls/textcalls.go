// Package textcalls finds the tool calls that models without native tool
// calling write into their text, in the formats open models are trained on,
// and renders a tool list as the system-prompt block each of those formats
// documents.
//
// Parse returns the calls it found (name and argument text as written) and
// the text that remains for the person. Check runs a parsed call through
// the same resolution, repair, coercion and validation as a call on the
// stream, without executing it. Neither does I/O.
package textcalls

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/toold/toold/pkg/errdefs"
)

// Format is a text tool-call format.
type Format string

// The formats Parse reads and RenderPrompt writes.
const (
	// Auto detects the format (Parse only).
	Auto Format = ""
	// Hermes is <tool_call>{"name": ..., "arguments": ...}</tool_call>
	// (Hermes 2/3, Qwen 2.5/3; also Qwen3-Coder's <function=...> body).
	Hermes Format = "hermes"
	// Llama3 is Llama 3.x custom tool calling: {"name": ...,
	// "parameters": ...}, after <|python_tag|> or alone, several joined by
	// ";"; <function=name>{...}</function>; and Llama 3.2's pythonic list
	// [f(a=1), g(b=2)].
	Llama3 Format = "llama3"
	// Mistral is [TOOL_CALLS] [{"name": ..., "arguments": ...}] and the
	// newer [TOOL_CALLS]name[ARGS]{...}.
	Mistral Format = "mistral"
	// DeepSeek is the <｜tool▁calls▁begin｜> ... markers of DeepSeek V2.5/V3
	// (function<｜tool▁sep｜>name and a ```json block) and V3.1
	// (name<｜tool▁sep｜>{...}).
	DeepSeek Format = "deepseek"
	// ToolCode is a ```tool_code block of Python calls (Gemma; Gemini's
	// print(default_api.f(...)) form too).
	ToolCode Format = "tool_code"
	// JSON is an OpenAI-style call object in the text or a ```json fence:
	// {"name", "arguments"}, {"function": {...}}, {"tool_calls": [...]},
	// {"action", "action_input"}.
	JSON Format = "json"
	// Legacy is seed 003's TOOL_CALL: lines: "TOOL_CALL: name {json}" or
	// "TOOL_CALL: name(key=value, ...)".
	Legacy Format = "legacy"
	// SWEAgent is SWE-agent's thought/action format: a discussion, then one
	// command in the last ``` block: one of SWE-agent's commands with its
	// positional arguments (find_file NAME [DIR], open PATH [LINE], edit
	// START:END + text + end_of_edit, edit SEARCH REPLACE, …), read into
	// the named arguments of SWE-agent's tools (the swe-agent dialect runs
	// them); with the format named, any other command line is a call to
	// bash {"command": ...}. Auto-detection takes only SWE-agent's own
	// commands, so an ordinary code block is never read as a command.
	SWEAgent Format = "swe-agent"
)

// Formats lists the formats in the order auto-detection tries them.
var Formats = []Format{DeepSeek, Mistral, Hermes, Llama3, ToolCode, Legacy, JSON, SWEAgent}

// Call is one tool call found in a text.
type Call struct {
	// Name is the tool name as written.
	Name string
	// Arguments is the argument text: the JSON as written, or JSON made
	// from Python-style keyword arguments.
	Arguments string
	// Raw is the text of the call, markers included; Start and End are its
	// byte offsets in the input.
	Raw        string
	Start, End int
	// Format is the format it was written in.
	Format Format
	// Err, when not empty, says why the text at Raw, which is marked as a
	// call, could not be read as one (Name and Arguments may be empty).
	Err string
}

// Result is what Parse found.
type Result struct {
	// Calls in the order they appear.
	Calls []Call
	// Text is the input without the calls and the format's end-of-turn
	// tokens, trimmed: what is left for the person.
	Text string
	// Format is the format the calls were in; Auto when none were found.
	Format Format
}

// Parse finds the tool calls in text. With Auto it uses the first format
// (in the order of Formats) that finds any; text without calls comes back
// whole as Result.Text. An unknown format is an INVALID_ARGUMENTS error.
func Parse(text string, f Format) (*Result, error) {
	var formats []Format
	switch f {
	case Auto:
		formats = Formats
	default:
		if _, ok := finderFor(f); !ok {
			return nil, errdefs.New(errdefs.ErrInvalidArgument, "unknown text tool-call format %q; use one of %s", f, formatList())
		}
		formats = []Format{f}
	}
	for _, ff := range formats {
		find, _ := finderFor(ff)
		if f == Auto && ff == SWEAgent {
			find = findSWEAgentStrict
		}
		calls := find(text)
		if len(calls) == 0 {
			continue
		}
		sort.SliceStable(calls, func(i, j int) bool { return calls[i].Start < calls[j].Start })
		for i := range calls {
			calls[i].Format = ff
			calls[i].Raw = text[calls[i].Start:calls[i].End]
		}
		return &Result{Calls: calls, Text: remaining(text, calls), Format: ff}, nil
	}
	return &Result{Text: strings.TrimSpace(trimEndTokens(text))}, nil
}

func formatList() string {
	names := make([]string, len(Formats))
	for i, f := range Formats {
		names[i] = string(f)
	}
	return strings.Join(names, ", ")
}

// finderFor returns the function that finds calls of format f.
func finderFor(f Format) (func(string) []Call, bool) {
	switch f {
	case Hermes:
		return findHermes, true
	case Llama3:
		return findLlama3, true
	case Mistral:
		return findMistral, true
	case DeepSeek:
		return findDeepSeek, true
	case ToolCode:
		return findToolCode, true
	case JSON:
		return findJSON, true
	case Legacy:
		return findLegacy, true
	case SWEAgent:
		return findSWEAgent, true
	}
	return nil, false
}

// endTokens are end-of-turn tokens models leave in their text.
var endTokens = []string{"<|eom_id|>", "<|eot_id|>", "<|im_end|>", "</s>", "<|end|>", "<｜end▁of▁sentence｜>", "<end_of_turn>"}

// remaining cuts the calls out of text and drops end-of-turn tokens.
func remaining(text string, calls []Call) string {
	var b strings.Builder
	at := 0
	for _, c := range calls {
		if c.Start < at {
			continue
		}
		b.WriteString(text[at:c.Start])
		at = c.End
	}
	b.WriteString(text[at:])
	s := b.String()
	for _, t := range endTokens {
		s = strings.ReplaceAll(s, t, "")
	}
	return strings.TrimSpace(s)
}

// callFromObject reads a call object: {"name", "arguments"|"parameters"|
// "args"|"input"}, {"function": {"name", "arguments"}}, {"type":
// "function", ...}, {"action", "action_input"}, {"tool"|"tool_name", ...}.
func callFromObject(obj map[string]json.RawMessage) (name, args string, ok bool) {
	if fn, has := obj["function"]; has {
		var inner map[string]json.RawMessage
		if json.Unmarshal(fn, &inner) == nil {
			if n, a, ok := callFromObject(inner); ok {
				return n, a, true
			}
		}
	}
	for _, k := range []string{"name", "tool", "tool_name", "action", "function"} {
		if raw, has := obj[k]; has {
			if json.Unmarshal(raw, &name) == nil && name != "" {
				break
			}
		}
	}
	if name == "" {
		return "", "", false
	}
	args = "{}"
	for _, k := range []string{"arguments", "parameters", "args", "input", "action_input", "tool_input", "kwargs"} {
		if raw, has := obj[k]; has {
			args = string(bytes.TrimSpace(raw))
			var s string
			// Arguments as a JSON string (OpenAI's wire form) are the text.
			if json.Unmarshal(raw, &s) == nil {
				args = s
			}
			break
		}
	}
	return name, args, true
}

// objectsIn decodes text as one call object, an array of them, or a
// sequence of them (separated by whitespace, commas or ";"). It reports
// false when text is not wholly such.
func objectsIn(text string) ([]map[string]json.RawMessage, bool) {
	t := strings.TrimSpace(text)
	if t == "" {
		return nil, false
	}
	var out []map[string]json.RawMessage
	for t != "" {
		end, ok := scanValue(t, 0)
		if !ok {
			return nil, false
		}
		v := t[:end]
		var objs []map[string]json.RawMessage
		if err := decodeLoose(v, &objs); err != nil {
			var one map[string]json.RawMessage
			if err := decodeLoose(v, &one); err != nil {
				return nil, false
			}
			objs = []map[string]json.RawMessage{one}
		}
		out = append(out, objs...)
		t = strings.TrimLeft(t[end:], " \t\r\n,;")
	}
	return out, len(out) > 0
}

// callsIn reads text as call objects (see objectsIn); each must be a call.
func callsIn(text string) ([]Call, bool) {
	objs, ok := objectsIn(text)
	if !ok {
		return nil, false
	}
	var calls []Call
	for _, o := range objs {
		if tc, has := o["tool_calls"]; has {
			inner, ok := callsIn(string(tc))
			if !ok {
				return nil, false
			}
			calls = append(calls, inner...)
			continue
		}
		n, a, ok := callFromObject(o)
		if !ok {
			return nil, false
		}
		calls = append(calls, Call{Name: n, Arguments: a})
	}
	return calls, true
}

// decodeLoose decodes JSON, or a Python literal of it (models write
// {'name': 'f', 'arguments': {...}}).
func decodeLoose(s string, v any) error {
	err := json.Unmarshal([]byte(s), v)
	if err == nil {
		return nil
	}
	if fixed, ok := pythonLiteral(s); ok {
		return json.Unmarshal([]byte(fixed), v)
	}
	return err
}

// scanValue returns the end of the JSON (or Python-literal) object or
// array starting at text[i], balancing brackets outside strings.
func scanValue(text string, i int) (int, bool) {
	if i >= len(text) || (text[i] != '{' && text[i] != '[') {
		return 0, false
	}
	depth := 0
	var quote byte
	for j := i; j < len(text); j++ {
		c := text[j]
		if quote != 0 {
			switch c {
			case '\\':
				j++
			case quote:
				quote = 0
			}
			continue
		}
		switch c {
		case '"', '\'':
			quote = c
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				return j + 1, true
			}
		}
	}
	return 0, false
}

// errCall is a marked call that could not be read.
func errCall(start, end int, format string, a ...any) Call {
	return Call{Start: start, End: end, Err: fmt.Sprintf(format, a...)}
}
