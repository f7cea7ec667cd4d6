package fileops

import (
	"context"
	"fmt"
	"io/fs"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/tools"
	"github.com/toold/toold/pkg/workspace"
)

var makeDirOp = &operation{
	name: "make_dir",
	description: "Create a directory, with any missing parent directories (like mkdir -p). " +
		"A directory that exists already is not an error.",
	risk:     tools.RiskMedium,
	schema:   makeDirSchema,
	describe: (*FileOperations).describeMakeDir,
	run:      (*FileOperations).makeDir,
	preview:  (*FileOperations).previewMakeDir,
}

func makeDirSchema(tools.Limits) string {
	return `{
  "type": "object",
  "properties": {
    "path": {
      "type": "string",
      "minLength": 1,
      "description": "Directory to create, relative to the workspace root (an absolute path inside the workspace also works)."
    }
  },
  "required": ["path"],
  "additionalProperties": false
}`
}

type makeDirArgs struct {
	Path string `json:"path"`
}

func (f *FileOperations) describeMakeDir(call *tools.Call) tools.Effect {
	p, _ := call.Args["path"].(string)
	return tools.Effect{Display: "Creating directory: " + clip(p), Writes: []string{p}}
}

// isRoot reports whether loc is the workspace root.
func isRoot(loc workspace.Location) bool { return loc.Inside && loc.Rel == "." }

func (f *FileOperations) makeDir(ctx context.Context, call *tools.Call, _ *tools.Sink) (*tools.Result, error) {
	var args makeDirArgs
	if err := bind(call, &args); err != nil {
		return nil, err
	}
	loc, err := f.locate(call, "path", args.Path, true)
	if err != nil {
		return nil, err
	}
	name := display(loc)
	exists := &tools.Result{
		Text:       fmt.Sprintf("%s already exists as a directory; nothing was changed.", name),
		Structured: map[string]any{"path": name, "created": false},
	}
	if isRoot(loc) {
		return exists, nil
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
	if err := unix.Mkdirat(p.fd, p.name, 0o755); err != nil {
		if err != unix.EEXIST {
			return nil, mapErr(loc, &fs.PathError{Op: "mkdir", Path: loc.Given, Err: err})
		}
		st, ok, serr := p.lstat()
		if serr == nil && ok && fileKind(st.Mode) == "directory" {
			return exists, nil
		}
		kind := "something else"
		if ok {
			kind = "a " + fileKind(st.Mode)
		}
		return nil, errdefs.Failed("%s exists and is %s, not a directory; choose another path", name, kind)
	}
	_ = unix.Fsync(p.fd)
	var text strings.Builder
	fmt.Fprintf(&text, "Created the directory %s.", name)
	structured := map[string]any{"path": name, "created": true}
	f.notes(&text, structured, p, writeResult{})
	return &tools.Result{Text: text.String(), Structured: structured}, nil
}

func (f *FileOperations) previewMakeDir(ctx context.Context, call *tools.Call) (string, error) {
	var args makeDirArgs
	if err := bind(call, &args); err != nil {
		return "", err
	}
	loc, readable, err := f.previewTarget(call, "path", args.Path, true)
	if err != nil {
		return "", err
	}
	switch {
	case !readable:
		return fmt.Sprintf("Would create the directory %s (outside the workspace), with any missing parents.", loc.Abs), nil
	case isRoot(loc):
		return fmt.Sprintf("Nothing to do: %s already exists as a directory.", display(loc)), nil
	}
	p, ok, err := f.peekPlace(loc)
	if err != nil {
		return "", err
	}
	if !ok {
		return fmt.Sprintf("Would create the directory %s and its missing parent directories.", display(loc)), nil
	}
	defer p.close()
	st, exists, err := p.lstat()
	switch {
	case err != nil:
		return "", mapErr(loc, err)
	case exists && fileKind(st.Mode) == "directory":
		return fmt.Sprintf("Nothing to do: %s already exists as a directory.", display(loc)), nil
	case exists:
		return "", errdefs.Failed("%s exists and is a %s, not a directory; choose another path", display(loc), fileKind(st.Mode))
	}
	return fmt.Sprintf("Would create the directory %s.", display(loc)), nil
}
