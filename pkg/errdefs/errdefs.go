// Package errdefs defines the error classes of toold.
//
// Every error that ends a tool call belongs to one class, a sentinel wrapped
// with %w. pkg/service maps the classes to the stream's error codes and to
// gRPC status codes in one table. An error of no class is a bug: it becomes
// INTERNAL with a generic message for the client, and its text goes to the log.
package errdefs

import (
	"google.golang.org/grpc/codes"

	"errors"
	"fmt"
)

// The error classes. Check with errors.Is.
var (
	// ErrToolNotFound: no tool or operation has the requested name.
	ErrToolNotFound = errors.New("tool not found")
	// ErrInvalidArgument: arguments are malformed or break the schema.
	ErrInvalidArgument = errors.New("invalid arguments")
	// ErrDenied: policy refused the call; nothing was done.
	ErrDenied = errors.New("denied")
	// ErrRejected: a person refused the call; nothing was done.
	ErrRejected = errors.New("rejected by user")
	// ErrTimeout: the call ran past its timeout.
	ErrTimeout = errors.New("timeout")
	// ErrCanceled: the call was canceled.
	ErrCanceled = errors.New("canceled")
	// ErrFailed: the tool ran and could not do what was asked.
	ErrFailed = errors.New("execution failed")
	// ErrUnavailable: a dependency is unreachable; retrying may help.
	ErrUnavailable = errors.New("unavailable")
	// ErrResourceExhausted: a limit was reached.
	ErrResourceExhausted = errors.New("resource exhausted")
	// ErrInternal: a bug.
	ErrInternal = errors.New("internal error")
	// ErrDuplicateCallID: the call_id is in use by a running call.
	ErrDuplicateCallID = errors.New("duplicate call id")
	// ErrApprovalTimeout: nobody answered an approval request in time.
	ErrApprovalTimeout = errors.New("approval timeout")
	// ErrDisconnected: the stream ended under a running call.
	ErrDisconnected = errors.New("disconnected")
)

// Error is a classified error with the details a model needs to correct its
// call. Its message is written for the model.
type Error struct {
	// Class is one of the sentinels above.
	Class error
	// Msg says what went wrong and what to change.
	Msg string
	// Field is the JSON pointer of the offending argument, if any.
	Field string
	// Rule is the schema keyword or policy rule involved, if any.
	Rule string
	// Suggestions are close names, for ErrToolNotFound.
	Suggestions []string
	// Cause is the underlying error, for logs; never shown to the client
	// unless it is itself classified.
	Cause error
}

func (e *Error) Error() string { return e.Msg }

// Unwrap exposes the class (for errors.Is) and the cause.
func (e *Error) Unwrap() []error {
	if e.Cause != nil {
		return []error{e.Class, e.Cause}
	}
	return []error{e.Class}
}

// New returns an *Error of the class with a formatted message.
func New(class error, format string, args ...any) *Error {
	return &Error{Class: class, Msg: fmt.Sprintf(format, args...)}
}

// Wrap returns an *Error of the class with a message, keeping cause for logs.
func Wrap(class error, cause error, format string, args ...any) *Error {
	return &Error{Class: class, Msg: fmt.Sprintf(format, args...), Cause: cause}
}

// Failed is shorthand for an ErrFailed error: the tool ran and could not do
// what was asked, for a reason the model can act on.
func Failed(format string, args ...any) *Error {
	return New(ErrFailed, format, args...)
}

// Invalid is shorthand for an ErrInvalidArgument error about one field.
func Invalid(field, rule, format string, args ...any) *Error {
	e := New(ErrInvalidArgument, format, args...)
	e.Field, e.Rule = field, rule
	return e
}

// Table is the one table of error classes: for each, in the order Class
// checks them, its error code's name (toold.v1.ErrorCode without the
// ERROR_CODE_ prefix, as the MCP results say it) and the gRPC status code
// of an RPC that fails with it. Every adapter maps through it.
var Table = []struct {
	Class error
	Name  string
	GRPC  codes.Code
}{
	{ErrToolNotFound, "TOOL_NOT_FOUND", codes.NotFound},
	{ErrInvalidArgument, "INVALID_ARGUMENTS", codes.InvalidArgument},
	{ErrDenied, "DENIED", codes.PermissionDenied},
	{ErrRejected, "REJECTED_BY_USER", codes.PermissionDenied},
	{ErrTimeout, "TIMEOUT", codes.DeadlineExceeded},
	{ErrCanceled, "CANCELED", codes.Canceled},
	{ErrFailed, "EXECUTION_FAILED", codes.FailedPrecondition},
	{ErrUnavailable, "UNAVAILABLE", codes.Unavailable},
	{ErrResourceExhausted, "RESOURCE_EXHAUSTED", codes.ResourceExhausted},
	{ErrInternal, "INTERNAL", codes.Internal},
	{ErrDuplicateCallID, "DUPLICATE_CALL_ID", codes.AlreadyExists},
	{ErrApprovalTimeout, "APPROVAL_TIMEOUT", codes.DeadlineExceeded},
	{ErrDisconnected, "DISCONNECTED", codes.Canceled},
}

// row returns err's row of Table; INTERNAL's when err has no class.
func row(err error) int {
	internal := 0
	for i, r := range Table {
		if errors.Is(err, r.Class) {
			return i
		}
		if r.Class == ErrInternal {
			internal = i
		}
	}
	return internal
}

// Name returns the name of err's error code ("DENIED"); an error without a
// class is INTERNAL.
func Name(err error) string { return Table[row(err)].Name }

// GRPCCode returns the gRPC status code for err; an error without a class
// is codes.Internal.
func GRPCCode(err error) codes.Code { return Table[row(err)].GRPC }

// Class returns the class of err, or nil when err has none.
func Class(err error) error {
	for _, r := range Table {
		if errors.Is(err, r.Class) {
			return r.Class
		}
	}
	return nil
}

// As returns err as an *Error. An error of a class that is not an *Error is
// wrapped keeping its text; an error without a class becomes ErrInternal with
// a generic message (the original stays in Cause for the log).
func As(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	if c := Class(err); c != nil {
		return &Error{Class: c, Msg: err.Error(), Cause: err}
	}
	return &Error{Class: ErrInternal, Msg: "internal error; the details are in the toold log", Cause: err}
}

// CodeName returns the name of err's stream error code
// ("ERROR_CODE_DENIED"); an error without a class is INTERNAL.
func CodeName(err error) string { return "ERROR_CODE_" + Name(err) }
