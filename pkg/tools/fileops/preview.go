package fileops

import (
	"context"
	"errors"
	"fmt"
	"github.com/toold/toold/pkg/tools/fileops/internal/scan"
	"io/fs"
	"strings"

	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/tools"
	"github.com/toold/toold/pkg/workspace"
)

// Previews: what a call would change, shown to the person asked to approve
// it. A preview changes nothing and takes no lock. It resolves paths as Run
// does; a call that Run would refuse (old_string not found, a file that
// create_file would overwrite) fails in the preview already, so the model
// gets the error without a person being asked. A path outside the
// workspace that the call was not (yet) allowed is described, not read.

// previewTarget resolves a path for a preview. readable reports whether the
// preview may look at it: inside the workspace, or outside where the call
// was allowed.
func (f *FileOperations) previewTarget(call *tools.Call, field, p string, follow bool) (loc workspace.Location, readable bool, err error) {
	loc, err = f.resolvePath(field, p, follow)
	if err != nil {
		return loc, false, err
	}
	if err := f.checkUse(f.use(call, p, loc)); err != nil {
		return loc, false, err
	}
	return loc, loc.Inside || call.OutsideAllowed(loc.Abs), nil
}

// peekPlace opens the parent directory of loc to look at the entry. ok is
// false when the parent directory does not exist (nor, then, the entry).
func (f *FileOperations) peekPlace(loc workspace.Location) (p *place, ok bool, err error) {
	p, err = f.openPlace(loc, false)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, false, nil
		}
		return nil, false, err
	}
	return p, true, nil
}

// outsideNote is the description of a location a preview may not read.
func outsideNote(loc workspace.Location) string {
	if loc.Exists {
		return fmt.Sprintf("%s (outside the workspace; it exists, and its content is not shown)", loc.Abs)
	}
	return fmt.Sprintf("%s (outside the workspace; it does not exist yet)", loc.Abs)
}

func (f *FileOperations) previewWrite(ctx context.Context, call *tools.Call) (string, error) {
	args, err := bindWrite(call)
	if err != nil {
		return "", err
	}
	content := *args.Content
	exclusive := call.Operation == "create_file"
	loc, readable, err := f.previewTarget(call, "path", args.Path, true)
	if err != nil {
		return "", err
	}
	size := fmt.Sprintf("%s, %s", plural(countLines(content), "line", "lines"), tools.HumanSize(int64(len(content))))
	if !readable {
		return fmt.Sprintf("Would write %s to %s.", size, outsideNote(loc)), nil
	}
	name := display(loc)
	p, ok, err := f.peekPlace(loc)
	if err != nil {
		return "", err
	}
	var before []byte
	exists := false
	if ok {
		defer p.close()
		f.guardRead(p, call, args.Path)
		var rerr error
		before, _, exists, rerr = p.read(maxEditBytes)
		switch {
		case exists && exclusive:
			return "", f.writeError(loc, errExists, call.Operation)
		case errors.Is(rerr, errTooLarge):
			return fmt.Sprintf("Would replace %s (larger than %s; not diffed) with %s.", name, tools.HumanSize(maxEditBytes), size), nil
		case errors.Is(rerr, errNotRegular):
			return "", f.writeError(loc, rerr, call.Operation)
		case rerr != nil:
			return "", mapErr(loc, rerr)
		}
	}
	if exists {
		if mt, bin := scan.BinaryKind(name, before); bin {
			return fmt.Sprintf("Would replace the binary file %s (%s, %s) with %s.", name, mt, tools.HumanSize(int64(len(before))), size), nil
		}
		if string(before) == content {
			return fmt.Sprintf("No change: %s already has this content.", name), nil
		}
	}
	if !exists && content == "" {
		return fmt.Sprintf("Would create the empty file %s.", name), nil
	}
	diff, _ := unifiedDiff(name, string(before), content, nil, !exists)
	diff, _ = capDiff(diff, maxPreviewDiff)
	return diff, nil
}

func (f *FileOperations) previewEdit(ctx context.Context, call *tools.Call) (string, error) {
	args, old, new, err := bindEdit(call)
	if err != nil {
		return "", err
	}
	loc, readable, err := f.previewTarget(call, "path", args.Path, true)
	if err != nil {
		return "", err
	}
	if !readable {
		var b strings.Builder
		fmt.Fprintf(&b, "Would edit %s, replacing", outsideNote(loc))
		if args.ReplaceAll {
			b.WriteString(" every occurrence of")
		}
		b.WriteString(":\n")
		for _, l := range splitLines(old) {
			b.WriteString("-" + l + "\n")
		}
		b.WriteString("with:\n")
		for _, l := range splitLines(new) {
			b.WriteString("+" + l + "\n")
		}
		s, _ := capDiff(scan.ValidText([]byte(b.String())), maxPreviewDiff)
		return s, nil
	}
	name := display(loc)
	p, ok, err := f.peekPlace(loc)
	if err != nil {
		return "", err
	}
	if !ok {
		if old != "" {
			return "", errdefs.Failed("%s does not exist. To create it, use create_file (or edit_file with an empty old_string)", name)
		}
		d, _ := unifiedDiff(name, "", new, nil, true)
		d, _ = capDiff(d, maxPreviewDiff)
		return d, nil
	}
	defer p.close()
	f.guardRead(p, call, args.Path)
	e, err := planFileEdit(p, name, old, new, args.ReplaceAll)
	if err != nil {
		return "", err
	}
	d, _, complete := e.diff(name)
	if !complete {
		d += fmt.Sprintf("[the diff shows the first %d of %d replacements]\n", maxDiffEdits, len(e.plan.lines))
	}
	d, _ = capDiff(d, maxPreviewDiff)
	return d, nil
}
