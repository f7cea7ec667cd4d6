// Package collab is the user_collaboration tool: the model asks the person
// a question through the client, in-band on the stream, and gets the answer.
package collab

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/toold/toold/pkg/authz"
	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/tools"
)

// UserCollaboration asks the person a question. When the question asks for
// approval of a named operation ("tool.operation") and the answer approves,
// it records a one-time grant for that operation in the conversation: the
// next matching call runs without asking, and consumes the grant.
type UserCollaboration struct {
	// Granter records grants; nil disables authorize_operation.
	Granter authz.Granter
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
    "authorize_operation": {"type": "string", "pattern": "^[A-Za-z0-9_-]+(\\.[A-Za-z0-9_-]+)?$", "description": "With require_approval: the operation an approving answer lets you run once, as tool.operation (e.g. file_operations.write_file)."}
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
	Prompt             string   `json:"prompt"`
	Choices            []string `json:"choices"`
	RequireApproval    bool     `json:"require_approval"`
	AuthorizeOperation string   `json:"authorize_operation"`
}

// Describe implements tools.Tool.
func (*UserCollaboration) Describe(call *tools.Call) tools.Effect {
	p, _ := call.Args["prompt"].(string)
	return tools.Effect{Display: "Asking you: " + tools.Preview(p, 60)}
}

var opPattern = regexp.MustCompile(`^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)?$`)

// Run implements tools.Tool.
func (u *UserCollaboration) Run(ctx context.Context, call *tools.Call, sink tools.Sink) (*tools.Result, error) {
	var a args
	if err := call.Bind(&a); err != nil {
		return nil, err
	}
	asker, ok := sink.(tools.Asker)
	if !ok {
		return nil, errdefs.New(errdefs.ErrUnavailable, "no person can answer questions on this connection; continue without asking or stop and report")
	}
	if a.AuthorizeOperation != "" {
		if !a.RequireApproval {
			return nil, errdefs.Invalid("/authorize_operation", "dependentRequired", "authorize_operation needs require_approval: true")
		}
		if u.Granter == nil {
			return nil, errdefs.Invalid("/authorize_operation", "unsupported", "this toold keeps no grants; ask without authorize_operation")
		}
		if !opPattern.MatchString(a.AuthorizeOperation) {
			return nil, errdefs.Invalid("/authorize_operation", "pattern", "authorize_operation must be tool.operation, e.g. file_operations.write_file")
		}
	}
	ttl := u.TTL
	if ttl <= 0 {
		ttl = 5 * time.Minute
	}
	prompt := a.Prompt
	if a.AuthorizeOperation != "" {
		// Say exactly what an approving answer grants.
		prompt += fmt.Sprintf("\n\n(Approving lets the agent run %s once within %s.)", a.AuthorizeOperation, ttl)
	}
	answer, err := asker.Ask(ctx, tools.Question{
		Prompt:             prompt,
		Choices:            a.Choices,
		Approval:           a.RequireApproval,
		AuthorizeOperation: a.AuthorizeOperation,
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
			g, err := u.Granter.Grant(call.ConversationID, authz.Scope{
				Tool: tool, Operation: op,
				Description: fmt.Sprintf("%s once, granted through user_collaboration", a.AuthorizeOperation),
			}, true, ttl, "user_collaboration")
			if err != nil {
				return nil, err
			}
			res.Structured["grant_id"] = g.ID
			res.Text += fmt.Sprintf("\nYou may now run %s once (within %s).", a.AuthorizeOperation, ttl)
		}
	}
	return res, nil
}

var (
	yes = []string{"yes", "y", "ok", "okay", "sure", "proceed", "approve", "approved", "confirm", "go ahead", "do it", "allow"}
	no  = []string{"no", "n", "cancel", "stop", "deny", "denied", "reject", "don't", "do not", "abort", "never"}
)

// judge reads an answer as approve or reject, as seed 001 does: by its
// first words, case-insensitively. An answer that is neither is undecided,
// and grants nothing.
func judge(answer string) (approved, decided bool) {
	a := strings.ToLower(strings.TrimSpace(answer))
	a = strings.TrimRight(a, ".!")
	match := func(words []string) bool {
		for _, w := range words {
			if a == w || strings.HasPrefix(a, w+" ") || strings.HasPrefix(a, w+",") {
				return true
			}
		}
		return false
	}
	switch {
	case match(no):
		return false, true
	case match(yes):
		return true, true
	}
	return false, false
}
