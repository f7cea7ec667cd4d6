package fileops

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"
	"sync"

	udiff "github.com/aymanbagabas/go-udiff"
	"golang.org/x/sys/unix"

	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/tools"
	"github.com/toold/toold/pkg/tools/fileops/internal/scan"
)

// str_replace_based_edit_tool: Anthropic's text editor tool, the commands
// Claude models are trained on (view, create, str_replace, insert,
// undo_edit), with the argument names and the result and error wording of
// Anthropic's documentation and reference implementation, over the same
// machinery as the other operations: view is read_file (or list_dir for a
// directory), the changes go through locate, the per-path locks, atomic
// writes and the guard like edit_file, and return a diff.
//
// Where toold differs from the reference implementation: paths may be
// relative to the workspace (absolute ones inside it work too); create
// refuses to overwrite, as the reference does, and says which operation
// replaces a file; str_replace adapts line endings to a CRLF file and,
// when old_str is not found, shows the most similar lines; tabs are never
// expanded.

// textEditorName is the operation's name, the name Claude calls the tool by.
const textEditorName = "str_replace_based_edit_tool"

const textEditorDescription = "Anthropic's text editor tool (the commands Claude knows): " +
	"view shows a file with line numbers (view_range [start, end] for some lines; end -1 for the rest) or lists a directory 2 levels deep; " +
	"create creates a new file with file_text (it never overwrites); " +
	"str_replace replaces old_str, which must occur exactly once in the file (whitespace included), by new_str; " +
	"insert inserts insert_text (or new_str) after line insert_line (0 for the start of the file); " +
	"undo_edit reverts the last create, str_replace or insert made with this tool on the file at path. " +
	"Changes return a snippet of the edited lines and a unified diff."

var textEditorOp = &operation{
	name:        textEditorName,
	description: textEditorDescription,
	risk:        tools.RiskMedium,
	schema:      textEditorSchema,
	describe:    (*FileOperations).describeTextEditor,
	run:         (*FileOperations).textEditor,
	preview:     (*FileOperations).previewTextEditor,
}

func textEditorSchema(tools.Limits) string {
	return `{
  "type": "object",
  "properties": {
    "command": {
      "type": "string",
      "enum": ["view", "create", "str_replace", "insert", "undo_edit"],
      "description": "The command to run: view, create, str_replace, insert or undo_edit."
    },
    "path": {
      "type": "string",
      "minLength": 1,
      "description": "Path of the file (or, for view, directory), relative to the workspace root (an absolute path inside the workspace also works)."
    },
    "file_text": {
      "type": "string",
      "description": "Required for create: the content of the new file."
    },
    "old_str": {
      "type": "string",
      "description": "Required for str_replace: the exact text to replace (whitespace and indentation included); it must occur exactly once in the file."
    },
    "new_str": {
      "type": "string",
      "description": "For str_replace: the text that replaces old_str (empty or absent deletes it). For insert: the text to insert, when insert_text is not given."
    },
    "insert_line": {
      "type": "integer",
      "minimum": 0,
      "description": "Required for insert: the line after which the text is inserted; 0 inserts at the start of the file."
    },
    "insert_text": {
      "type": "string",
      "description": "For insert: the text to insert (new_str also works)."
    },
    "view_range": {
      "type": "array",
      "items": {"type": "integer"},
      "description": "For view of a file: [start_line, end_line], 1-based and inclusive; end_line -1 reads to the end of the file."
    }
  },
  "required": ["command", "path"],
  "additionalProperties": false
}`
}

type textEditorArgs struct {
	Command    string   `json:"command"`
	Path       string   `json:"path"`
	FileText   *string  `json:"file_text"`
	OldStr     *string  `json:"old_str"`
	NewStr     *string  `json:"new_str"`
	InsertLine *intArg  `json:"insert_line"`
	InsertText *string  `json:"insert_text"`
	ViewRange  []intArg `json:"view_range"`
}

// editorCommands are the commands, in the order messages list them.
var editorCommands = []string{"view", "create", "str_replace", "insert", "undo_edit"}

// isEditorView reports whether call is a view of the text editor: it only
// reads.
func isEditorView(call *tools.Call) bool {
	c, _ := call.Args["command"].(string)
	return call.Operation == textEditorName && c == "view"
}

func (f *FileOperations) describeTextEditor(call *tools.Call) tools.Effect {
	cmd, _ := call.Args["command"].(string)
	p, _ := call.Args["path"].(string)
	switch cmd {
	case "view":
		return tools.Effect{Display: "Viewing: " + clip(p), Reads: []string{p}, Risk: tools.RiskLow}
	case "create":
		return tools.Effect{Display: "Creating file: " + clip(p), Writes: []string{p}}
	case "str_replace", "insert":
		return tools.Effect{Display: "Editing file: " + clip(p), Reads: []string{p}, Writes: []string{p}}
	case "undo_edit":
		return tools.Effect{Display: "Undoing the last edit of: " + clip(p), Reads: []string{p}, Writes: []string{p}}
	}
	return tools.Effect{Display: "Text editor: " + clip(cmd)}
}

func bindEditor(call *tools.Call) (textEditorArgs, error) {
	var args textEditorArgs
	if err := bind(call, &args); err != nil {
		return args, err
	}
	if !slices.Contains(editorCommands, args.Command) {
		return args, errdefs.Invalid("/command", "enum", "Unrecognized command %s. The allowed commands for the %s tool are: %s",
			args.Command, textEditorName, strings.Join(editorCommands, ", "))
	}
	if args.Path == "" {
		return args, errdefs.Invalid("/path", "required", "Parameter `path` is required for command: %s", args.Command)
	}
	switch args.Command {
	case "create":
		if args.FileText == nil {
			return args, errdefs.Invalid("/file_text", "required", "Parameter `file_text` is required for command: create")
		}
	case "str_replace":
		if args.OldStr == nil {
			return args, errdefs.Invalid("/old_str", "required", "Parameter `old_str` is required for command: str_replace")
		}
		if *args.OldStr == "" {
			return args, errdefs.Invalid("/old_str", "minLength", "Parameter `old_str` must not be empty for command: str_replace; "+
				"give the exact text to replace (view shows it), or use create for a new file")
		}
	case "insert":
		if args.InsertLine == nil {
			return args, errdefs.Invalid("/insert_line", "required", "Parameter `insert_line` is required for command: insert")
		}
		if args.InsertText == nil && args.NewStr == nil {
			return args, errdefs.Invalid("/insert_text", "required", "Parameter `insert_text` (or `new_str`) is required for command: insert")
		}
	}
	if args.Command != "view" {
		if err := fileArg(args.Path); err != nil {
			return args, err
		}
	}
	return args, nil
}

func (f *FileOperations) textEditor(ctx context.Context, call *tools.Call, sink *tools.Sink) (*tools.Result, error) {
	args, err := bindEditor(call)
	if err != nil {
		return nil, err
	}
	switch args.Command {
	case "view":
		return f.editorView(ctx, call, args, sink)
	case "undo_edit":
		return f.editorUndo(ctx, call, args)
	}
	loc, err := f.locate(call, "path", args.Path, true)
	if err != nil {
		return nil, err
	}
	unlock, err := f.locks.lock(ctx, loc.Abs)
	if err != nil {
		return nil, ctxError(ctx, call.Operation)
	}
	defer unlock()
	p, err := f.openPlace(loc, args.Command == "create")
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, errdefs.Wrap(errdefs.ErrFailed, err, "The path %s does not exist. Please provide a valid path.", display(loc))
		}
		return nil, err
	}
	defer p.close()
	f.guardRead(p, call, args.Path)
	e, err := planEditorChange(p, display(loc), args)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, ctxError(ctx, call.Operation)
	}
	wres, err := p.write([]byte(e.after), e.created)
	if err != nil {
		if errors.Is(err, errExists) {
			return nil, errdefs.Wrap(errdefs.ErrFailed, err, "File already exists at: %s. Cannot overwrite files using command `create`.", display(loc))
		}
		return nil, f.writeError(loc, err, call.Operation)
	}
	f.history.push(historyKey(call, loc.Abs), editRecord{before: e.before, after: e.after, existed: !e.created})
	return f.editorResult(p, wres, e), nil
}

// editorChange is a change of the text editor planned against a file.
type editorChange struct {
	command, name string
	before, after string
	created       bool
	// line is the 1-based first line of the change, newLines how many
	// lines the new text has.
	line, newLines int
	// edits are the change in before's byte offsets, for the diff.
	edits []udiff.Edit
}

// planEditorChange reads the file of p and computes the change of args.
func planEditorChange(p *place, name string, args textEditorArgs) (*editorChange, error) {
	data, _, exists, err := p.read(maxEditBytes)
	switch {
	case errors.Is(err, errTooLarge):
		return nil, errdefs.Wrap(errdefs.ErrFailed, err, "%s is larger than %s, the most %s edits; change it with a shell command", name, tools.HumanSize(maxEditBytes), textEditorName)
	case errors.Is(err, errNotRegular):
		return nil, errdefs.Wrap(errdefs.ErrFailed, err, "%s is not a regular file; %s edits text files only", name, textEditorName)
	case errors.Is(err, unix.EISDIR):
		return nil, errdefs.Wrap(errdefs.ErrFailed, err, "The path %s is a directory and only the `view` command can be used on directories", name)
	case err != nil:
		return nil, mapErr(p.loc, err)
	}
	e := &editorChange{command: args.Command, name: name, before: string(data)}
	if args.Command == "create" {
		if exists {
			return nil, errdefs.Failed("File already exists at: %s. Cannot overwrite files using command `create`. "+
				"To change it, use str_replace or insert; to replace it whole, use write_file.", name)
		}
		e.after, e.created, e.line, e.newLines = *args.FileText, true, 1, countLines(*args.FileText)
		return e, nil
	}
	if !exists {
		return nil, errdefs.Failed("The path %s does not exist. Please provide a valid path.", name)
	}
	if mt, bin := scan.BinaryKind(name, data); bin {
		return nil, errdefs.Failed("%s is a binary file (%s); %s edits text files only", name, mt, textEditorName)
	}
	if args.Command == "str_replace" {
		return e, e.strReplace(*args.OldStr, deref(args.NewStr))
	}
	text := deref(args.InsertText)
	if args.InsertText == nil {
		text = *args.NewStr
	}
	return e, e.insert(int(*args.InsertLine), text)
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func (e *editorChange) strReplace(old, new string) error {
	if old == new {
		return errdefs.Invalid("/new_str", "not", "No replacement was performed: old_str and new_str are the same, so %s would not change.", e.name)
	}
	at := findAll(e.before, old)
	if len(at) == 0 {
		if alt := withEnding(old, lineEnding(e.before)); alt != old {
			at = findAll(e.before, alt)
		}
	}
	switch {
	case len(at) == 0:
		// Anthropic's wording, then the most similar lines of the file.
		msg := fmt.Sprintf("No replacement was performed, old_str `%s` did not appear verbatim in %s.", tools.Clip(old, 2000), e.name)
		nf := errdefs.As(notFound(e.name, e.before, old)).Msg
		_, help, _ := strings.Cut(nf, e.name+".")
		help = strings.ReplaceAll(help, "old_string", "old_str")
		return errdefs.Failed("%s%s", msg, strings.TrimRight(help, "\n"))
	case len(at) > 1:
		lines := make([]int, len(at))
		for i, a := range at {
			lines[i] = strings.Count(e.before[:a], "\n") + 1
		}
		return errdefs.Failed("No replacement was performed. Found %d matches for replacement text in %s (at %s). "+
			"Please provide more context to make a unique match.", len(at), e.name, listLines(lines))
	}
	plan, err := planEdit(e.name, e.before, old, new, false)
	if err != nil {
		return err
	}
	e.after, e.line, e.edits = plan.after, plan.lines[0], plan.edits
	e.newLines = strings.Count(withEnding(new, "\n"), "\n") + 1
	return nil
}

func (e *editorChange) insert(line int, text string) error {
	n := countLines(e.before)
	if line < 0 || line > n {
		return errdefs.Invalid("/insert_line", "maximum", "Invalid `insert_line` parameter: %d. It should be within the range of lines of the file: [0, %d]", line, n)
	}
	eol := lineEnding(e.before)
	text = withEnding(text, eol)
	off := 0
	for i := 0; i < line; i++ {
		j := strings.IndexByte(e.before[off:], '\n')
		if j < 0 {
			off = len(e.before)
			break
		}
		off += j + 1
	}
	unterminated := off == len(e.before) && e.before != "" && !strings.HasSuffix(e.before, "\n")
	switch {
	case unterminated:
		// After a last line without a newline: end that line, and leave
		// the file without a final newline as it was.
		text = eol + strings.TrimSuffix(text, eol)
	case text != "" && !strings.HasSuffix(text, "\n"):
		text += eol
	}
	e.after = e.before[:off] + text + e.before[off:]
	e.edits = []udiff.Edit{{Start: off, End: off, New: text}}
	e.line, e.newLines = line+1, countLines(text)
	return nil
}

// snippetLines is how many lines around a change a snippet shows.
const snippetLines = 4

// editorResult is the result of a change: Anthropic's message with a
// snippet of the edited lines, numbered like cat -n, and the diff.
func (f *FileOperations) editorResult(p *place, wres writeResult, e *editorChange) *tools.Result {
	structured := map[string]any{"path": e.name, "command": e.command, "bytes": len(e.after), "created": e.created}
	var text strings.Builder
	if e.created {
		fmt.Fprintf(&text, "File created successfully at: %s", e.name)
	} else {
		lines := splitLines(e.after)
		start := max(0, e.line-1-snippetLines)
		end := min(len(lines), e.line-1+e.newLines+snippetLines)
		what := "a snippet of " + e.name
		if e.command == "insert" {
			what = "a snippet of the edited file"
		}
		fmt.Fprintf(&text, "The file %s has been edited. Here's the result of running `cat -n` on %s:\n", e.name, what)
		showLines(&text, lines, start, end-start)
		if e.command == "insert" {
			text.WriteString("Review the changes and make sure they are as expected (correct indentation, no duplicate lines, etc). Edit the file again if necessary.")
		} else {
			text.WriteString("Review the changes and make sure they are as expected. Edit the file again if necessary.")
		}
		d, st := unifiedDiff(e.name, e.before, e.after, e.edits, false)
		shown, cut := capDiff(d, maxResultDiff)
		text.WriteString("\n\n" + shown)
		structured["lines_added"], structured["lines_removed"], structured["diff_truncated"] = st.added, st.removed, cut
		structured["line"] = e.line
	}
	f.notes(&text, structured, p, wres)
	return &tools.Result{Text: strings.TrimRight(text.String(), "\n"), Structured: structured}
}

func (f *FileOperations) editorView(ctx context.Context, call *tools.Call, args textEditorArgs, sink *tools.Sink) (*tools.Result, error) {
	sub := &FileOperations{ws: f.ws, limits: f.limits, sensitive: f.sensitive, guard: f.guard, parent: call}
	loc, err := f.resolvePath("path", args.Path, true)
	if err != nil {
		return nil, err
	}
	if fi, err := os.Stat(loc.Abs); err == nil && fi.IsDir() {
		if args.ViewRange != nil {
			return nil, errdefs.Invalid("/view_range", "not", "The `view_range` parameter is not allowed when `path` points to a directory.")
		}
		res, err := sub.listDir(ctx, &tools.Call{ID: call.ID, Tool: ToolName, Operation: "list_dir",
			Args: map[string]any{"path": args.Path, "depth": 2}, Outside: call.Outside}, sink)
		if err != nil {
			return nil, err
		}
		res.Text = fmt.Sprintf("Here's the files and directories up to 2 levels deep in %s:\n%s", args.Path, res.Text)
		return res, nil
	}
	read := map[string]any{"path": args.Path}
	if args.ViewRange != nil {
		r := args.ViewRange
		switch {
		case len(r) != 2:
			return nil, errdefs.Invalid("/view_range", "format", "Invalid `view_range`. It should be a list of two integers.")
		case r[0] < 1:
			return nil, errdefs.Invalid("/view_range", "minimum", "Invalid `view_range`: [%d, %d]. Its first element `%d` should be 1 or more", r[0], r[1], r[0])
		case r[1] != -1 && r[1] < r[0]:
			return nil, errdefs.Invalid("/view_range", "minimum", "Invalid `view_range`: [%d, %d]. Its second element `%d` should be larger or equal than its first `%d`", r[0], r[1], r[1], r[0])
		}
		read["offset"] = int(r[0])
		if r[1] != -1 {
			read["limit"] = int(r[1] - r[0] + 1)
		}
	}
	res, err := sub.readFile(ctx, &tools.Call{ID: call.ID, Tool: ToolName, Operation: "read_file", Args: read, Outside: call.Outside}, sink)
	if err != nil {
		var e *errdefs.Error
		if errors.As(err, &e) && errors.Is(err, fs.ErrNotExist) {
			e.Msg = fmt.Sprintf("The path %s does not exist. Please provide a valid path. (%s)", args.Path, e.Msg)
		}
		return nil, err
	}
	res.Text = fmt.Sprintf("Here's the result of running `cat -n` on %s:\n%s", args.Path, res.Text)
	return res, nil
}

// Undo history of the text editor, in memory, per FileOperations and
// conversation: for each file the last maxUndoPerFile changes made with create, str_replace and
// insert, for at most maxUndoFiles files (the least recently edited file's
// history goes first) and maxUndoBytes of content in all. A restart, or
// the history being evicted, forgets it; undo_edit then says there is
// nothing to undo. Changes made by other operations or processes are not
// recorded, and undo_edit refuses when the file no longer holds what the
// recorded change wrote.
const (
	maxUndoPerFile = 10
	maxUndoFiles   = 100
	maxUndoBytes   = 32 << 20
)

// historyKey is the key of the history of the file abs in the
// conversation of call: a conversation undoes its own edits only.
func historyKey(call *tools.Call, abs string) string { return call.ConversationID + "\x00" + abs }

// editRecord is one change the text editor made to a file.
type editRecord struct {
	before, after string
	existed       bool // false: the change created the file
}

func (r editRecord) size() int { return len(r.before) + len(r.after) }

// editHistory is the undo history. It is safe for concurrent use.
type editHistory struct {
	mu    sync.Mutex
	files map[string][]editRecord // by absolute path
	order []string                // least recently edited first
	bytes int
}

func (h *editHistory) push(abs string, r editRecord) {
	if r.size() > maxUndoBytes {
		h.forget(abs) // too large to keep: an older undo would skip it
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.files == nil {
		h.files = map[string][]editRecord{}
	}
	recs := append(h.files[abs], r)
	h.bytes += r.size()
	if len(recs) > maxUndoPerFile {
		h.bytes -= recs[0].size()
		recs = recs[1:]
	}
	h.files[abs] = recs
	h.order = append(slices.DeleteFunc(h.order, func(s string) bool { return s == abs }), abs)
	for len(h.order) > maxUndoFiles || h.bytes > maxUndoBytes {
		old := h.order[0]
		rs := h.files[old]
		h.bytes -= rs[0].size()
		if len(rs) == 1 {
			delete(h.files, old)
			h.order = h.order[1:]
		} else {
			h.files[old] = rs[1:]
		}
	}
}

// last returns the last change recorded for abs.
func (h *editHistory) last(abs string) (editRecord, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	rs := h.files[abs]
	if len(rs) == 0 {
		return editRecord{}, false
	}
	return rs[len(rs)-1], true
}

// pop removes the last change recorded for abs.
func (h *editHistory) pop(abs string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	rs := h.files[abs]
	if len(rs) == 0 {
		return
	}
	h.bytes -= rs[len(rs)-1].size()
	if len(rs) == 1 {
		delete(h.files, abs)
		h.order = slices.DeleteFunc(h.order, func(s string) bool { return s == abs })
		return
	}
	h.files[abs] = rs[:len(rs)-1]
}

// forget drops the history of abs.
func (h *editHistory) forget(abs string) {
	for {
		if _, ok := h.last(abs); !ok {
			return
		}
		h.pop(abs)
	}
}

func (f *FileOperations) editorUndo(ctx context.Context, call *tools.Call, args textEditorArgs) (*tools.Result, error) {
	loc, err := f.locate(call, "path", args.Path, true)
	if err != nil {
		return nil, err
	}
	unlock, err := f.locks.lock(ctx, loc.Abs)
	if err != nil {
		return nil, ctxError(ctx, call.Operation)
	}
	defer unlock()
	name := display(loc)
	rec, ok := f.history.last(historyKey(call, loc.Abs))
	if !ok {
		return nil, errdefs.Failed("No edit history found for %s.", name)
	}
	p, err := f.openPlace(loc, false)
	if err != nil {
		return nil, mapErr(loc, err)
	}
	defer p.close()
	f.guardRead(p, call, args.Path)
	data, _, exists, err := p.read(maxEditBytes)
	if err != nil && !errors.Is(err, errTooLarge) {
		return nil, mapErr(loc, err)
	}
	if err != nil || !exists || string(data) != rec.after {
		return nil, errdefs.Failed("%s changed since the last edit made with %s (by another operation or process); "+
			"undo_edit would lose those changes, so nothing was undone. View the file and edit it instead.", name, textEditorName)
	}
	var text strings.Builder
	structured := map[string]any{"path": name, "command": "undo_edit"}
	if !rec.existed {
		if err := unix.Unlinkat(p.fd, p.name, 0); err != nil {
			return nil, mapErr(loc, &fs.PathError{Op: "delete", Path: args.Path, Err: err})
		}
		_ = unix.Fsync(p.fd)
		fmt.Fprintf(&text, "Last edit to %s undone successfully: the file it created was deleted.", name)
		structured["deleted"] = true
	} else {
		if _, err := p.write([]byte(rec.before), false); err != nil {
			return nil, f.writeError(loc, err, call.Operation)
		}
		d, st := unifiedDiff(name, rec.after, rec.before, nil, false)
		shown, cut := capDiff(d, maxResultDiff)
		fmt.Fprintf(&text, "Last edit to %s undone successfully.\n\n%s", name, shown)
		structured["lines_added"], structured["lines_removed"], structured["diff_truncated"] = st.added, st.removed, cut
	}
	f.history.pop(historyKey(call, loc.Abs))
	return &tools.Result{Text: strings.TrimRight(text.String(), "\n"), Structured: structured}, nil
}

func (f *FileOperations) previewTextEditor(ctx context.Context, call *tools.Call) (string, error) {
	args, err := bindEditor(call)
	if err != nil || args.Command == "view" {
		return "", err
	}
	loc, readable, err := f.previewTarget(call, "path", args.Path, true)
	if err != nil {
		return "", err
	}
	if !readable {
		return fmt.Sprintf("Would run %s on %s.", args.Command, outsideNote(loc)), nil
	}
	name := display(loc)
	if args.Command == "undo_edit" {
		rec, ok := f.history.last(historyKey(call, loc.Abs))
		if !ok {
			return "", errdefs.Failed("No edit history found for %s.", name)
		}
		if !rec.existed {
			return fmt.Sprintf("Would undo the last edit of %s: delete the file, which that edit created.", name), nil
		}
		d, _ := unifiedDiff(name, rec.after, rec.before, nil, false)
		d, _ = capDiff(d, maxPreviewDiff)
		return d, nil
	}
	p, ok, err := f.peekPlace(loc)
	if err != nil {
		return "", err
	}
	if !ok {
		if args.Command != "create" {
			return "", errdefs.Failed("The path %s does not exist. Please provide a valid path.", name)
		}
		d, _ := unifiedDiff(name, "", *args.FileText, nil, true)
		d, _ = capDiff(d, maxPreviewDiff)
		return d, nil
	}
	defer p.close()
	f.guardRead(p, call, args.Path)
	e, err := planEditorChange(p, name, args)
	if err != nil {
		return "", err
	}
	d, _ := unifiedDiff(name, e.before, e.after, e.edits, e.created)
	d, _ = capDiff(d, maxPreviewDiff)
	return d, nil
}
