package fileops

import (
	"context"
	"errors"
	"fmt"
	"github.com/toold/toold/pkg/tools/fileops/internal/scan"
	"strings"

	udiff "github.com/aymanbagabas/go-udiff"

	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/tools"
)

const editDescription = "Edit a text file by exact string replacement: old_string must match the file's text exactly " +
	"(whitespace and indentation included; copy it from read_file output without the line-number prefix) and occur exactly once, " +
	"unless replace_all is true. Include enough surrounding lines to make it unique. " +
	"When it is not found, the error shows the most similar lines of the file. " +
	"Line endings (CRLF) and the final newline are kept. With an empty old_string, creates the file if it does not exist " +
	"(or fills it if it is empty). Returns a unified diff of the change."

var editFileOp = &operation{
	name:        "edit_file",
	description: editDescription,
	risk:        tools.RiskMedium,
	schema:      editSchema,
	describe:    (*FileOperations).describeEdit,
	run:         (*FileOperations).editFile,
	preview:     (*FileOperations).previewEdit,
}

// replaceStringOp is edit_file under the name SAM-style agents call.
var replaceStringOp = &operation{
	name:        "replace_string",
	description: "The same as edit_file, under the name some agents know: replace old_string by new_string in the file at path.",
	risk:        tools.RiskMedium,
	schema:      editSchema,
	describe:    (*FileOperations).describeEdit,
	run:         (*FileOperations).editFile,
	preview:     (*FileOperations).previewEdit,
}

// maxEditBytes is the largest file edit_file edits.
const maxEditBytes = 10 << 20

// Caps of the diffs edits and writes return.
const (
	maxResultDiff  = 16 << 10  // in a result, for the model
	maxPreviewDiff = 256 << 10 // in an approval request, for a person
)

func editSchema(tools.Limits) string {
	return `{
  "type": "object",
  "properties": {
    "path": ` + filePathProperty + `,
    "old_string": {
      "type": "string",
      "description": "The exact text to replace, as it is in the file (whitespace, indentation and line breaks included). It must occur exactly once unless replace_all is true. Empty to create a file that does not exist yet (or fill an empty one) with new_string."
    },
    "new_string": {
      "type": "string",
      "description": "The text to put in its place; it must differ from old_string. Empty to delete old_string."
    },
    "replace_all": {
      "type": "boolean",
      "default": false,
      "description": "Replace every occurrence of old_string instead of requiring exactly one."
    }
  },
  "required": ["path", "old_string", "new_string"],
  "additionalProperties": false
}`
}

type editArgs struct {
	Path       string  `json:"path"`
	OldString  *string `json:"old_string"`
	NewString  *string `json:"new_string"`
	ReplaceAll bool    `json:"replace_all"`
}

func (f *FileOperations) describeEdit(call *tools.Call) tools.Effect {
	p, _ := call.Args["path"].(string)
	// The result's diff shows lines of the file: an edit reads it too.
	return tools.Effect{Display: "Editing file: " + clip(p), Reads: []string{p}, Writes: []string{p}}
}

func bindEdit(call *tools.Call) (args editArgs, old, new string, err error) {
	if err := bind(call, &args); err != nil {
		return args, "", "", err
	}
	switch {
	case args.OldString == nil:
		return args, "", "", errdefs.Invalid("/old_string", "required", "old_string is required: the exact text to replace")
	case args.NewString == nil:
		return args, "", "", errdefs.Invalid("/new_string", "required", "new_string is required: the text to put in place of old_string (empty to delete it)")
	case *args.OldString == *args.NewString:
		return args, "", "", errdefs.Invalid("/new_string", "not", "old_string and new_string are the same, so the edit would change nothing; give the new text in new_string")
	}
	return args, *args.OldString, *args.NewString, fileArg(args.Path)
}

// fileEdit is an edit planned against a file's current content.
type fileEdit struct {
	before  string
	plan    *editPlan
	created bool // the file does not exist: the edit creates it
}

// planFileEdit reads the file of p and applies the edit in memory.
func planFileEdit(p *place, name, old, new string, all bool) (*fileEdit, error) {
	data, _, exists, err := p.read(maxEditBytes)
	switch {
	case errors.Is(err, errTooLarge):
		return nil, errdefs.Wrap(errdefs.ErrFailed, err, "%s is larger than %s, the most edit_file edits; "+
			"replace it whole with write_file, or change it with a shell command", name, tools.HumanSize(maxEditBytes))
	case errors.Is(err, errNotRegular):
		return nil, errdefs.Wrap(errdefs.ErrFailed, err, "%s is not a regular file; edit_file edits text files only", name)
	case err != nil:
		return nil, mapErr(p.loc, err)
	}
	if !exists {
		if old != "" {
			return nil, errdefs.Failed("%s does not exist. To create it, use create_file (or edit_file with an empty old_string)", name)
		}
		return &fileEdit{plan: &editPlan{after: new, edits: []udiff.Edit{{New: new}}, lines: []int{1}}, created: true}, nil
	}
	if mt, bin := scan.BinaryKind(name, data); bin {
		return nil, errdefs.Failed("%s is a binary file (%s); edit_file edits text files only", name, mt)
	}
	before := string(data)
	if old == "" {
		if before != "" {
			return nil, errdefs.Invalid("/old_string", "minLength", "old_string is empty, but %s is not: give the exact text to replace "+
				"(read_file shows it), or use write_file to replace the whole file", name)
		}
		return &fileEdit{before: before, plan: &editPlan{after: new, edits: []udiff.Edit{{New: new}}, lines: []int{1}}}, nil
	}
	plan, err := planEdit(name, before, old, new, all)
	if err != nil {
		return nil, err
	}
	return &fileEdit{before: before, plan: plan}, nil
}

// diff returns the unified diff of the edit, showing at most maxDiffEdits
// replacements, and whether it shows them all.
func (e *fileEdit) diff(name string) (string, diffStat, bool) {
	edits := e.plan.edits
	complete := len(edits) <= maxDiffEdits
	if !complete {
		edits = edits[:maxDiffEdits]
	}
	d, st := unifiedDiff(name, e.before, e.plan.after, edits, e.created)
	return d, st, complete
}

func (f *FileOperations) editFile(ctx context.Context, call *tools.Call, _ *tools.Sink) (*tools.Result, error) {
	args, old, new, err := bindEdit(call)
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
	p, err := f.openPlace(loc, old == "")
	if err != nil {
		return nil, err
	}
	defer p.close()
	f.guardRead(p, call, args.Path)
	name := display(loc)
	e, err := planFileEdit(p, name, old, new, args.ReplaceAll)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, ctxError(ctx, call.Operation)
	}
	wres, err := p.write([]byte(e.plan.after), e.created)
	if err != nil {
		return nil, f.writeError(loc, err, call.Operation)
	}

	diff, st, complete := e.diff(name)
	n := len(e.plan.lines)
	structured := map[string]any{
		"path":         name,
		"replacements": n,
		"lines":        e.plan.lines,
		"bytes":        len(e.plan.after),
		"created":      e.created,
	}
	var text strings.Builder
	if e.created {
		fmt.Fprintf(&text, "Created %s (%s, %s).", name, plural(countLines(new), "line", "lines"), tools.HumanSize(int64(len(new))))
	} else {
		what := "1 occurrence"
		if n > 1 {
			what = fmt.Sprintf("all %d occurrences", n)
		}
		fmt.Fprintf(&text, "Edited %s: replaced %s at %s", name, what, listLines(e.plan.lines))
		if complete {
			fmt.Fprintf(&text, " (%s added, %s removed)", plural(st.added, "line", "lines"), plural(st.removed, "line", "lines"))
			structured["lines_added"], structured["lines_removed"] = st.added, st.removed
		}
		text.WriteString(".")
	}
	f.notes(&text, structured, p, wres)
	if !e.created && diff != "" {
		shown, cut := capDiff(diff, maxResultDiff)
		text.WriteString("\n\n")
		text.WriteString(shown)
		if !complete {
			fmt.Fprintf(&text, "[the diff shows the first %d of %d replacements]\n", maxDiffEdits, n)
		}
		structured["diff_truncated"] = cut || !complete
	}
	return &tools.Result{Text: strings.TrimRight(text.String(), "\n"), Structured: structured}, nil
}
