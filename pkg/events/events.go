// Package events holds the events of tool calls and the per-conversation
// event log that orders them (see Log).
//
// Many producers (one goroutine per running call) append to a conversation's
// Log; one reader at a time (the attached stream's sender) reads it in
// order. Every event gets its seq when it is appended, so a stream that
// drops can be resumed by another reading on after the last seq it got.
// Memory stays bounded: unread events by MaxUnread events plus
// MaxUnreadOutput bytes (producers wait beyond that), read ones by the tail.
package events

import (
	"time"

	"github.com/toold/toold/pkg/authz"
	"github.com/toold/toold/pkg/tools"
)

// Event is one server event. Exactly one payload field is set.
type Event struct {
	// CallID is empty for stream-level events.
	CallID string
	// Seq is the event's position in its conversation's log, assigned when
	// it is appended; zero for stream-level events.
	Seq uint64
	// Time is when the event was produced.
	Time time.Time

	Welcome   *Welcome
	Start     *Start
	Approval  *ApprovalRequest
	Question  *Question
	Executing *Executing
	Progress  *Progress
	End       *End
	Keepalive *Keepalive
	Rejected  *Rejected
}

// Welcome answers a stream's Hello.
type Welcome struct {
	ConversationID string
	// ConversationSecret is the secret a stream joining the conversation
	// presents (see Hello.conversation_secret).
	ConversationSecret string
	Mode               authz.Mode
	ServerVersion      string
	Workspace          string
	MaxTimeout         time.Duration
	// StreamID names the stream's session, for resuming it.
	StreamID string
	// Resumed says the stream resumed a dropped one; ReplayFrom is the
	// first seq it reads again.
	Resumed    bool
	ReplayFrom uint64
}

// Start is the first event of a call.
type Start struct {
	RequestedName   string
	Tool, Operation string
	Display         string
	Risk            tools.Risk
	TraceID         string
}

// ApprovalRequest asks the client to approve a call.
type ApprovalRequest struct {
	ApprovalID string
	// Effect is what would happen; Summary says it in one line.
	Effect  tools.Effect
	Summary string
	// Diff is a unified diff preview for edits.
	Diff string
	// Commands are the parsed parts of a command line.
	Commands []authz.ParsedCommand
	// Reason says why policy asks; Rule names the rule that asked.
	Reason, Rule string
	Risk         tools.Risk
	// Scopes are the approvals offered; the first is always once.
	Scopes []authz.Scope
	// ExpiresAt is zero when the approval waits indefinitely.
	ExpiresAt time.Time
	// OutsideSandbox makes this an approval of its own kind: approving
	// runs this one call's command (Effect.Command, Effect.Dir,
	// Effect.Env, exactly as shown) outside toold's sandbox.
	OutsideSandbox bool
}

// Question asks the person something on behalf of a tool.
type Question struct {
	RequestID          string
	Prompt             string
	Choices            []string
	Approval           bool
	AuthorizeOperation string
	AuthorizeArguments string
}

// Executing says the call runs now.
type Executing struct {
	PID int
}

// Progress is a status update or an output chunk.
type Progress struct {
	Message string
	// Fraction is in [0,1] when known, negative when not.
	Fraction float64
	// Output is set for output chunks.
	Output *Chunk
	// Data, when set, is structured state for the client (see
	// tools.Sink.ProgressData); never set with Output.
	Data map[string]any
}

// Chunk is a piece of a call's output stream.
type Chunk struct {
	Stream tools.Stream
	Data   []byte
	// Offset of Data[0] within the call's stream.
	Offset uint64
}

// End is the last event of a call. Err is nil on success. A failed call
// may carry a Result too: what the tool produced before or while failing
// (a command's output next to its timeout, an MCP tool's text next to its
// isError), which the client gets beside the error. A call that failed
// before it ran (bad arguments, denied) has only Err.
type End struct {
	Result    *tools.Result
	Err       error
	Duration  time.Duration
	Coercions []tools.Coercion
	// Metadata is merged into the result's metadata.
	Metadata map[string]any
}

// Keepalive keeps an idle stream open.
type Keepalive struct{}

// Rejected reports a client message the server could not act on.
type Rejected struct {
	Err         error
	ReferenceID string
}
