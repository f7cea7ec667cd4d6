// Package collab is the user_collaboration tool: the model asks the person
// a question through the client, in-band on the stream, and gets the answer.
package collab

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/tools"
)

// UserCollaboration asks the person a question. When the question asks for
// approval of one exact call (authorize_operation "tool.operation" with its
// authorize_arguments) and the answer is a plain yes, it records a one-time
// grant bound to that call in the conversation: the next call of that
// operation with exactly those arguments runs without asking (unless a part
// of it asks in every mode), and consumes the grant. The question shows the
// person the call exactly.
type UserCollaboration struct {
	// TTL bounds a grant's life (default 5 min).
	TTL time.Duration
}

var _ tools.Tool = (*UserCollaboration)(nil)

var schema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "prompt": {"type": "string", "minLength": 1, "description": "The question for the person. Say what you want to do and why."},
    "choices": {"type": "array", "items": {"type": "string"}, "maxItems": 10, "description": "Suggested answers, if the question has a few."},
    "require_approval": {"type": "boolean", "description": "True when you are asking permission; the answer is then judged as approve or reject."},
    "authorize_operation": {"type": "string", "pattern": "^[A-Za-z0-9_-]+(\\.[A-Za-z0-9_-]+)?$", "description": "With require_approval: the operation of the one call an approving answer lets you run once, as tool.operation (e.g. terminal_operations.run_command)."},
    "authorize_arguments": {"type": "object", "description": "With authorize_operation: the exact arguments of that call. The approval covers only a call with exactly these arguments, once."}
  },
  "required": ["prompt"],
  "additionalProperties": false
}`)

// Spec implements tools.Tool.
func (*UserCollaboration) Spec() tools.Spec {
	return tools.Spec{
		Name:        "user_collaboration",
		Aliases:     []string{"ask_user"},
		Description: "Ask the person a question and wait for the answer: to clarify a task, choose between options, or ask permission for an operation policy would otherwise refuse or ask about.",
		Source:      "builtin",
		Operations: []tools.OperationSpec{{
			Name:        "user_collaboration",
			Description: "Ask the person a question.",
			Risk:        tools.RiskLow,
			Schema:      schema,
		}},
	}
}

type args struct {
	Prompt             string         `json:"prompt"`
	Choices            []string       `json:"choices"`
	RequireApproval    bool           `json:"require_approval"`
	AuthorizeOperation string         `json:"authorize_operation"`
	AuthorizeArguments map[string]any `json:"authorize_arguments"`
}

// Describe implements tools.Tool.
func (*UserCollaboration) Describe(call *tools.Call) tools.Effect {
	p, _ := call.Args["prompt"].(string)
	return tools.Effect{Display: "Asking you: " + tools.Clip(p, 60)}
}

var opPattern = regexp.MustCompile(`^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)?$`)

// Run implements tools.Tool.
func (u *UserCollaboration) Run(ctx context.Context, call *tools.Call, sink *tools.Sink) (*tools.Result, error) {
	var a args
	if err := call.Bind(&a); err != nil {
		return nil, err
	}
	if sink == nil || sink.Ask == nil {
		return nil, errdefs.New(errdefs.ErrUnavailable, "no person can answer questions on this connection; continue without asking or stop and report")
	}
	if a.AuthorizeOperation != "" {
		if !a.RequireApproval {
			return nil, errdefs.Invalid("/authorize_operation", "dependentRequired", "authorize_operation needs require_approval: true")
		}
		if sink.Grant == nil {
			return nil, errdefs.Invalid("/authorize_operation", "unsupported", "this toold keeps no grants; ask without authorize_operation")
		}
		if !opPattern.MatchString(a.AuthorizeOperation) {
			return nil, errdefs.Invalid("/authorize_operation", "pattern", "authorize_operation must be tool.operation, e.g. file_operations.write_file")
		}
		if a.AuthorizeArguments == nil {
			return nil, errdefs.Invalid("/authorize_arguments", "dependentRequired", "authorize_operation needs authorize_arguments: the exact arguments of the call you ask to run, so the person approves exactly that call")
		}
	} else if a.AuthorizeArguments != nil {
		return nil, errdefs.Invalid("/authorize_arguments", "dependentRequired", "authorize_arguments needs authorize_operation")
	}
	argsJSON := ""
	if a.AuthorizeArguments != nil {
		b, err := json.Marshal(call.Args["authorize_arguments"])
		if err != nil {
			return nil, errdefs.Invalid("/authorize_arguments", "type", "authorize_arguments must be a JSON object")
		}
		argsJSON = string(b)
	}
	ttl := u.TTL
	if ttl <= 0 {
		ttl = 5 * time.Minute
	}
	prompt := a.Prompt
	if a.AuthorizeOperation != "" {
		// Say exactly what an approving answer grants.
		prompt += fmt.Sprintf("\n\n(Answering yes lets the agent run %s once within %s with exactly these arguments: %s. Anything else is asked again.)", a.AuthorizeOperation, ttl, argsJSON)
	}
	answer, err := sink.Ask(ctx, tools.Question{
		Prompt:             prompt,
		Choices:            a.Choices,
		Approval:           a.RequireApproval,
		AuthorizeOperation: a.AuthorizeOperation,
		AuthorizeArguments: argsJSON,
	})
	if err != nil {
		return nil, err
	}
	res := &tools.Result{Structured: map[string]any{"answer": answer}}
	if !a.RequireApproval {
		res.Text = "User response: " + answer
		return res, nil
	}
	approved, decided := judge(answer)
	res.Structured["approved"] = approved
	switch {
	case !decided:
		res.Text = "User response (neither a clear yes nor no; read it and decide): " + answer
	case !approved:
		res.Text = "The user did not approve: " + answer + "\nDo not perform the operation."
	default:
		res.Text = "The user approved: " + answer
		if a.AuthorizeOperation != "" {
			tool, op, _ := strings.Cut(a.AuthorizeOperation, ".")
			// The grant is made on the executor's path, as an approval's.
			id, err := sink.Grant(tools.GrantRequest{
				Tool: tool, Operation: op, Arguments: argsJSON,
				Description: fmt.Sprintf("%s once with exactly the arguments %s, granted through user_collaboration", a.AuthorizeOperation, tools.Clip(argsJSON, 200)),
				Once:        true, TTL: ttl, By: "user_collaboration",
			})
			if err != nil {
				return nil, err
			}
			res.Structured["grant_id"] = id
			res.Text += fmt.Sprintf("\nYou may now run %s once (within %s) with exactly the arguments you asked about; any other call is judged as usual.", a.AuthorizeOperation, ttl)
		}
	}
	return res, nil
}

var (
	yes = []string{"yes", "y", "ok", "okay", "sure", "proceed", "approve", "approved", "confirm", "go ahead", "do it", "allow"}
	no  = []string{"no", "n", "cancel", "stop", "deny", "denied", "reject", "don't", "do not", "abort", "never"}
)

// judge reads an answer as approve or reject, as seed 001 does:
// case-insensitively. A rejection may go on ("no, use make instead"); an
// approval is only a plain yes ("yes", "OK!"): "yes, but only go test"
// approves something else than what was asked, so it is undecided and
// grants nothing. An answer that is neither is undecided.
func judge(answer string) (approved, decided bool) {
	a := strings.ToLower(strings.TrimSpace(answer))
	a = strings.TrimSpace(strings.TrimRight(a, ".! "))
	for _, w := range no {
		if a == w || strings.HasPrefix(a, w+" ") || strings.HasPrefix(a, w+",") {
			return false, true
		}
	}
	if slices.Contains(yes, a) {
		return true, true
	}
	return false, false
}
