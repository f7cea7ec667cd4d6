package tools

import (
	"context"
	"encoding/json"
	"unicode/utf8"
)

// Think records a thought and returns it. It lets a model reason in the open
// between tool calls without side effects; clients see the thought in the
// stream and in traces.
type Think struct{}

var _ Tool = (*Think)(nil)

var thinkSchema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "thought": {"type": "string", "description": "Your reasoning, plan or notes. It is recorded and returned unchanged."}
  },
  "required": ["thought"],
  "additionalProperties": false
}`)

// Spec implements Tool.
func (*Think) Spec() Spec {
	return Spec{
		Name:        "think",
		Description: "Think out loud: record reasoning, a plan or notes without changing anything. Returns the thought.",
		Source:      "builtin",
		Operations: []OperationSpec{{
			Name:        "think",
			Description: "Record a thought.",
			Risk:        RiskLow,
			Schema:      thinkSchema,
		}},
	}
}

// Describe implements Tool.
func (*Think) Describe(call *Call) Effect {
	t, _ := call.Args["thought"].(string)
	return Effect{Display: "Thinking: " + Preview(t, 60)}
}

// Run implements Tool.
func (*Think) Run(_ context.Context, call *Call, _ Sink) (*Result, error) {
	t, _ := call.Args["thought"].(string)
	return &Result{Text: t}, nil
}

// Preview shortens s to at most n runes for a display line, on one line.
func Preview(s string, n int) string {
	b := make([]rune, 0, min(len(s), n+1))
	for _, r := range s {
		if r == '\n' || r == '\r' || r == '\t' {
			r = ' '
		}
		b = append(b, r)
		if len(b) > n {
			break
		}
	}
	if len(b) > n || utf8.RuneCountInString(s) > n {
		return string(b[:max(n-1, 0)]) + "…"
	}
	return string(b)
}
