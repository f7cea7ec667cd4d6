// Package fileops implements file_operations, the consolidated built-in tool
// that reads and searches the files of the workspace: read_file, list_dir,
// glob and grep_search.
//
// Every path an operation touches is confined to the workspace. A path from
// the model goes through workspace.Rel (lexical check), and the first open
// goes through the workspace's os.Root, which refuses "..", absolute paths and
// symlinks that lead outside. The directory walks of list_dir, glob and
// grep_search then descend from that directory by opening one name at a time
// relative to an open directory descriptor, never following a symlink (see
// walk.go), so they cannot leave the tree either.
//
// Results are shaped for a model: bounded by tools.Limits, with a note saying
// what was cut and how to get the rest, and with tools.Truncation set.
//
// What the walks skip, chosen to match ripgrep's and fd's defaults so that
// results compare with theirs: entries named .git always; entries matched by
// a .gitignore file between the workspace root and the entry (nested files
// too; applied whether or not the workspace is a git checkout, and without
// git's global excludes or .git/info/exclude); hidden entries (names starting
// with ".") in glob and grep_search unless the pattern names one, and never
// in list_dir, which shows what is there; binary files (a NUL byte) in
// grep_search. Symlinks are listed but never followed. A path the model gives
// explicitly is searched even when it is hidden or ignored.
//
// Orders: glob and grep_search sort by path (bytewise), grep_search then by
// line; list_dir puts directories first, then other entries, each group in
// bytewise name order.
//
// Adding an operation is a new file that defines an *operation and one entry
// in the operations table below.
package fileops

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strconv"

	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/tools"
	"github.com/toold/toold/pkg/workspace"
)

// ToolName is the name of the tool.
const ToolName = "file_operations"

// FileOperations is the file_operations tool. It is safe for concurrent use:
// calls share nothing but the workspace, which is itself safe for concurrent
// use.
type FileOperations struct {
	ws     *workspace.Workspace
	limits tools.Limits
	spec   tools.Spec
	ops    map[string]*operation
}

var _ tools.Tool = (*FileOperations)(nil)

// operation is one operation of FileOperations.
type operation struct {
	name, description string
	risk              tools.Risk
	// schema returns the JSON Schema (an object schema) of the arguments;
	// it may quote the tool's limits, which are fixed when the tool is made.
	schema func(l tools.Limits) string
	// describe says what a call would read; it does no I/O.
	describe func(f *FileOperations, call *tools.Call) tools.Effect
	// run executes a call; it returns an error of an errdefs class.
	run func(f *FileOperations, ctx context.Context, call *tools.Call, sink tools.Sink) (*tools.Result, error)
}

// operations lists the operations in the order the model sees them. Keep the
// order stable: it is part of the tool's schema, which clients cache.
var operations = []*operation{
	readFileOp,
	listDirOp,
	globOp,
	grepSearchOp,
}

const toolDescription = "Read and search the files of the workspace. " +
	"read_file reads a text file with line numbers (page with offset and limit); " +
	"list_dir lists a directory, optionally as a tree; " +
	"glob finds files by a path pattern such as **/*_test.go; " +
	"grep_search searches file contents with a regular expression, like ripgrep. " +
	"Paths are relative to the workspace root (absolute paths inside the workspace also work); " +
	"nothing outside the workspace can be read. " +
	"list_dir, glob and grep_search skip .git and files matched by .gitignore; " +
	"glob and grep_search also skip hidden files unless the pattern or path names them."

// New returns the tool for the workspace ws. Zero fields of limits take the
// values of tools.DefaultLimits. ws stays owned by the caller, who must keep it
// open while the tool is in use.
func New(ws *workspace.Workspace, limits tools.Limits) *FileOperations {
	f := &FileOperations{
		ws:     ws,
		limits: limits.WithDefaults(),
		ops:    make(map[string]*operation, len(operations)),
	}
	specs := make([]tools.OperationSpec, 0, len(operations))
	for _, op := range operations {
		specs = append(specs, tools.OperationSpec{
			Name:        op.name,
			Description: op.description,
			Risk:        op.risk,
			Schema:      json.RawMessage(op.schema(f.limits)),
		})
		f.ops[op.name] = op
	}
	f.spec = tools.Spec{
		Name:        ToolName,
		Description: toolDescription,
		Operations:  specs,
		Source:      "builtin",
	}
	return f
}

// Spec implements tools.Tool. The returned value shares its schemas with the
// tool; callers must not modify them.
func (f *FileOperations) Spec() tools.Spec { return f.spec }

// Describe implements tools.Tool: a display line ("Reading file: main.go")
// and the paths the call reads, as the model gave them. An unknown operation
// gets a generic description; Run reports the error.
func (f *FileOperations) Describe(call *tools.Call) tools.Effect {
	op, ok := f.ops[call.Operation]
	if !ok {
		return tools.Effect{Display: "File operation: " + preview(call.Operation)}
	}
	return op.describe(f, call)
}

// Run implements tools.Tool. It returns promptly with an ErrCanceled (or
// ErrTimeout) error when ctx is done; other errors are ErrInvalidArgument,
// ErrDenied (a path outside the workspace) or ErrFailed, with a message for
// the model. sink may be nil.
func (f *FileOperations) Run(ctx context.Context, call *tools.Call, sink tools.Sink) (*tools.Result, error) {
	op, ok := f.ops[call.Operation]
	if !ok {
		return nil, &errdefs.Error{
			Class: errdefs.ErrToolNotFound,
			Msg:   fmt.Sprintf("%s has no operation %q; use one of read_file, list_dir, glob, grep_search", ToolName, call.Operation),
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, ctxError(ctx, call.Operation)
	}
	return op.run(f, ctx, call, sink)
}

// bind decodes the call's arguments into v, turning a failure into an
// ErrInvalidArgument error.
func bind(call *tools.Call, v any) error {
	if err := call.Bind(v); err != nil {
		return errdefs.Wrap(errdefs.ErrInvalidArgument, err, "arguments of %s do not fit its schema: %v", call.Operation, err)
	}
	return nil
}

// intArg is an integer argument. It accepts any JSON number with a zero
// fraction (JSON Schema's "integer" allows 10.0) and saturates at the int
// range; null leaves it unchanged.
type intArg int

// UnmarshalJSON implements json.Unmarshaler.
func (n *intArg) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	f, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		var s string // a numeric string the registry did not coerce
		if json.Unmarshal(b, &s) != nil {
			return fmt.Errorf("%s is not a number", b)
		}
		if f, err = strconv.ParseFloat(s, 64); err != nil {
			return fmt.Errorf("%q is not a number", s)
		}
	}
	if f != math.Trunc(f) {
		return fmt.Errorf("%s is not an integer", b)
	}
	f = math.Max(math.Min(f, math.MaxInt32), math.MinInt32)
	*n = intArg(f)
	return nil
}

// orDefault returns the path argument, "." when empty.
func orDefault(p string) string {
	if p == "" {
		return "."
	}
	return p
}

// preview shortens s for a display line.
func preview(s string) string { return tools.Preview(s, 60) }

// ctxError is the error of a call stopped by ctx: ErrTimeout for a deadline,
// ErrCanceled otherwise.
func ctxError(ctx context.Context, op string) error {
	err := context.Cause(ctx)
	if err == nil {
		err = ctx.Err()
	}
	if ctx.Err() == context.DeadlineExceeded {
		return errdefs.Wrap(errdefs.ErrTimeout, err, "%s timed out", op)
	}
	return errdefs.Wrap(errdefs.ErrCanceled, err, "%s was canceled", op)
}
