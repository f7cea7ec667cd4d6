package fileops

import (
	"context"
	"errors"
	"fmt"
	"github.com/toold/toold/pkg/tools/fileops/internal/scan"
	"strings"

	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/tools"
	"github.com/toold/toold/pkg/workspace"
)

var writeFileOp = &operation{
	name: "write_file",
	description: "Write a file whole: create it, or replace all of its content. Missing parent directories are created. " +
		"The write is atomic (readers see the old or the new file, never a mix) and an existing file keeps its permissions. " +
		"To change part of a file, use edit_file; to make sure nothing is overwritten, use create_file.",
	risk:     tools.RiskMedium,
	schema:   writeSchema,
	describe: describeWrite("Writing file: "),
	run:      (*FileOperations).writeFile,
	preview:  (*FileOperations).previewWrite,
}

var createFileOp = &operation{
	name: "create_file",
	description: "Create a new file with the given content; fails if the path exists, so it never overwrites anything. " +
		"Missing parent directories are created.",
	risk:     tools.RiskMedium,
	schema:   writeSchema,
	describe: describeWrite("Creating file: "),
	run:      (*FileOperations).createFile,
	preview:  (*FileOperations).previewWrite,
}

// filePathProperty is the schema of a "path" that names a file. read_file,
// write_file, create_file and edit_file share it word for word, so that the
// consolidated schema states it once.
const filePathProperty = `{
      "type": "string",
      "minLength": 1,
      "description": "Path of the file, relative to the workspace root (an absolute path inside the workspace also works)."
    }`

func writeSchema(tools.Limits) string {
	return `{
  "type": "object",
  "properties": {
    "path": ` + filePathProperty + `,
    "content": {
      "type": "string",
      "description": "The complete content of the file, written exactly as given: line endings and the final newline are not changed."
    }
  },
  "required": ["path", "content"],
  "additionalProperties": false
}`
}

type writeArgs struct {
	Path    string  `json:"path"`
	Content *string `json:"content"`
}

// describeWrite describes a call that writes the file at "path".
func describeWrite(verb string) func(*FileOperations, *tools.Call) tools.Effect {
	return func(_ *FileOperations, call *tools.Call) tools.Effect {
		p, _ := call.Args["path"].(string)
		return tools.Effect{Display: verb + clip(p), Writes: []string{p}}
	}
}

func (f *FileOperations) writeFile(ctx context.Context, call *tools.Call, _ *tools.Sink) (*tools.Result, error) {
	return f.write(ctx, call, false)
}

func (f *FileOperations) createFile(ctx context.Context, call *tools.Call, _ *tools.Sink) (*tools.Result, error) {
	return f.write(ctx, call, true)
}

func bindWrite(call *tools.Call) (writeArgs, error) {
	var args writeArgs
	if err := bind(call, &args); err != nil {
		return args, err
	}
	if args.Content == nil {
		return args, errdefs.Invalid("/content", "required", "content is required: the complete text of the file (an empty string for an empty file)")
	}
	return args, fileArg(args.Path)
}

// fileArg refuses a file path that ends with "/", which names a directory.
func fileArg(p string) error {
	if strings.HasSuffix(p, "/") {
		return errdefs.Invalid("/path", "format", "path %q ends with /, which names a directory; give the path of a file", p)
	}
	return nil
}

// write implements write_file and, when exclusive, create_file.
func (f *FileOperations) write(ctx context.Context, call *tools.Call, exclusive bool) (*tools.Result, error) {
	args, err := bindWrite(call)
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
	p, err := f.openPlace(loc, true)
	if err != nil {
		return nil, err
	}
	defer p.close()
	f.guardRead(p, call, args.Path)

	// The old content, for the line counts of the change.
	var (
		old    []byte
		hadOld bool
	)
	if !exclusive {
		var rerr error
		old, _, hadOld, rerr = p.read(maxEditBytes)
		if _, bin := scan.BinaryKind(p.name, old); rerr != nil || bin {
			old, hadOld = nil, false // no line counts for these
		}
	}
	content := *args.Content
	res, err := p.write([]byte(content), exclusive)
	if err != nil {
		return nil, f.writeError(loc, err, call.Operation)
	}

	name := display(loc)
	lines := countLines(content)
	structured := map[string]any{
		"path":    name,
		"bytes":   len(content),
		"lines":   lines,
		"created": res.created,
		"mode":    fmt.Sprintf("%04o", uint32(res.mode)),
	}
	var text strings.Builder
	size := fmt.Sprintf("%s, %s", plural(lines, "line", "lines"), tools.HumanSize(int64(len(content))))
	switch {
	case res.created:
		fmt.Fprintf(&text, "Created %s (%s).", name, size)
	case hadOld:
		_, st := unifiedDiff(name, string(old), content, nil, false)
		structured["lines_added"], structured["lines_removed"] = st.added, st.removed
		if st.added == 0 && st.removed == 0 {
			fmt.Fprintf(&text, "Wrote %s (%s); the content is unchanged.", name, size)
		} else {
			fmt.Fprintf(&text, "Wrote %s (%s): %s, %s against the previous version.", name, size,
				plural(st.added, "line", "lines")+" added", plural(st.removed, "line", "lines")+" removed")
		}
	default:
		fmt.Fprintf(&text, "Wrote %s (%s), replacing the previous version.", name, size)
	}
	f.notes(&text, structured, p, res)
	return &tools.Result{Text: text.String(), Structured: structured}, nil
}

// notes adds what a write did besides writing: parent directories created,
// hard links broken.
func (f *FileOperations) notes(text *strings.Builder, structured map[string]any, p *place, res writeResult) {
	if n := len(p.madeDirs); n > 0 {
		word := "directory"
		if n > 1 {
			word = "directories"
		}
		fmt.Fprintf(text, " Created the missing parent %s %s.", word, strings.Join(p.madeDirs, ", "))
		structured["parents_created"] = p.madeDirs
	}
	if res.links > 1 {
		fmt.Fprintf(text, " Note: the file had %d hard links; the others still have the previous content.", res.links)
		structured["hard_links_broken"] = res.links - 1
	}
}

// writeError maps an error of an atomic write for the model.
func (f *FileOperations) writeError(loc workspace.Location, err error, op string) error {
	switch {
	case errors.Is(err, errExists) && op == "create_file":
		return errdefs.Wrap(errdefs.ErrFailed, err, "%s already exists; create_file never overwrites: "+
			"use edit_file to change it, or write_file to replace it whole", display(loc))
	case errors.Is(err, errExists):
		return errdefs.Wrap(errdefs.ErrFailed, err, "%s was created by another process meanwhile; nothing was written. "+
			"Read it (read_file) and edit it", display(loc))
	case errors.Is(err, errNotRegular):
		return errdefs.Wrap(errdefs.ErrFailed, err, "%s is not a regular file (a device, FIFO or socket); %s writes regular files only", display(loc), op)
	}
	return mapErr(loc, err)
}

// countLines counts the lines of s, a last line without a newline
// included.
func countLines(s string) int {
	n := strings.Count(s, "\n")
	if len(s) > 0 && s[len(s)-1] != '\n' {
		n++
	}
	return n
}
