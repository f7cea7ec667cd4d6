package fileops

import (
	"context"
	"errors"
	"fmt"
	"github.com/toold/toold/pkg/tools/fileops/internal/scan"
	"io/fs"
	"path"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/tools"
	"github.com/toold/toold/pkg/workspace"
)

var deletePathOp = &operation{
	name: "delete_path",
	description: "Delete a file, a symlink (the link itself, never its target) or an empty directory. " +
		"A directory with content is deleted only with recursive set to true, and then with everything in it. " +
		"The workspace root cannot be deleted.",
	risk:     tools.RiskHigh,
	schema:   deleteSchema,
	describe: (*FileOperations).describeDelete,
	run:      (*FileOperations).deletePath,
	preview:  (*FileOperations).previewDelete,
}

func deleteSchema(tools.Limits) string {
	return `{
  "type": "object",
  "properties": {
    "path": {
      "type": "string",
      "minLength": 1,
      "description": "File or directory to delete, relative to the workspace root (an absolute path inside the workspace also works)."
    },
    "recursive": {
      "type": "boolean",
      "default": false,
      "description": "Delete a directory that is not empty, with all its content. Without it only files, symlinks and empty directories are deleted."
    }
  },
  "required": ["path"],
  "additionalProperties": false
}`
}

type deleteArgs struct {
	Path      string `json:"path"`
	Recursive bool   `json:"recursive"`
}

func (f *FileOperations) describeDelete(call *tools.Call) tools.Effect {
	p, _ := call.Args["path"].(string)
	return tools.Effect{Display: "Deleting: " + clip(p), Writes: []string{p}}
}

// maxTreeCount bounds the entries counted in a directory about to be
// deleted; past it the counts are lower bounds.
const maxTreeCount = 1_000_000

// maxTreeListed is how many entries of a directory a delete preview lists.
const maxTreeListed = 20

// treeCount describes a directory tree.
type treeCount struct {
	files, dirs, other int
	bytes              int64
	complete           bool
	listed             []string // the first entries, relative to the tree's parent
}

func (c treeCount) String() string {
	s := fmt.Sprintf("%s, %s", plural(c.files, "file", "files"), plural(c.dirs, "directory", "directories"))
	if c.other > 0 {
		s += ", " + plural(c.other, "other entry", "other entries")
	}
	s += ", " + tools.HumanSize(c.bytes)
	if !c.complete {
		s = "at least " + s
	}
	return s
}

// countTree counts what is below the directory name in root, without
// following symlinks.
func countTree(ctx context.Context, p *place) treeCount {
	c := treeCount{complete: true}
	n := 0
	_ = fs.WalkDir(p.root.FS(), p.rootName, func(rel string, d fs.DirEntry, err error) error {
		if rel == p.rootName {
			return nil
		}
		if err != nil {
			c.complete = false
			return nil
		}
		if n++; n > maxTreeCount || (n&0xff == 0 && ctx.Err() != nil) {
			c.complete = false
			return fs.SkipAll
		}
		if len(c.listed) < maxTreeListed {
			name := path.Join(path.Base(p.rootName), strings.TrimPrefix(rel, p.rootName+"/"))
			if d.IsDir() {
				name += "/"
			}
			c.listed = append(c.listed, name)
		}
		switch {
		case d.IsDir():
			c.dirs++
		case d.Type().IsRegular():
			c.files++
			if fi, err := d.Info(); err == nil {
				c.bytes += fi.Size()
			}
		default:
			c.other++
		}
		return nil
	})
	return c
}

// refuseRoot refuses to delete or move the workspace root or a directory
// above it.
func (f *FileOperations) refuseRoot(loc workspace.Location, what string) error {
	if loc.Abs == f.ws.Dir() || strings.HasPrefix(f.ws.Dir(), strings.TrimSuffix(loc.Abs, "/")+"/") {
		return &errdefs.Error{
			Class: errdefs.ErrDenied,
			Msg:   fmt.Sprintf("%q is the workspace root or a directory that contains it; %s it is never allowed", loc.Given, what),
			Rule:  "workspace",
		}
	}
	return nil
}

func (f *FileOperations) deletePath(ctx context.Context, call *tools.Call, _ *tools.Sink) (*tools.Result, error) {
	var args deleteArgs
	if err := bind(call, &args); err != nil {
		return nil, err
	}
	loc, err := f.locate(call, "path", args.Path, false)
	if err != nil {
		return nil, err
	}
	if err := f.refuseRoot(loc, "deleting"); err != nil {
		return nil, err
	}
	unlock, err := f.locks.lock(ctx, loc.Abs)
	if err != nil {
		return nil, ctxError(ctx, call.Operation)
	}
	defer unlock()
	p, err := f.openPlace(loc, false)
	if err != nil {
		return nil, notThere(loc, err)
	}
	defer p.close()
	st, ok, err := p.lstat()
	switch {
	case err != nil:
		return nil, mapErr(loc, err)
	case !ok:
		return nil, errdefs.Failed("%s does not exist; nothing was deleted", display(loc))
	}

	name := display(loc)
	kind := fileKind(st.Mode)
	structured := map[string]any{"path": name, "type": kind}
	var text string
	switch kind {
	case "directory":
		err := unix.Unlinkat(p.fd, p.name, unix.AT_REMOVEDIR)
		switch {
		case err == nil:
			text = fmt.Sprintf("Deleted the empty directory %s.", name)
		case err == unix.ENOTEMPTY || err == unix.EEXIST:
			c := countTree(ctx, p)
			if !args.Recursive {
				return nil, errdefs.Failed("%s is a directory that is not empty (%s); nothing was deleted. "+
					"To delete it with everything in it, set recursive to true", name, c)
			}
			if err := ctx.Err(); err != nil {
				return nil, ctxError(ctx, call.Operation)
			}
			if err := p.root.RemoveAll(p.rootName); err != nil {
				return nil, errdefs.Wrap(errdefs.ErrFailed, err, "deleting %s failed part way: %v; some of it may be gone, list it to see what is left",
					name, unwrapPathError(err))
			}
			text = fmt.Sprintf("Deleted the directory %s and everything in it (%s).", name, c)
			structured["files"], structured["directories"], structured["bytes"] = c.files, c.dirs+1, c.bytes
		default:
			return nil, mapErr(loc, &fs.PathError{Op: "remove", Path: loc.Given, Err: err})
		}
	default:
		target := readlinkAt(p.fd, p.name)
		if err := unix.Unlinkat(p.fd, p.name, 0); err != nil {
			return nil, mapErr(loc, &fs.PathError{Op: "remove", Path: loc.Given, Err: err})
		}
		switch kind {
		case "file":
			text = fmt.Sprintf("Deleted the file %s (%s).", name, tools.HumanSize(st.Size))
			structured["bytes"] = st.Size
		case "symlink":
			text = fmt.Sprintf("Deleted the symlink %s; what it pointed to was not touched.", name)
			if target != "" {
				structured["target"] = target
			}
		default:
			text = fmt.Sprintf("Deleted the special file %s.", name)
		}
	}
	_ = unix.Fsync(p.fd)
	return &tools.Result{Text: text, Structured: structured}, nil
}

// readlinkAt returns the target of the symlink name in the directory dirfd,
// "" when it cannot be read.
func readlinkAt(dirfd int, name string) string {
	for size := 256; size <= 1<<16; size *= 2 {
		buf := make([]byte, size)
		n, err := unix.Readlinkat(dirfd, name, buf)
		if err != nil {
			return ""
		}
		if n < size {
			return scan.ValidText(buf[:n])
		}
	}
	return ""
}

// notThere maps the error of opening the parent of loc: a missing parent
// means the entry does not exist.
func notThere(loc workspace.Location, err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return errdefs.Wrap(errdefs.ErrFailed, err, "%s does not exist; nothing was changed", display(loc))
	}
	return err
}

func (f *FileOperations) previewDelete(ctx context.Context, call *tools.Call) (string, error) {
	var args deleteArgs
	if err := bind(call, &args); err != nil {
		return "", err
	}
	loc, readable, err := f.previewTarget(call, "path", args.Path, false)
	if err != nil {
		return "", err
	}
	if err := f.refuseRoot(loc, "deleting"); err != nil {
		return "", err
	}
	if !readable {
		what := "it"
		if args.Recursive {
			what = "it and, if it is a directory, everything in it"
		}
		return fmt.Sprintf("Would delete %s: %s.", filepath.Clean(loc.Abs)+" (outside the workspace)", what), nil
	}
	p, err := f.openPlace(loc, false)
	if err != nil {
		return "", notThere(loc, err)
	}
	defer p.close()
	st, ok, err := p.lstat()
	switch {
	case err != nil:
		return "", mapErr(loc, err)
	case !ok:
		return "", errdefs.Failed("%s does not exist; nothing would be deleted", display(loc))
	}
	name := display(loc)
	switch fileKind(st.Mode) {
	case "file":
		return fmt.Sprintf("Would delete the file %s (%s).", name, tools.HumanSize(st.Size)), nil
	case "symlink":
		return fmt.Sprintf("Would delete the symlink %s (-> %s); what it points to is not touched.", name, readlinkAt(p.fd, p.name)), nil
	case "directory":
		c := countTree(ctx, p)
		if c.files+c.dirs+c.other == 0 {
			return fmt.Sprintf("Would delete the empty directory %s.", name), nil
		}
		if !args.Recursive {
			return "", errdefs.Failed("%s is a directory that is not empty (%s); nothing would be deleted. "+
				"To delete it with everything in it, set recursive to true", name, c)
		}
		var b strings.Builder
		fmt.Fprintf(&b, "Would delete the directory %s and everything in it: %s.\n", name, c)
		for _, e := range c.listed {
			b.WriteString("  " + e + "\n")
		}
		if n := c.files + c.dirs + c.other - len(c.listed); n > 0 {
			fmt.Fprintf(&b, "  ... and %d more\n", n)
		}
		return strings.TrimRight(b.String(), "\n"), nil
	}
	return fmt.Sprintf("Would delete the special file %s.", name), nil
}
