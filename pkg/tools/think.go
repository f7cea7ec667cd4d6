package tools

import (
	"context"
	"encoding/json"
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
			Instant:     true,
		}},
	}
}

// Describe implements Tool.
func (*Think) Describe(call *Call) Effect {
	t, _ := call.Args["thought"].(string)
	return Effect{Display: "Thinking: " + Clip(t, 60)}
}

// Run implements Tool.
func (*Think) Run(_ context.Context, call *Call, _ *Sink) (*Result, error) {
	t, _ := call.Args["thought"].(string)
	return &Result{Text: t}, nil
}
