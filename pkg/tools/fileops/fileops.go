// Package fileops implements file_operations, the consolidated built-in tool
// that reads, searches and changes the files of the workspace: read_file,
// read_many_files, list_dir, glob and grep_search read; write_file,
// create_file, edit_file (and its alias replace_string), replace_lines, delete_path,
// move_path, make_dir, apply_patch (codex's patch format, apply_patch.go)
// and str_replace_based_edit_tool (Anthropic's text editor,
// text_editor.go) change. The write side is described in place.go
// (how paths are confined), atomic.go (how files are written) and locks.go
// (which calls wait for which).
//
// Every path an operation touches is inside the workspace, or outside it
// where policy allowed this call (tools.Call.Outside). A path from the model
// is resolved as the kernel will resolve it (workspace.Resolve), refused with
// ErrDenied when it lands outside without that allowance, and opened through
// a root (workspace.RootFor) whose final component is never followed if it
// turned into a symlink after the check. The directory walks of list_dir,
// glob and grep_search then descend from that directory by opening one name
// at a time relative to an open directory descriptor, never following a
// symlink (see walk.go), so they cannot leave the tree either. read_target.go
// describes the read side, place.go the write side. Results name entries
// inside the workspace by workspace-relative paths, and entries outside it
// by absolute paths.
//
// Results are shaped for a model: bounded by tools.Limits, with a note saying
// what was cut and how to get the rest, and with tools.Truncation set.
//
// What the walks skip, chosen to match ripgrep's and fd's defaults so that
// results compare with theirs: entries named .git always; entries matched by
// a .gitignore file between the workspace root and the entry (nested files
// too; applied whether or not the workspace is a git checkout, and without
// git's global excludes or .git/info/exclude; a walk of a directory outside
// the workspace applies the .gitignore files from that directory down, and
// none of the workspace's); hidden entries (names starting with ".") in
// glob and grep_search unless the pattern names one, and never in list_dir,
// which shows what is there; binary files (a NUL byte) in grep_search. Symlinks are listed but never followed. A path the model gives
// explicitly is searched even when it is hidden or ignored.
//
// Orders: glob and grep_search sort by path (bytewise), grep_search then by
// line; list_dir puts directories first, then other entries, each group in
// bytewise name order.
//
// Sensitive files. Options.Sensitive, when set, names files that policy
// guards (.env, keys): the walks of list_dir, glob, grep_search and
// read_many_files leave them out, and say how many they withheld, so that a
// search of the tree cannot read what a read of the file would be denied;
// walks outside the workspace too. A path the model names itself is not
// filtered: policy judges it, and Options.Guard judges it again when the
// operation runs, on what it resolves to then and on the file it opened
// (atuse.go).
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
	"strings"

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
	ws        *workspace.Workspace
	limits    tools.Limits
	sensitive func(abs string) bool
	guard     tools.UseChecker
	// gitNamed names what a person's git runs from the work tree (nil: nothing).
	gitNamed tools.GitNamed
	// undecided marks the read_file that read_many_files runs for a file
	// one of its patterns matched: policy did not judge that path itself.
	undecided bool
	// parent is the read_many_files call such a read_file is part of; the
	// guard judges the parent's tool, operation and arguments.
	parent *tools.Call
	spec   tools.Spec
	ops    map[string]*operation
	locks  pathLocks
	// journalDir holds apply_patch's journals ("": none).
	journalDir string
	// history is the undo history of str_replace_based_edit_tool.
	history editHistory
	// readLocated and fileSearched, when set (by a test, on its own tool),
	// are called when a read has resolved its path, and by the workers of
	// a search after each file.
	readLocated  func(loc workspace.Location)
	fileSearched func()
}

var (
	_ tools.Tool      = (*FileOperations)(nil)
	_ tools.Previewer = (*FileOperations)(nil)
)

// Options are the optional settings of the tool.
type Options struct {
	// Sensitive, when set, reports whether the file or directory at abs (an
	// absolute path) is sensitive: walks over the tree (list_dir, glob,
	// grep_search, read_many_files patterns) skip it, and a directory's
	// whole subtree, and report how many entries they withheld. It is called
	// concurrently, once per entry walked, so it must be safe for concurrent
	// use and cheap. Paths the model names explicitly are not filtered;
	// policy judges those. The daemon passes the policy engine's matcher.
	Sensitive func(abs string) bool
	// Guard, when set, is asked when a path is used, not only when the call
	// is decided (see "Checked at use" in pkg/authz): every operation asks
	// it about the path it is about to open or change, resolved again just
	// before, and about each regular file it opened that has more than one
	// hard link. A refusal fails the operation with its ErrDenied error
	// before anything is read or changed. The daemon passes the policy
	// engine.
	Guard tools.UseChecker
	// JournalDir is where apply_patch writes the journal that makes a
	// patch all or nothing across a crash (journal.go; RecoverJournals
	// rolls back what a killed toold left there). Empty: patches are not
	// journaled. The daemon passes a directory in its state directory.
	JournalDir string
	// GitNamed, when set, names the paths a person's git runs or reads
	// from the work tree beside its git directories (submodules' .git,
	// hooks directories, filter scripts...): every change that would
	// create, change, delete or rename onto or over one of them, or
	// anything below one, is refused with ErrDenied (gitnamed.go). The
	// daemon passes the terminal manager, whose sandbox makes the same
	// paths read-only for commands.
	GitNamed tools.GitNamed
}

// operation is one operation of FileOperations.
type operation struct {
	name, description string
	risk              tools.Risk
	// fast marks a read that returns promptly (tools.OperationSpec.Fast).
	fast bool
	// schema returns the JSON Schema (an object schema) of the arguments;
	// it may quote the tool's limits, which are fixed when the tool is made.
	schema func(l tools.Limits) string
	// describe says what a call would read; it does no I/O.
	describe func(f *FileOperations, call *tools.Call) tools.Effect
	// run executes a call; it returns an error of an errdefs class.
	run func(f *FileOperations, ctx context.Context, call *tools.Call, sink *tools.Sink) (*tools.Result, error)
	// preview, when set, says what a call would change, changing nothing.
	preview func(f *FileOperations, ctx context.Context, call *tools.Call) (string, error)
}

// operations lists the operations in the order the model sees them. Keep the
// order stable: it is part of the tool's schema, which clients cache.
var operations = []*operation{
	readFileOp,
	listDirOp,
	globOp,
	grepSearchOp,
	readManyFilesOp,
	writeFileOp,
	createFileOp,
	editFileOp,
	replaceStringOp,
	replaceLinesOp,
	deletePathOp,
	movePathOp,
	makeDirOp,
	applyPatchOp,
	textEditorOp,
}

const toolDescription = "Read, search and change the files of the workspace. " +
	"read_file reads a text file with line numbers (page with offset and limit), read_many_files several at once; " +
	"list_dir lists a directory, optionally as a tree; " +
	"glob finds files by a path pattern such as **/*_test.go; " +
	"grep_search searches file contents with a regular expression, like ripgrep; " +
	"write_file writes a whole file, create_file creates a new one without overwriting, " +
	"edit_file replaces an exact string in a file (replace_string is the same), replace_lines a range of lines by number; " +
	"delete_path deletes a file or directory, move_path moves or renames one, make_dir creates a directory; " +
	"apply_patch applies a patch in codex's *** Begin Patch format to several files at once, all or nothing; " +
	"str_replace_based_edit_tool takes Anthropic's text editor commands (view, create, str_replace, insert, undo_edit). " +
	"Paths are relative to the workspace root (absolute paths inside the workspace also work); " +
	"paths outside the workspace are refused unless policy allows them. " +
	"Writes are atomic and calls that change the same file run one after the other. " +
	"list_dir, glob and grep_search skip .git and files matched by .gitignore; " +
	"glob and grep_search also skip hidden files unless the pattern or path names them."

// New returns the tool for the workspace ws. Zero fields of limits take the
// values of tools.DefaultLimits; opts may be zero. ws stays owned by the
// caller, who must keep it open while the tool is in use.
func New(ws *workspace.Workspace, limits tools.Limits, opts Options) *FileOperations {
	f := &FileOperations{
		ws:         ws,
		limits:     limits.WithDefaults(),
		sensitive:  opts.Sensitive,
		guard:      opts.Guard,
		gitNamed:   opts.GitNamed,
		journalDir: opts.JournalDir,
		ops:        make(map[string]*operation, len(operations)),
	}
	specs := make([]tools.OperationSpec, 0, len(operations))
	for _, op := range operations {
		specs = append(specs, tools.OperationSpec{
			Name:        op.name,
			Description: op.description,
			Risk:        op.risk,
			Schema:      json.RawMessage(op.schema(f.limits)),
			Fast:        op.fast,
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
// and the paths the call reads and writes (for move_path both source and
// destination), as the model gave them. An unknown operation gets a generic
// description; Run reports the error.
func (f *FileOperations) Describe(call *tools.Call) tools.Effect {
	op, ok := f.ops[call.Operation]
	if !ok {
		return tools.Effect{Display: "File operation: " + clip(call.Operation)}
	}
	return op.describe(f, call)
}

// Run implements tools.Tool. It returns promptly with an ErrCanceled (or
// ErrTimeout) error when ctx is done, also while it waits for another call
// that changes the same path; other errors are ErrInvalidArgument,
// ErrDenied (a path outside the workspace that call.Outside does not allow)
// or ErrFailed, with a message for the model. sink may be nil.
func (f *FileOperations) Run(ctx context.Context, call *tools.Call, sink *tools.Sink) (*tools.Result, error) {
	op, err := f.operation(call)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, ctxError(ctx, call.Operation)
	}
	res, err := op.run(f, ctx, call, sink)
	return res, f.explainMissing(call, err)
}

// Preview implements tools.Previewer: for write_file, create_file,
// edit_file and replace_string a unified diff of the change, for
// delete_path, move_path and make_dir a description of what would go or
// move; "" for the operations that change nothing. It changes nothing. It
// returns the error Run would return for a call that cannot succeed (an
// old_string that is not in the file, a path that does not exist), so that
// nobody is asked to approve it.
func (f *FileOperations) Preview(ctx context.Context, call *tools.Call) (string, error) {
	op, err := f.operation(call)
	if err != nil || op.preview == nil {
		return "", err
	}
	if err := ctx.Err(); err != nil {
		return "", ctxError(ctx, call.Operation)
	}
	return op.preview(f, ctx, call)
}

func (f *FileOperations) operation(call *tools.Call) (*operation, error) {
	op, ok := f.ops[call.Operation]
	if !ok {
		names := make([]string, len(operations))
		for i, o := range operations {
			names[i] = o.name
		}
		return nil, &errdefs.Error{
			Class: errdefs.ErrToolNotFound,
			Msg:   fmt.Sprintf("%s has no operation %q; use one of %s", ToolName, call.Operation, strings.Join(names, ", ")),
		}
	}
	return op, nil
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

// set sets n from v, a value of a decoded call's arguments, as
// UnmarshalJSON would from v's JSON: nil leaves n unchanged; an integral
// json.Number, float64 or int is taken, saturated. It returns false, n
// unchanged, for anything else (a string, a fraction, an invalid number),
// which the caller leaves to the JSON decoder and its errors.
func (n *intArg) set(v any) bool {
	var f float64
	switch x := v.(type) {
	case nil:
		return true
	case json.Number:
		if x == "" || (x[0] != '-' && (x[0] < '0' || x[0] > '9')) {
			return false
		}
		var err error
		if f, err = strconv.ParseFloat(string(x), 64); err != nil {
			return false
		}
	case float64:
		f = x
	case int:
		f = float64(x)
	default:
		return false
	}
	if math.IsInf(f, 0) || math.IsNaN(f) || f != math.Trunc(f) {
		return false
	}
	*n = intArg(math.Max(math.Min(f, math.MaxInt32), math.MinInt32))
	return true
}

// orDefault returns the path argument, "." when empty.
func orDefault(p string) string {
	if p == "" {
		return "."
	}
	return p
}

// preview shortens s for a display line.
func clip(s string) string { return tools.Clip(s, 60) }

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
