package fileops

import (
	"context"
	"fmt"
	"github.com/toold/toold/pkg/tools/fileops/internal/scan"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/tools"
	"github.com/toold/toold/pkg/workspace"
)

var movePathOp = &operation{
	name: "move_path",
	description: "Move or rename a file, directory or symlink (a symlink moves as a link). Missing parent directories " +
		"of the destination are created. An existing destination is replaced only with overwrite set to true " +
		"(a directory only by a directory, and only when it is empty). To move into a directory, end destination with / " +
		"(docs/ moves a.md to docs/a.md).",
	risk:     tools.RiskHigh,
	schema:   moveSchema,
	describe: (*FileOperations).describeMove,
	run:      (*FileOperations).movePath,
	preview:  (*FileOperations).previewMove,
}

func moveSchema(tools.Limits) string {
	return `{
  "type": "object",
  "properties": {
    "source": {
      "type": "string",
      "minLength": 1,
      "description": "The file, directory or symlink to move, relative to the workspace root (an absolute path inside the workspace also works)."
    },
    "destination": {
      "type": "string",
      "minLength": 1,
      "description": "Its new path, relative to the workspace root. Ending with / means into that directory, keeping the name."
    },
    "overwrite": {
      "type": "boolean",
      "default": false,
      "description": "Replace the destination if it exists. Without it, an existing destination is an error and nothing moves."
    }
  },
  "required": ["source", "destination"],
  "additionalProperties": false
}`
}

type moveArgs struct {
	Source      string `json:"source"`
	Destination string `json:"destination"`
	Overwrite   bool   `json:"overwrite"`
}

func (f *FileOperations) describeMove(call *tools.Call) tools.Effect {
	src, _ := call.Args["source"].(string)
	dst, _ := call.Args["destination"].(string)
	return tools.Effect{
		Display: "Moving: " + clip(src) + " → " + clip(dst),
		Writes:  []string{src, dst},
	}
}

// moveTargets resolves the source and destination of a move and checks
// what can be checked without opening anything. resolve is
// FileOperations.locate for a run, or a preview's resolvePath.
func (f *FileOperations) moveTargets(args moveArgs, resolve func(field, p string) (workspace.Location, error)) (src, dst workspace.Location, err error) {
	if args.Source == "" {
		return src, dst, errdefs.Invalid("/source", "required", "source is required: the path to move")
	}
	if args.Destination == "" {
		return src, dst, errdefs.Invalid("/destination", "required", "destination is required: the new path")
	}
	dest := args.Destination
	if strings.HasSuffix(dest, "/") {
		_, base := splitLast(args.Source)
		if base == "" {
			return src, dst, errdefs.Invalid("/destination", "format", "destination %q ends with /, but source %q has no name to keep; give the full destination path", dest, args.Source)
		}
		dest += base
	}
	if src, err = resolve("source", args.Source); err != nil {
		return src, dst, err
	}
	if dst, err = resolve("destination", dest); err != nil {
		return src, dst, err
	}
	if err := f.refuseRoot(src, "moving"); err != nil {
		return src, dst, err
	}
	if err := f.refuseRoot(dst, "replacing"); err != nil {
		return src, dst, err
	}
	switch {
	case src.Abs == dst.Abs:
		return src, dst, errdefs.Invalid("/destination", "not", "source and destination are the same path (%s); nothing to move", display(src))
	case strings.HasPrefix(dst.Abs, src.Abs+"/"):
		return src, dst, errdefs.Invalid("/destination", "not", "cannot move %s into itself (%s)", display(src), display(dst))
	}
	return src, dst, nil
}

// moveCheck checks the source and destination entries before a move. It
// returns the source's and, when it exists, the destination's status.
func moveCheck(ps, pd *place, overwrite bool) (sst unix.Stat_t, dst *unix.Stat_t, err error) {
	sst, ok, err := ps.lstat()
	switch {
	case err != nil:
		return sst, nil, mapErr(ps.loc, err)
	case !ok:
		return sst, nil, errdefs.Failed("source %s does not exist; nothing was moved", display(ps.loc))
	}
	dstSt, exists, err := pd.lstat()
	if err != nil {
		return sst, nil, mapErr(pd.loc, err)
	}
	if !exists {
		return sst, nil, nil
	}
	skind, dkind := fileKind(sst.Mode), fileKind(dstSt.Mode)
	switch {
	case !overwrite && dkind == "directory":
		name := path.Base(ps.loc.Abs)
		return sst, nil, errdefs.Failed("destination %s is an existing directory; nothing was moved. To move %s into it, "+
			"give destination %s/%s (or end it with /); to replace it, set overwrite to true",
			display(pd.loc), display(ps.loc), display(pd.loc), name)
	case !overwrite:
		return sst, nil, errdefs.Failed("destination %s exists (a %s); nothing was moved. Set overwrite to true to replace it, or choose another destination",
			display(pd.loc), dkind)
	case dkind == "directory" && skind != "directory":
		return sst, nil, errdefs.Failed("destination %s is a directory and source %s is not; a directory can only be replaced by a directory",
			display(pd.loc), display(ps.loc))
	case dkind != "directory" && skind == "directory":
		return sst, nil, errdefs.Failed("destination %s is a %s and source %s is a directory; delete the destination first",
			display(pd.loc), dkind, display(ps.loc))
	}
	return sst, &dstSt, nil
}

func (f *FileOperations) movePath(ctx context.Context, call *tools.Call, _ *tools.Sink) (*tools.Result, error) {
	var args moveArgs
	if err := bind(call, &args); err != nil {
		return nil, err
	}
	src, dst, err := f.moveTargets(args, func(field, p string) (workspace.Location, error) {
		return f.locate(call, field, p, false)
	})
	if err != nil {
		return nil, err
	}
	unlock, err := f.locks.lock(ctx, src.Abs, dst.Abs)
	if err != nil {
		return nil, ctxError(ctx, call.Operation)
	}
	defer unlock()
	ps, err := f.openPlace(src, false)
	if err != nil {
		return nil, notThere(src, err)
	}
	defer ps.close()
	f.guardRead(ps, call, args.Source)
	if _, ok, err := ps.lstat(); err == nil && !ok {
		return nil, errdefs.Failed("source %s does not exist; nothing was moved", display(src))
	}
	pd, err := f.openPlace(dst, true)
	if err != nil {
		return nil, err
	}
	defer pd.close()
	sst, dstSt, err := moveCheck(ps, pd, args.Overwrite)
	if err != nil {
		return nil, err
	}

	copied := false
	flags := uint(unix.RENAME_NOREPLACE)
	if args.Overwrite {
		flags = 0
	}
	err = unix.Renameat2(ps.fd, ps.name, pd.fd, pd.name, flags)
	if flags != 0 && (err == unix.EINVAL || err == unix.ENOSYS || err == unix.ENOTSUP) {
		// No RENAME_NOREPLACE on this file system: the destination was
		// checked under the lock above, which holds off every other call.
		err = unix.Renameat(ps.fd, ps.name, pd.fd, pd.name)
	}
	switch {
	case err == unix.EXDEV:
		if fileKind(sst.Mode) != "file" {
			return nil, errdefs.Failed("%s and %s are on different file systems, and move_path moves only files between them; "+
				"nothing was moved. Copy the %s with a shell command instead", display(src), display(dst), fileKind(sst.Mode))
		}
		if err := copyAcross(ctx, ps, pd, sst, args.Overwrite); err != nil {
			return nil, err
		}
		copied = true
	case err == unix.EEXIST && flags != 0:
		return nil, errdefs.Failed("destination %s was created meanwhile; nothing was moved. Set overwrite to true to replace it", display(dst))
	case err == unix.ENOTEMPTY || err == unix.EEXIST:
		return nil, errdefs.Failed("destination %s is a directory that is not empty; nothing was moved. Delete it first (delete_path with recursive) or choose another destination", display(dst))
	case err != nil:
		return nil, mapErr(src, &fs.PathError{Op: "rename", Path: src.Given, Err: err})
	}
	_ = unix.Fsync(pd.fd)
	if ps.fd != pd.fd {
		_ = unix.Fsync(ps.fd)
	}

	kind := fileKind(sst.Mode)
	var text strings.Builder
	fmt.Fprintf(&text, "Moved the %s %s to %s", kind, display(src), display(dst))
	structured := map[string]any{"source": display(src), "destination": display(dst), "type": kind, "replaced": dstSt != nil}
	if dstSt != nil {
		fmt.Fprintf(&text, ", replacing the %s that was there", fileKind(dstSt.Mode))
	}
	text.WriteString(".")
	if copied {
		text.WriteString(" (They are on different file systems: the file was copied and the source deleted.)")
		structured["copied"] = true
	}
	f.notes(&text, structured, pd, writeResult{})
	return &tools.Result{Text: text.String(), Structured: structured}, nil
}

// copyAcross moves the regular file of ps to pd across file systems: it
// copies it to a temporary file next to the destination, puts that in
// place (replacing the destination only when overwrite) and then removes
// the source. The copy keeps the source's mode and, where it may, owner.
func copyAcross(ctx context.Context, ps, pd *place, sst unix.Stat_t, overwrite bool) error {
	fd, err := scan.OpenAt(ps.fd, ps.name, 0)
	if err != nil {
		if err == unix.ELOOP {
			err = errSwapped
		}
		return mapErr(ps.loc, &fs.PathError{Op: "open", Path: ps.loc.Given, Err: err})
	}
	in := os.NewFile(uintptr(fd), ps.name)
	defer in.Close()
	if ps.check != nil {
		// Copying a file reads it: not a sensitive file's other name.
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			return mapErr(ps.loc, &fs.PathError{Op: "stat", Path: ps.loc.Given, Err: err})
		}
		if err := ps.check(&st); err != nil {
			return err
		}
	}
	_, err = pd.replace(func(out *os.File) error {
		_, err := io.Copy(out, readerCtx{ctx, in})
		return err
	}, !overwrite, &sst)
	switch {
	case err == errExists:
		return errdefs.Failed("destination %s was created meanwhile; nothing was moved. Set overwrite to true to replace it", display(pd.loc))
	case ctx.Err() != nil:
		return ctxError(ctx, "move_path")
	case err != nil:
		return mapErr(pd.loc, err)
	}
	if err := unix.Unlinkat(ps.fd, ps.name, 0); err != nil {
		return errdefs.Wrap(errdefs.ErrFailed, err, "%s was copied to %s, but the source could not be deleted (%v); delete it yourself to finish the move",
			display(ps.loc), display(pd.loc), err)
	}
	return nil
}

// readerCtx is a reader that stops when ctx is done.
type readerCtx struct {
	ctx context.Context
	r   io.Reader
}

func (r readerCtx) Read(p []byte) (int, error) {
	if err := r.ctx.Err(); err != nil {
		return 0, err
	}
	return r.r.Read(p)
}

func (f *FileOperations) previewMove(ctx context.Context, call *tools.Call) (string, error) {
	var args moveArgs
	if err := bind(call, &args); err != nil {
		return "", err
	}
	readable := true
	src, dst, err := f.moveTargets(args, func(field, p string) (workspace.Location, error) {
		loc, ok, err := f.previewTarget(call, field, p, false)
		readable = readable && ok
		return loc, err
	})
	if err != nil {
		return "", err
	}
	where := func(loc workspace.Location) string {
		if loc.Inside {
			return loc.Rel
		}
		return loc.Abs + " (outside the workspace)"
	}
	if !readable {
		s := fmt.Sprintf("Would move %s to %s", where(src), where(dst))
		if args.Overwrite {
			s += ", replacing it if it exists"
		}
		return s + ".", nil
	}
	ps, err := f.openPlace(src, false)
	if err != nil {
		return "", notThere(src, err)
	}
	defer ps.close()
	pd, ok, err := f.peekPlace(dst)
	if err != nil {
		return "", err
	}
	var sst unix.Stat_t
	var dstSt *unix.Stat_t
	if ok {
		defer pd.close()
		if sst, dstSt, err = moveCheck(ps, pd, args.Overwrite); err != nil {
			return "", err
		}
	} else {
		var exists bool
		if sst, exists, err = ps.lstat(); err != nil || !exists {
			return "", errdefs.Failed("source %s does not exist; nothing would be moved", display(src))
		}
	}
	kind := fileKind(sst.Mode)
	var b strings.Builder
	fmt.Fprintf(&b, "Would move the %s %s", kind, where(src))
	if kind == "file" {
		fmt.Fprintf(&b, " (%s)", tools.HumanSize(sst.Size))
	}
	if kind == "directory" {
		c := countTree(ctx, ps)
		fmt.Fprintf(&b, " (%s)", c)
	}
	fmt.Fprintf(&b, " to %s", where(dst))
	if dstSt != nil {
		fmt.Fprintf(&b, ", replacing the existing %s", fileKind(dstSt.Mode))
		if fileKind(dstSt.Mode) == "file" {
			fmt.Fprintf(&b, " (%s)", tools.HumanSize(dstSt.Size))
		}
	}
	if !ok {
		b.WriteString(", creating its parent directories")
	}
	b.WriteString(".")
	return b.String(), nil
}
