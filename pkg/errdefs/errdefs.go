// Package errdefs defines the error classes of toold.
//
// Every error that ends a tool call belongs to one class, a sentinel wrapped
// with %w. pkg/service maps the classes to the stream's error codes and to
// gRPC status codes in one table. An error of no class is a bug: it becomes
// INTERNAL with a generic message for the client, and its text goes to the log.
package errdefs

import (
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

// classes in the order Class checks them.
var classes = []error{
	ErrToolNotFound, ErrInvalidArgument, ErrDenied, ErrRejected, ErrTimeout,
	ErrCanceled, ErrFailed, ErrUnavailable, ErrResourceExhausted, ErrInternal,
	ErrDuplicateCallID, ErrApprovalTimeout, ErrDisconnected,
}

// Class returns the class of err, or nil when err has none.
func Class(err error) error {
	for _, c := range classes {
		if errors.Is(err, c) {
			return c
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

// codeNames are the stream error codes of the classes (the names of
// toold.v1.ErrorCode), for logs and spans of code that does not speak the
// wire types.
var codeNames = map[error]string{
	ErrToolNotFound:      "ERROR_CODE_TOOL_NOT_FOUND",
	ErrInvalidArgument:   "ERROR_CODE_INVALID_ARGUMENTS",
	ErrDenied:            "ERROR_CODE_DENIED",
	ErrRejected:          "ERROR_CODE_REJECTED_BY_USER",
	ErrTimeout:           "ERROR_CODE_TIMEOUT",
	ErrCanceled:          "ERROR_CODE_CANCELED",
	ErrFailed:            "ERROR_CODE_EXECUTION_FAILED",
	ErrUnavailable:       "ERROR_CODE_UNAVAILABLE",
	ErrResourceExhausted: "ERROR_CODE_RESOURCE_EXHAUSTED",
	ErrInternal:          "ERROR_CODE_INTERNAL",
	ErrDuplicateCallID:   "ERROR_CODE_DUPLICATE_CALL_ID",
	ErrApprovalTimeout:   "ERROR_CODE_APPROVAL_TIMEOUT",
	ErrDisconnected:      "ERROR_CODE_DISCONNECTED",
}

// CodeName returns the name of err's stream error code
// ("ERROR_CODE_DENIED"); an error without a class is INTERNAL.
func CodeName(err error) string {
	if c := Class(err); c != nil {
		return codeNames[c]
	}
	return codeNames[ErrInternal]
}
