// Package tools defines what a tool is, the ordered registry that resolves a
// model's tool name to a tool and operation, and the argument pipeline that
// runs before a tool: decode, coerce by the schema, validate.
//
// Tools speak plain Go types; pkg/service converts them to and from the wire.
package tools

import (
	"context"
	"encoding/json"
	"strings"
)

// Risk is how much harm a call can do if it is wrong.
type Risk int

// Risk levels, in increasing order. RiskUnknown is treated as high by policy.
const (
	RiskUnknown Risk = iota
	RiskLow
	RiskMedium
	RiskHigh
)

func (r Risk) String() string {
	switch r {
	case RiskLow:
		return "low"
	case RiskMedium:
		return "medium"
	case RiskHigh:
		return "high"
	}
	return "unknown"
}

// Spec describes a tool.
type Spec struct {
	// Name is the tool's name; unique in a registry.
	Name string
	// Description is for the model.
	Description string
	// Operations lists what the tool does. A simple tool has exactly one
	// operation named like the tool. A consolidated tool has several; the
	// model selects one with the "operation" argument, and each is also
	// callable by its own flat name.
	Operations []OperationSpec
	// Aliases are other names that resolve to the tool.
	Aliases []string
	// Source is "builtin" or "mcp:SERVER".
	Source string
}

// Consolidated reports whether the tool routes an "operation" argument.
func (s Spec) Consolidated() bool {
	return len(s.Operations) > 1 || (len(s.Operations) == 1 && s.Operations[0].Name != s.Name)
}

// OperationSpec describes one operation.
type OperationSpec struct {
	// Name of the operation; for a simple tool, the tool's name.
	Name string
	// Description is for the model.
	Description string
	// Risk is the operation's base risk; Describe may raise it per call.
	Risk Risk
	// Schema is the JSON Schema (an object schema) of the operation's
	// arguments, without the "operation" selector.
	Schema json.RawMessage
	// Long says a call may run for minutes (a command, a project task, a
	// tool of an MCP server): MCP clients that declare the tasks extension
	// get such a call as a task they poll, answer and cancel, instead of
	// waiting on the request.
	Long bool
	// Fast says a call returns within microseconds to a few milliseconds
	// and waits on nothing outside toold — no process, no network, no
	// person, no lock another call may hold for long — and changes nothing
	// (it reads at most): think, read_file, list_dir, glob. The executor
	// runs such a call on the goroutine that received it, its events
	// leaving together with its End, and records it in the audit log
	// without waiting for the write (see docs/audit.md). A Fast call that
	// runs long anyway (a huge tree, a slow filesystem) is not wrong, only
	// slower to be cancelled: after a millisecond the stream receives on
	// another goroutine again. Say nothing (false) when unsure.
	Fast bool
	// Instant says more than Fast: Run computes its result from the call's
	// arguments alone — no I/O at all, no waiting, no lock — so it returns
	// within microseconds whatever the arguments (think). Instant implies
	// Fast. The executor then gives the call no timeout of its own: a
	// timeout could never fire before Run returned, and arming and
	// stopping its timer was a tenth of the executor's CPU on a no-op call.
	// The call's context still ends when the call is canceled or its
	// stream gives it up. Its Sink has no capabilities (every field nil:
	// progress and output are dropped, nobody can be asked): an Instant
	// operation only computes. Say nothing (false) when unsure.
	Instant bool
}

// Fast reports whether the resolved operation is Fast (see
// OperationSpec.Fast), which an Instant one is.
func (t *Target) Fast() bool {
	return t != nil && t.op != nil && (t.op.spec.Fast || t.op.spec.Instant)
}

// Instant reports whether the resolved operation is Instant (see
// OperationSpec.Instant).
func (t *Target) Instant() bool { return t != nil && t.op != nil && t.op.spec.Instant }

// Call is one resolved, validated invocation.
type Call struct {
	// ID is the client's call_id.
	ID string
	// ConversationID is the stream's conversation.
	ConversationID string
	// Tool and Operation are resolved names.
	Tool, Operation string
	// Args are the validated arguments (JSON types: string, json.Number,
	// bool, nil, []any, map[string]any), without the "operation" selector.
	Args map[string]any
	// Outside lists the absolute paths outside the workspace that policy
	// allowed this call to touch (a path equal to one of them, or below
	// one). Tools refuse every other path outside the workspace.
	Outside []string
	// Unsandboxed says a person approved running this one call's command
	// outside toold's sandbox (Effect.OutsideSandbox, approved once, for
	// exactly the command, directory and environment it was shown). Only
	// the executor sets it, after that approval; a tool runs the command
	// without the sandbox only when it is set.
	Unsandboxed bool
	// Described is what the tool's Describe recorded about the state it
	// described (a terminal session's typed but not yet submitted input),
	// so that Run can refuse when that state changed before the call ran:
	// policy judged the call on it. The executor passes the same Call to
	// Describe and Run; nothing else reads it.
	Described any
	// Judged lists paths of the call's effect (Effect.Reads, Effect.Writes)
	// that policy, when it decided the call, found plain (see JudgedPath).
	// The executor sets it from the decision (authz.Verdict.Judged), as it
	// sets Outside; empty means policy said nothing, and the tool resolves
	// every path itself.
	Judged []JudgedPath
}

// JudgedPath is a path of a call's effect that policy found plain when it
// decided the call: the path existed, inside the workspace, and was reached
// through no symlink and no "..", so that where it resolved (Abs) is the
// path as given, made absolute from the workspace directory and cleaned.
//
// A tool may take Abs for Given instead of resolving Given again only when
// it computes the same Abs lexically from Given in its own workspace, and
// opens Abs below the workspace's descriptor one component at a time
// without following any symlink. Whatever changed since the decision then
// fails the open instead of being followed: a symlink swapped in on the way
// or for the file (ELOOP), a component removed (ENOENT); a file replaced
// in place is what the checks on the opened file are for, as for a path
// resolved just before its open. What is opened is therefore the object
// policy judged, or nothing.
type JudgedPath struct {
	// Given is the path as the effect named it.
	Given string
	// Abs is where it resolved: absolute, clean, inside the workspace.
	Abs string
	// Type is its file type (syscall.S_IFMT bits) as policy found it; 0
	// when unknown. A tool refuses a special file before opening it by
	// this type, as it would by the one its own resolution found.
	Type uint32
}

// OutsideAllowed reports whether policy allowed this call to touch abs, an
// absolute, resolved path outside the workspace.
func (c *Call) OutsideAllowed(abs string) bool {
	for _, p := range c.Outside {
		if abs == p || strings.HasPrefix(abs, strings.TrimSuffix(p, "/")+"/") {
			return true
		}
	}
	return false
}

// Bind decodes the call's arguments into v (a pointer to a struct with json
// tags). Arguments are already validated, so an error here is a bug.
func (c *Call) Bind(v any) error {
	b, err := json.Marshal(c.Args)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// Effect describes what a call would do, for display and for policy.
type Effect struct {
	// Display is a short line for people ("Reading file: main.go").
	Display string
	// Risk, when set, overrides the operation's base risk for this call.
	Risk Risk
	// Reads and Writes are paths as the model gave them.
	Reads, Writes []string
	// Command is the command line a call runs, if any.
	Command string
	// Dir is the directory Command runs in, as the model gave it (relative
	// to the workspace, or absolute); empty means the workspace root.
	// Relative paths in the command line start there.
	Dir string
	// Interactive says Command is typed into an interactive shell (a
	// terminal session), where history expansion (!!), aliases and tab
	// completion change what runs; policy asks for what it cannot follow.
	Interactive bool
	// Unknown, when set, says why what Command will run cannot be fully
	// known (a terminal's earlier input that could not be followed):
	// policy asks in every mode.
	Unknown string
	// Env are the environment variables the call sets for Command
	// (run_command's env). They are part of what runs: policy judges them
	// (variables that make a shell, git, the dynamic loader or an
	// interpreter run code ask in every mode and are never covered by a
	// grant) and approvals show them.
	Env map[string]string
	// OutsideSandbox says the call asks to run Command outside toold's
	// sandbox (run_command's outside_sandbox). Policy never allows that by
	// itself: a person approves it for this one call, in every mode (see
	// Call.Unsandboxed).
	OutsideSandbox bool
	// CanLeaveSandbox says the tool runs Command outside the sandbox when
	// a person approves that (Call.Unsandboxed): run_command does; a
	// terminal session's input, typed into a sandboxed shell, cannot. Only
	// then does a command the sandbox would refuse ask to run outside it.
	CanLeaveSandbox bool
	// Hosts are the network hosts a call reaches.
	Hosts []string
}

// Stream names an output stream.
type Stream int

// Output streams.
const (
	Stdout Stream = iota + 1
	Stderr
	PTY
)

// Previewer is implemented by tools that can show what a call would change
// (a unified diff for an edit) before it runs; the preview is shown when a
// person is asked to approve the call. It must not change anything.
type Previewer interface {
	Preview(ctx context.Context, call *Call) (string, error)
}

// ProgressTimed is implemented by tools whose calls may rightly run long as
// long as they make progress (proxies such as MCP tools). For them a call's
// timeout counts time without progress or output, and the server's maximum
// timeout caps the whole call.
type ProgressTimed interface {
	ProgressResetsTimeout() bool
}

// Tool is something a model can call.
type Tool interface {
	// Spec describes the tool; it does not change after registration.
	Spec() Spec
	// Describe says what call would do. It is cheap and does no I/O beyond
	// what policy needs; the call's arguments are already validated.
	Describe(call *Call) Effect
	// Run executes the call. It stops promptly when ctx is done. A returned
	// error should be an *errdefs.Error (or wrap an errdefs class) with a
	// message for the model; anything else becomes INTERNAL.
	// The sink is the call's one door to toold (never nil): see Sink.
	Run(ctx context.Context, call *Call, sink *Sink) (*Result, error)
}

// Result is a call's outcome, shaped for the model.
type Result struct {
	// Text is what the model sees.
	Text string
	// JSON, when set, is a JSON document the model sees after Text.
	JSON json.RawMessage
	// Structured is machine-readable data for the client.
	Structured map[string]any
	// Truncation says what was cut, if anything.
	Truncation *Truncation
	// Metadata holds further facts about the call.
	Metadata map[string]any
}

// Truncation says how much of a result the model sees and how to get more.
type Truncation struct {
	ShownBytes, TotalBytes uint64
	ShownItems, TotalItems uint64
	// Continuation tells the model how to read on.
	Continuation string
}

// Limits are the shaping limits for results the model sees. Zero values mean
// the defaults from DefaultLimits.
type Limits struct {
	// ReadBytes caps the bytes of file content one read_file returns.
	ReadBytes int
	// ReadLines caps the lines one read_file returns when no limit is given.
	ReadLines int
	// LineChars caps the characters of one line shown.
	LineChars int
	// ListItems caps entries of a directory listing or glob.
	ListItems int
	// SearchMatches caps matches of a search.
	SearchMatches int
	// OutputBytes caps command output shown to the model (head + tail).
	OutputBytes int
}

// DefaultLimits are the limits used where a Limits field is zero.
var DefaultLimits = Limits{
	ReadBytes:     256 << 10,
	ReadLines:     2000,
	LineChars:     2000,
	ListItems:     1000,
	SearchMatches: 200,
	OutputBytes:   32 << 10,
}

// WithDefaults returns l with zero fields replaced by DefaultLimits.
func (l Limits) WithDefaults() Limits {
	d := DefaultLimits
	if l.ReadBytes > 0 {
		d.ReadBytes = l.ReadBytes
	}
	if l.ReadLines > 0 {
		d.ReadLines = l.ReadLines
	}
	if l.LineChars > 0 {
		d.LineChars = l.LineChars
	}
	if l.ListItems > 0 {
		d.ListItems = l.ListItems
	}
	if l.SearchMatches > 0 {
		d.SearchMatches = l.SearchMatches
	}
	if l.OutputBytes > 0 {
		d.OutputBytes = l.OutputBytes
	}
	return d
}

// ProcessStarter is implemented by tools some of whose calls start a
// process. For a call it says true for, the executor does not send
// Executing before Run: the tool reports the process once started (see
// Sink.Started), and Executing carries its pid.
type ProcessStarter interface {
	StartsProcess(call *Call) bool
}
