package fileops

import (
	"context"
	"errors"
	"fmt"
	"strings"

	udiff "github.com/aymanbagabas/go-udiff"

	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/tools"
	"github.com/toold/toold/pkg/tools/fileops/internal/scan"
)

// replaceLinesOp replaces a range of lines by number: SWE-agent's
// `edit START:END` (and any agent that edits the lines it was shown).
var replaceLinesOp = &operation{
	name: "replace_lines",
	description: "Replace lines start_line to end_line (1-based, inclusive) of a text file with new_text " +
		"(empty new_text deletes them; end_line = start_line - 1 inserts before start_line). " +
		"Line numbers are those read_file shows; read the lines first. Returns a unified diff of the change.",
	risk:     tools.RiskMedium,
	schema:   replaceLinesSchema,
	describe: (*FileOperations).describeEdit,
	run:      (*FileOperations).replaceLines,
	preview:  (*FileOperations).previewReplaceLines,
}

func replaceLinesSchema(tools.Limits) string {
	return `{
  "type": "object",
  "properties": {
    "path": ` + filePathProperty + `,
    "start_line": {"type": "integer", "minimum": 1, "description": "First line to replace, 1-based."},
    "end_line": {"type": "integer", "minimum": 0, "description": "Last line to replace, inclusive; start_line - 1 to insert before start_line."},
    "new_text": {"type": "string", "description": "The lines to put in their place (a final newline is added when missing); empty to delete the lines."}
  },
  "required": ["path", "start_line", "end_line", "new_text"],
  "additionalProperties": false
}`
}

type replaceLinesArgs struct {
	Path      string `json:"path"`
	StartLine intArg `json:"start_line"`
	EndLine   intArg `json:"end_line"`
	NewText   string `json:"new_text"`
}

func bindReplaceLines(call *tools.Call) (replaceLinesArgs, error) {
	var args replaceLinesArgs
	if err := bind(call, &args); err != nil {
		return args, err
	}
	if args.EndLine < args.StartLine-1 {
		return args, errdefs.Invalid("/end_line", "minimum", "end_line %d is before start_line %d: give the last line to replace (start_line - 1 to insert)", args.EndLine, args.StartLine)
	}
	return args, fileArg(args.Path)
}

// planLineEdit reads the file of p and replaces lines start..end in memory.
func planLineEdit(p *place, name string, start, end int, text string) (*fileEdit, error) {
	data, _, exists, err := p.read(maxEditBytes)
	switch {
	case errors.Is(err, errTooLarge):
		return nil, errdefs.Wrap(errdefs.ErrFailed, err, "%s is larger than %s, the most replace_lines edits; "+
			"replace it whole with write_file, or change it with a shell command", name, tools.HumanSize(maxEditBytes))
	case errors.Is(err, errNotRegular):
		return nil, errdefs.Wrap(errdefs.ErrFailed, err, "%s is not a regular file; replace_lines edits text files only", name)
	case err != nil:
		return nil, mapErr(p.loc, err)
	case !exists:
		return nil, errdefs.Failed("%s does not exist; create it with create_file", name)
	}
	if mt, bin := scan.BinaryKind(name, data); bin {
		return nil, errdefs.Failed("%s is a binary file (%s); replace_lines edits text files only", name, mt)
	}
	before := string(data)
	// Byte offsets of each line's start; lines keep their endings.
	starts := []int{0}
	for i := 0; i < len(before); i++ {
		if before[i] == '\n' && i+1 < len(before) {
			starts = append(starts, i+1)
		}
	}
	n := len(starts)
	if before == "" {
		n = 0
	}
	if start > n+1 {
		return nil, errdefs.Invalid("/start_line", "maximum", "start_line %d is past the end of %s, which has %s", start, name, plural(n, "line", "lines"))
	}
	end = min(end, n)
	off := func(line int) int { // byte offset where 1-based line starts
		if line > n {
			return len(before)
		}
		return starts[line-1]
	}
	from, to := off(start), off(end+1)
	if text != "" && !strings.HasSuffix(text, "\n") {
		text += lineEnding(before)
	}
	if start > n && n > 0 && !strings.HasSuffix(before, "\n") {
		text = lineEnding(before) + text
	}
	if before[from:to] == text {
		return nil, errdefs.Invalid("/new_text", "not", "lines %d-%d of %s already read new_text; the edit would change nothing", start, end, name)
	}
	after := before[:from] + text + before[to:]
	return &fileEdit{before: before, plan: &editPlan{after: after, edits: []udiff.Edit{{Start: from, End: to, New: text}}, lines: []int{start}}}, nil
}

func (f *FileOperations) replaceLines(ctx context.Context, call *tools.Call, _ *tools.Sink) (*tools.Result, error) {
	args, err := bindReplaceLines(call)
	if err != nil {
		return nil, err
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
	p, err := f.openPlace(loc, false)
	if err != nil {
		return nil, err
	}
	defer p.close()
	f.guardRead(p, call, args.Path)
	name := display(loc)
	e, err := planLineEdit(p, name, int(args.StartLine), int(args.EndLine), args.NewText)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, ctxError(ctx, call.Operation)
	}
	wres, err := p.write([]byte(e.plan.after), false)
	if err != nil {
		return nil, f.writeError(loc, err, call.Operation)
	}
	diff, st, _ := e.diff(name)
	structured := map[string]any{
		"path": name, "start_line": int(args.StartLine), "end_line": int(args.EndLine),
		"lines_added": st.added, "lines_removed": st.removed, "bytes": len(e.plan.after),
	}
	var text strings.Builder
	fmt.Fprintf(&text, "Edited %s: replaced %s (%s added, %s removed).", name, span(int(args.StartLine)-1, max(0, int(args.EndLine)-int(args.StartLine)+1)),
		plural(st.added, "line", "lines"), plural(st.removed, "line", "lines"))
	f.notes(&text, structured, p, wres)
	if diff != "" {
		shown, cut := capDiff(diff, maxResultDiff)
		text.WriteString("\n\n")
		text.WriteString(shown)
		structured["diff_truncated"] = cut
	}
	return &tools.Result{Text: strings.TrimRight(text.String(), "\n"), Structured: structured}, nil
}

func (f *FileOperations) previewReplaceLines(ctx context.Context, call *tools.Call) (string, error) {
	args, err := bindReplaceLines(call)
	if err != nil {
		return "", err
	}
	loc, readable, err := f.previewTarget(call, "path", args.Path, true)
	if err != nil {
		return "", err
	}
	if !readable {
		return fmt.Sprintf("Would replace lines %d-%d of %s with:\n%s", args.StartLine, args.EndLine, outsideNote(loc), args.NewText), nil
	}
	name := display(loc)
	p, ok, err := f.peekPlace(loc)
	if err != nil {
		return "", err
	}
	if !ok {
		return "", errdefs.Failed("%s does not exist; create it with create_file", name)
	}
	defer p.close()
	f.guardRead(p, call, args.Path)
	e, err := planLineEdit(p, name, int(args.StartLine), int(args.EndLine), args.NewText)
	if err != nil {
		return "", err
	}
	d, _, _ := e.diff(name)
	d, _ = capDiff(d, maxPreviewDiff)
	return d, nil
}
