package tools

import (
	"context"
	"io"
	"time"
)

// Sink is a running call's one door to toold: everything a tool may do
// beyond computing its result goes through it. The executor makes one per
// call and passes it to Run (never nil); its methods and fields are safe
// for concurrent use by the call's goroutines.
//
// What the sink can do depends on the transport the call came on and on
// toold's configuration: each capability is a field, and a nil field is
// documented as what "unavailable" means for it. A tool checks the field; it
// never discovers a capability by asserting the sink to an interface. (The
// shape is os/exec's Cmd: one concrete type, its optional parts fields.)
//
// Progress and output may block while the client reads slowly
// (backpressure); they return an error once the call's client is gone, and
// the tool should then stop.
type Sink struct {
	// ProgressFunc delivers a status line, a fraction (0 <= f <= 1, or
	// negative when unknown) and, when not nil, a JSON object a client can
	// draw (JSON types: string, float64 or json.Number, bool, nil, []any,
	// map[string]any). Nil: nobody watches; progress is dropped. Tools call
	// Progress and ProgressData.
	ProgressFunc func(msg string, fraction float64, data map[string]any) error
	// OutputFunc delivers bytes of the call's output stream (p may be
	// reused once it returns). Nil: nobody reads output; it is dropped.
	// Tools call Output.
	OutputFunc func(stream Stream, p []byte) error
	// AdoptFunc delivers bytes of the call's output stream like OutputFunc
	// but takes p, a buffer from OutputBuffer: the sink keeps it (as an
	// event's data, no copy) and frees it when done, also when it fails.
	// Nil: Adopt copies through OutputFunc and frees p. Tools call Adopt.
	AdoptFunc func(stream Stream, p []byte) error
	// StartedFunc says the call's process runs now, with that pid (only the
	// first counts; see ProcessStarter). Nil: nothing to report to. Tools
	// call Started.
	StartedFunc func(pid int)
	// Stdin returns the call's standard input as the client sends it:
	// Read returns io.EOF once the client closed it and an error once the
	// call ends; Close stops reading and discards what comes after. Nil:
	// the client cannot send input (an MCP client), and a call that needs
	// it must be refused.
	Stdin func() io.ReadCloser
	// Ask asks the person a question and blocks until they answer or ctx
	// ends. Nil: nobody can answer questions on this connection.
	Ask func(ctx context.Context, q Question) (string, error)
	// Grant makes a grant in the call's conversation on the executor's one
	// path for grants (recorded, audited and traced as an approval's), and
	// returns its id. Nil: this toold keeps no grants.
	Grant func(g GrantRequest) (id string, err error)
	// Authorize judges a further effect the running call would have (the
	// host a redirect leads to), on the executor's one authorize path: the
	// stream's approval mode, the policy, a person asked when policy says
	// ask, a span and an audit record. It returns nil when the effect is
	// allowed, else an errdefs error for the model (DENIED, REJECTED_BY_USER,
	// …). Nil: nothing can authorize further effects; a tool must not have
	// them.
	Authorize func(ctx context.Context, effect Effect) error
}

// Progress reports a status line and, when known (0 <= fraction <= 1), how
// much is done; pass a negative fraction when unknown.
func (s *Sink) Progress(msg string, fraction float64) error {
	if s == nil || s.ProgressFunc == nil {
		return nil
	}
	return s.ProgressFunc(msg, fraction, nil)
}

// ProgressData reports a status line with a JSON object a client can draw
// (the whole todo list of manage_todos).
func (s *Sink) ProgressData(msg string, data map[string]any) error {
	if s == nil || s.ProgressFunc == nil {
		return nil
	}
	return s.ProgressFunc(msg, -1, data)
}

// Output appends bytes of the call's output stream. p may be reused by the
// caller after Output returns.
func (s *Sink) Output(stream Stream, p []byte) error {
	if s == nil || s.OutputFunc == nil {
		return nil
	}
	return s.OutputFunc(stream, p)
}

// Adopt appends p, a buffer from OutputBuffer, to the call's output stream
// and takes it: the caller must not use p after the call, whatever it
// returns. A tool reading large output reads into a fresh OutputBuffer for
// each piece and adopts it, so the piece is not copied again on its way
// to the client.
func (s *Sink) Adopt(stream Stream, p []byte) error {
	if s != nil && s.AdoptFunc != nil {
		return s.AdoptFunc(stream, p)
	}
	err := s.Output(stream, p)
	FreeBuffer(p)
	return err
}

// Started reports the call's started process (see ProcessStarter).
func (s *Sink) Started(pid int) {
	if s != nil && s.StartedFunc != nil {
		s.StartedFunc(pid)
	}
}

// Question is something a tool asks the person (user_collaboration).
type Question struct {
	Prompt  string
	Choices []string
	// Approval is true when an approving answer grants AuthorizeOperation
	// ("tool.operation") for the conversation.
	Approval           bool
	AuthorizeOperation string
	// AuthorizeArguments is the canonical JSON of the exact arguments of the
	// call an approving answer grants.
	AuthorizeArguments string
}

// GrantRequest is a grant a tool asks the executor to make (Sink.Grant):
// the calls it lets run without asking, in the call's conversation.
type GrantRequest struct {
	// Tool and Operation name what the grant covers; Arguments, when set,
	// narrows it to a call with exactly these arguments (canonical JSON).
	Tool, Operation, Arguments string
	// Description says in words what the grant allows.
	Description string
	// Once makes the grant cover one call; TTL is how long it lasts.
	Once bool
	TTL  time.Duration
	// By names who or what granted it ("user_collaboration").
	By string
}

// Use is a file operation about to touch a path, checked at use (see
// UseChecker): the path as the call named it and as it resolves now.
type Use struct {
	// Tool, Operation and Args are the call's.
	Tool, Operation string
	Args            map[string]any
	// Given is the path as the call named it (Effect.Reads or
	// Effect.Writes), which the decision judged; empty when the call did
	// not name it (a file a pattern matched, or a walk found).
	Given string
	// Abs is where the path resolves now: absolute, symlinks resolved.
	Abs string
	// Write is true when the operation changes the path.
	Write bool
}

// Opened is the status of a file an operation opened.
type Opened struct {
	Dev, Ino, Nlink uint64
	// Regular reports a regular file.
	Regular bool
	// Ctime is the file's status change time.
	Ctime time.Time
}

// UseChecker checks at use what a file operation touches: the port the
// file tools consume, implemented by the policy (pkg/authz). Both methods
// are safe for concurrent use; they return nil or an ErrDenied error for
// the model.
type UseChecker interface {
	CheckUse(u *Use) error
	CheckOpened(u *Use, o Opened) error
}

// GitNamed reports the workspace paths that a person's git, outside any
// sandbox, runs or reads as its own: the submodules' git directories and
// .git files (found from the repositories' indexes, wherever they are),
// and the work-tree files and directories a repository's configuration
// names as programs, hooks or included configuration (core.hooksPath, a
// filter's or textconv's script, core.fsmonitor, core.sshCommand…). The
// port the file tools consume (they refuse to change what it names, as
// the sandbox makes it read-only for commands), implemented by the
// terminal manager, which computes the same set for the sandbox's
// read-only binds. GitNamedPaths is safe for concurrent use and returns
// absolute paths, some of which may not exist yet; nil when the operator
// lets commands write git directories (terminal.git_writable).
type GitNamed interface {
	GitNamedPaths() []string
}
