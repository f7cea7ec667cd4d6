package textcalls

import (
	"encoding/json"
	"strings"

	"github.com/toold/toold/pkg/tools"
)

func pythonLiteral(s string) (string, bool) { return tools.PythonLiteralJSON(s) }

// findHermes reads <tool_call>...</tool_call> blocks. A block the model
// did not close (it stopped at end of turn) runs to the end of the text.
// The body is one or more call objects, or Qwen3-Coder's
// <function=name><parameter=key>value</parameter></function>.
func findHermes(text string) []Call {
	const open, end = "<tool_call>", "</tool_call>"
	var calls []Call
	for at := 0; ; {
		i := strings.Index(text[at:], open)
		if i < 0 {
			break
		}
		start := at + i
		bodyStart := start + len(open)
		stop, next := len(text), len(text)
		if j := strings.Index(text[bodyStart:], end); j >= 0 {
			stop, next = bodyStart+j, bodyStart+j+len(end)
		} else if j := strings.Index(text[bodyStart:], open); j >= 0 {
			stop, next = bodyStart+j, bodyStart+j
		}
		body := trimEndTokens(text[bodyStart:stop])
		switch {
		case strings.HasPrefix(strings.TrimSpace(body), "<function="):
			calls = append(calls, xmlFunctions(body, start, next)...)
		default:
			cs, ok := callsIn(body)
			if !ok {
				calls = append(calls, errCall(start, next, "the <tool_call> block does not hold a JSON object with \"name\" and \"arguments\": %s", clip(body)))
			}
			for _, c := range cs {
				c.Start, c.End = start, next
				calls = append(calls, c)
			}
		}
		at = next
	}
	return calls
}

// xmlFunctions reads Qwen3-Coder's
// <function=name>\n<parameter=key>\nvalue\n</parameter>\n</function>.
// Parameter values are text; JSON values (numbers, arrays) are kept as
// JSON, everything else becomes a string the schema coerces.
func xmlFunctions(body string, start, end int) []Call {
	var calls []Call
	for {
		i := strings.Index(body, "<function=")
		if i < 0 {
			return calls
		}
		body = body[i+len("<function="):]
		gt := strings.IndexByte(body, '>')
		if gt < 0 {
			return append(calls, errCall(start, end, "<function= is not closed with >"))
		}
		name := strings.TrimSpace(body[:gt])
		body = body[gt+1:]
		fnEnd := strings.Index(body, "</function>")
		inner := body
		if fnEnd >= 0 {
			inner, body = body[:fnEnd], body[fnEnd+len("</function>"):]
		} else {
			body = ""
		}
		args := map[string]json.RawMessage{}
		for {
			p := strings.Index(inner, "<parameter=")
			if p < 0 {
				break
			}
			inner = inner[p+len("<parameter="):]
			gt := strings.IndexByte(inner, '>')
			if gt < 0 {
				break
			}
			key := strings.TrimSpace(inner[:gt])
			inner = inner[gt+1:]
			val := inner
			if q := strings.Index(inner, "</parameter>"); q >= 0 {
				val, inner = inner[:q], inner[q+len("</parameter>"):]
			} else {
				inner = ""
			}
			val = strings.TrimPrefix(strings.TrimSuffix(val, "\n"), "\n")
			b, _ := json.Marshal(val)
			args[key] = b
		}
		a, _ := json.Marshal(args)
		calls = append(calls, Call{Name: name, Arguments: string(a), Start: start, End: end})
	}
}

// findLlama3 reads Llama 3.x calls: <|python_tag|> followed by call
// objects (joined by ";") or Python calls up to <|eom_id|>/<|eot_id|>;
// <function=name>{...}</function>; or, when the whole text is one, a bare
// call object (with "parameters" or "arguments") or a pythonic list
// [f(a=1), g(b=2)].
func findLlama3(text string) []Call {
	var calls []Call
	const tag = "<|python_tag|>"
	for at := 0; ; {
		i := strings.Index(text[at:], tag)
		if i < 0 {
			break
		}
		start := at + i
		bodyStart := start + len(tag)
		stop, next := len(text), len(text)
		for _, e := range []string{"<|eom_id|>", "<|eot_id|>", tag} {
			if j := strings.Index(text[bodyStart:], e); j >= 0 && bodyStart+j < stop {
				stop = bodyStart + j
				next = stop
				if e != tag {
					next += len(e)
				}
			}
		}
		body := strings.TrimSpace(text[bodyStart:stop])
		if cs, ok := callsIn(body); ok {
			for _, c := range cs {
				c.Start, c.End = start, next
				calls = append(calls, c)
			}
		} else if pcs, err := parsePyCalls(body, false); err == nil {
			for _, c := range pcs {
				c.Start, c.End = start, next
				calls = append(calls, c)
			}
		} else {
			calls = append(calls, errCall(start, next, "the text after <|python_tag|> is neither a JSON call {\"name\": ..., \"parameters\": {...}} nor a Python call (%v): %s", err, clip(body)))
		}
		at = next
	}
	for at := 0; ; {
		i := strings.Index(text[at:], "<function=")
		if i < 0 {
			break
		}
		start := at + i
		rest := text[start+len("<function="):]
		gt := strings.IndexByte(rest, '>')
		close := strings.Index(rest, "</function>")
		if gt < 0 || close < gt {
			calls = append(calls, errCall(start, len(text), "<function=NAME>{...}</function> is not closed"))
			break
		}
		name := strings.TrimSpace(rest[:gt])
		args := strings.TrimSpace(rest[gt+1 : close])
		end := start + len("<function=") + close + len("</function>")
		calls = append(calls, Call{Name: name, Arguments: args, Start: start, End: end})
		at = end
	}
	if len(calls) > 0 {
		return calls
	}
	// The whole message as one bare call (Llama's JSON custom tool
	// calling answers with nothing else).
	body := trimEndTokens(text)
	lead := len(text) - len(strings.TrimLeft(text, " \t\r\n"))
	trimmed := strings.TrimSpace(body)
	if strings.HasPrefix(trimmed, "{") {
		if cs, ok := callsIn(trimmed); ok && hasParametersKey(trimmed) {
			for _, c := range cs {
				c.Start, c.End = lead, lead+len(trimmed)
				calls = append(calls, c)
			}
		}
	} else if strings.HasPrefix(trimmed, "[") && strings.HasSuffix(trimmed, ")]") {
		if pcs, err := parsePyCalls(trimmed, false); err == nil {
			for _, c := range pcs {
				c.Start, c.End = lead, lead+len(trimmed)
				calls = append(calls, c)
			}
		}
	}
	return calls
}

// hasParametersKey tells Llama's bare {"name", "parameters"} from the
// OpenAI-style object the JSON format reads.
func hasParametersKey(s string) bool { return strings.Contains(s, `"parameters"`) }

// findMistral reads [TOOL_CALLS] followed by a JSON array of calls, or
// (tokenizer v11+) name[ARGS]{...}, possibly several [TOOL_CALLS] in a row.
func findMistral(text string) []Call {
	const tag = "[TOOL_CALLS]"
	var calls []Call
	for at := 0; ; {
		i := strings.Index(text[at:], tag)
		if i < 0 {
			break
		}
		start := at + i
		p := start + len(tag)
		for p < len(text) && strings.IndexByte(" \t\r\n", text[p]) >= 0 {
			p++
		}
		if p < len(text) && (text[p] == '[' || text[p] == '{') {
			end, ok := scanValue(text, p)
			if !ok {
				calls = append(calls, errCall(start, len(text), "the JSON after [TOOL_CALLS] is not complete: %s", clip(text[p:])))
				break
			}
			cs, ok := callsIn(text[p:end])
			if !ok {
				calls = append(calls, errCall(start, end, "the JSON after [TOOL_CALLS] is not a list of {\"name\", \"arguments\"} objects: %s", clip(text[p:end])))
			}
			for _, c := range cs {
				c.Start, c.End = start, end
				calls = append(calls, c)
			}
			at = end
			continue
		}
		a := strings.Index(text[p:], "[ARGS]")
		if a < 0 {
			calls = append(calls, errCall(start, len(text), "[TOOL_CALLS] is followed by neither a JSON list nor NAME[ARGS]{...}: %s", clip(text[p:])))
			break
		}
		name := strings.TrimSpace(text[p : p+a])
		if c := strings.Index(name, "[CALL_ID]"); c >= 0 {
			name = strings.TrimSpace(name[:c])
		}
		q := p + a + len("[ARGS]")
		end, ok := scanValue(text, q)
		if !ok {
			calls = append(calls, errCall(start, len(text), "the arguments of %s after [ARGS] are not a complete JSON object", name))
			break
		}
		calls = append(calls, Call{Name: name, Arguments: text[q:end], Start: start, End: end})
		at = end
	}
	return calls
}

// DeepSeek's markers, with the full-width bar its tokenizer uses; models
// served without the special tokens sometimes write an ASCII "|".
var (
	dsCallsBegin = []string{"<｜tool▁calls▁begin｜>", "<|tool▁calls▁begin|>"}
	dsCallsEnd   = []string{"<｜tool▁calls▁end｜>", "<|tool▁calls▁end|>"}
	dsCallBegin  = []string{"<｜tool▁call▁begin｜>", "<|tool▁call▁begin|>"}
	dsCallEnd    = []string{"<｜tool▁call▁end｜>", "<|tool▁call▁end|>"}
	dsSep        = []string{"<｜tool▁sep｜>", "<|tool▁sep|>"}
)

func indexAny(s string, subs []string) (int, int) {
	best, n := -1, 0
	for _, sub := range subs {
		if i := strings.Index(s, sub); i >= 0 && (best < 0 || i < best) {
			best, n = i, len(sub)
		}
	}
	return best, n
}

// findDeepSeek reads DeepSeek V2.5/V3 calls (function<sep>NAME then a
// ```json block) and V3.1 calls (NAME<sep>{...}).
func findDeepSeek(text string) []Call {
	var calls []Call
	for at := 0; ; {
		i, n := indexAny(text[at:], dsCallBegin)
		if i < 0 {
			break
		}
		start := at + i
		body := start + n
		j, m := indexAny(text[body:], dsCallEnd)
		stop, next := len(text), len(text)
		if j >= 0 {
			stop, next = body+j, body+j+m
		}
		inner := text[body:stop]
		s, sn := indexAny(inner, dsSep)
		if s < 0 {
			calls = append(calls, errCall(start, next, "a DeepSeek tool call without <｜tool▁sep｜>: %s", clip(inner)))
			at = next
			continue
		}
		head, rest := strings.TrimSpace(inner[:s]), inner[s+sn:]
		var name, args string
		if head == "function" || head == "" {
			// V2.5/V3: the name, a newline, then the arguments in a fence.
			nl := strings.IndexByte(rest, '\n')
			if nl < 0 {
				name, args = strings.TrimSpace(rest), "{}"
			} else {
				name, args = strings.TrimSpace(rest[:nl]), stripFence(strings.TrimSpace(rest[nl+1:]))
			}
		} else {
			name, args = head, stripFence(strings.TrimSpace(rest))
		}
		calls = append(calls, Call{Name: name, Arguments: args, Start: start, End: next})
		at = next
	}
	if len(calls) == 0 {
		return nil
	}
	// The wrapper markers belong to the calls: widen the first and last.
	if i, n := indexAny(text, dsCallsBegin); i >= 0 && i+n <= calls[0].Start && strings.TrimSpace(text[i+n:calls[0].Start]) == "" {
		calls[0].Start = i
	}
	last := &calls[len(calls)-1]
	if j, m := indexAny(text[last.End:], dsCallsEnd); j >= 0 && strings.TrimSpace(text[last.End:last.End+j]) == "" {
		last.End += j + m
	}
	return calls
}

// stripFence returns the body of a ```json (or ```) fence around s, or s.
func stripFence(s string) string {
	if !strings.HasPrefix(s, "```") {
		return s
	}
	body := strings.TrimPrefix(s, "```")
	if nl := strings.IndexByte(body, '\n'); nl >= 0 && !strings.ContainsAny(body[:nl], "{[") {
		body = body[nl+1:]
	}
	return strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(body), "```"))
}

// findToolCode reads ```tool_code blocks of Python calls, one per line or
// in a list; print(...) around a call is dropped.
func findToolCode(text string) []Call {
	var calls []Call
	for _, b := range fences(text, "tool_code", "tool_call", "python_tool", "python-tool") {
		pcs, err := parsePyCalls(b.body, false)
		if err != nil {
			calls = append(calls, errCall(b.start, b.end, "the ```tool_code block is not Python calls such as get_weather(city=\"Paris\") (%v): %s", err, clip(b.body)))
			continue
		}
		for _, c := range pcs {
			c.Start, c.End = b.start, b.end
			calls = append(calls, c)
		}
	}
	return calls
}

// findJSON reads OpenAI-style call objects in ```json (or bare ```)
// fences, or the whole text as one (or a list of them). JSON that is not a
// call object is left as text.
func findJSON(text string) []Call {
	var calls []Call
	for _, b := range fences(text, "json", "") {
		cs, ok := callsIn(b.body)
		if !ok {
			continue
		}
		for _, c := range cs {
			c.Start, c.End = b.start, b.end
			calls = append(calls, c)
		}
	}
	if len(calls) > 0 {
		return calls
	}
	t := trimEndTokens(text)
	trimmed := strings.TrimSpace(t)
	lead := len(text) - len(strings.TrimLeft(text, " \t\r\n"))
	if strings.HasPrefix(trimmed, "{") || strings.HasPrefix(trimmed, "[") {
		if cs, ok := callsIn(trimmed); ok {
			for _, c := range cs {
				c.Start, c.End = lead, lead+len(trimmed)
				calls = append(calls, c)
			}
		}
	}
	return calls
}

// findLegacy reads seed 003's "TOOL_CALL: name(key=value, ...)" and
// "TOOL_CALL: name {json}" lines.
func findLegacy(text string) []Call {
	const tag = "TOOL_CALL:"
	var calls []Call
	off := 0
	for _, line := range strings.SplitAfter(text, "\n") {
		start := off
		off += len(line)
		t := strings.TrimSpace(line)
		if !strings.HasPrefix(t, tag) {
			continue
		}
		lineStart := start + strings.Index(line, tag)
		end := start + len(strings.TrimRight(line, "\r\n"))
		rest := strings.TrimSpace(t[len(tag):])
		if k := strings.IndexAny(rest, "{("); k > 0 && rest[k] == '{' {
			calls = append(calls, Call{Name: strings.TrimSpace(rest[:k]), Arguments: strings.TrimSpace(rest[k:]), Start: lineStart, End: end})
			continue
		}
		pcs, err := parsePyCalls(rest, true)
		if err != nil || len(pcs) != 1 {
			calls = append(calls, errCall(lineStart, end, "a TOOL_CALL: line must be \"TOOL_CALL: name {json}\" or \"TOOL_CALL: name(key=value, ...)\": %s", clip(rest)))
			continue
		}
		pcs[0].Start, pcs[0].End = lineStart, end
		calls = append(calls, pcs[0])
	}
	return calls
}

type fenceBlock struct {
	body       string
	start, end int
}

// fences returns the ``` blocks whose info string is one of langs ("" for
// none).
func fences(text string, langs ...string) []fenceBlock {
	var out []fenceBlock
	for at := 0; ; {
		i := strings.Index(text[at:], "```")
		if i < 0 {
			return out
		}
		start := at + i
		nl := strings.IndexByte(text[start+3:], '\n')
		if nl < 0 {
			return out
		}
		lang := strings.TrimSpace(text[start+3 : start+3+nl])
		bodyStart := start + 3 + nl + 1
		j := strings.Index(text[bodyStart:], "```")
		if j < 0 {
			return out
		}
		end := bodyStart + j + 3
		for _, l := range langs {
			if strings.EqualFold(lang, l) {
				out = append(out, fenceBlock{body: text[bodyStart : bodyStart+j], start: start, end: end})
				break
			}
		}
		at = end
	}
}

func trimEndTokens(s string) string {
	for _, t := range endTokens {
		s = strings.ReplaceAll(s, t, "")
	}
	return s
}

// clip shortens text quoted in an error.
func clip(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > 160 {
		cut := 160
		for cut > 0 && s[cut]&0xC0 == 0x80 {
			cut--
		}
		return s[:cut] + "..."
	}
	return s
}
