package fileops

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"

	udiff "github.com/aymanbagabas/go-udiff"
	"golang.org/x/sys/unix"

	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/tools"
	"github.com/toold/toold/pkg/tools/fileops/internal/scan"
	"github.com/toold/toold/pkg/workspace"
)

// apply_patch: codex's patch format (patch_parse.go) applied to the
// workspace all or nothing.
//
// A call parses the patch, resolves and checks every path it names (each
// one through locate, as any write), locks them all at once (locks.go
// orders the keys, so two patches cannot deadlock), reads the files and
// computes every new content in memory, following the patch's sections in
// order (a later section sees what an earlier one did to the same file).
// Nothing is written until all of that succeeded. Then it writes: new and
// changed files first (each atomically, atomic.go), deletions last. When a
// step fails, the steps already done are undone in reverse order (a
// written file gets its old content back, a created file and the
// directories made for it are removed, a deleted file is written again
// with its old content and mode), and the error says what failed and that
// nothing was changed, or, should an undo itself fail, which files are
// left changed.
//
// Where codex's own apply_patch differs: it writes as it goes and leaves
// the sections before a failure applied; this one changes nothing. Paths
// are confined to the workspace like every path here. Otherwise codex's
// semantics hold: Add File replaces an existing file, Move to replaces an
// existing destination, Delete File deletes files only, an updated file
// ends with a newline, a pure addition (no old lines) goes at the end of
// the file. Line endings: an updated file keeps its CRLF line endings
// (patch lines match it without the CR); new files get LF.

const applyPatchDescription = "Edit files with a patch in codex's apply_patch format (the format OpenAI's models know): " +
	"several files in one call, all or nothing. The patch starts with *** Begin Patch and ends with *** End Patch; " +
	"in between, one section per file: *** Add File: <path> followed by the new file's lines, each prefixed with +; " +
	"*** Delete File: <path>; *** Update File: <path>, optionally followed by *** Move to: <new path>, then hunks, " +
	"each introduced by @@ (optionally followed by a line such as a class or function definition that locates the hunk; " +
	"several @@ lines narrow it step by step), with lines prefixed by ' ' (context: 3 lines before and after each change), " +
	"'-' (removed) or '+' (added); *** End of File after a hunk anchors it at the end of the file. " +
	"Paths are relative to the workspace root. Context lines are matched exactly, then ignoring surrounding whitespace and " +
	"typographic punctuation. If any file cannot be patched, nothing is changed and the error says which file and which lines " +
	"were not found. Example: *** Begin Patch\n*** Update File: src/app.py\n@@ def greet():\n-print(\"Hi\")\n+print(\"Hello, world!\")\n*** End Patch"

var applyPatchOp = &operation{
	name:        "apply_patch",
	description: applyPatchDescription,
	risk:        tools.RiskMedium,
	schema:      applyPatchSchema,
	describe:    (*FileOperations).describePatch,
	run:         (*FileOperations).applyPatch,
	preview:     (*FileOperations).previewPatch,
}

func applyPatchSchema(tools.Limits) string {
	return `{
  "type": "object",
  "properties": {
    "input": {
      "type": "string",
      "minLength": 1,
      "description": "The entire contents of the apply_patch command: the patch, from *** Begin Patch to *** End Patch."
    }
  },
  "required": ["input"],
  "additionalProperties": false
}`
}

type patchArgs struct {
	Input string `json:"input"`
}

// Bounds of one patch: the file sections it may have, and the bytes of
// the files it reads and writes, which it holds in memory until it commits.
const (
	maxPatchFiles = 1000
	maxPatchBytes = 64 << 20
)

func (f *FileOperations) describePatch(call *tools.Call) tools.Effect {
	input, _ := call.Args["input"].(string)
	hunks, err := parsePatch(input)
	if err != nil || len(hunks) == 0 {
		// Run refuses it before touching anything.
		return tools.Effect{Display: "Applying patch (invalid)"}
	}
	var e tools.Effect
	var names []string
	for _, h := range hunks {
		names = append(names, h.path)
		e.Writes = append(e.Writes, h.path)
		if h.op != patchAdd {
			e.Reads = append(e.Reads, h.path)
		}
		if h.op == patchDelete || h.moveTo != "" {
			// What delete_path and move_path do: high risk there too.
			e.Risk = tools.RiskHigh
		}
		if h.moveTo != "" {
			names = append(names, h.moveTo)
			e.Writes = append(e.Writes, h.moveTo)
		}
	}
	e.Reads, e.Writes = unique(e.Reads), unique(e.Writes)
	shown := names
	if len(shown) > 3 {
		shown = shown[:3]
	}
	for i, n := range shown {
		shown[i] = clip(n)
	}
	e.Display = "Applying patch: " + strings.Join(shown, ", ")
	if len(names) > 3 {
		e.Display += fmt.Sprintf(" and %d more", len(names)-3)
	}
	return e
}

// unique returns s without repeated strings, in order.
func unique(s []string) []string {
	seen := make(map[string]bool, len(s))
	return slices.DeleteFunc(s, func(x string) bool {
		if seen[x] {
			return true
		}
		seen[x] = true
		return false
	})
}

// parsePatchArg parses the patch of a call, for the model: an error of the
// patch text is ErrInvalidArgument with codex's wording.
func parsePatchArg(call *tools.Call) ([]patchHunk, error) {
	var args patchArgs
	if err := bind(call, &args); err != nil {
		return nil, err
	}
	hunks, err := parsePatch(args.Input)
	var pe *patchError
	switch {
	case errors.As(err, &pe):
		return nil, errdefs.Invalid("/input", "format", "%s. Nothing was changed.", pe.Error())
	case err != nil:
		return nil, err
	case len(hunks) == 0:
		return nil, errdefs.Invalid("/input", "format", "No files were modified: the patch has no file sections "+
			"(*** Add File: <path>, *** Delete File: <path> or *** Update File: <path>).")
	case len(hunks) > maxPatchFiles:
		return nil, errdefs.Invalid("/input", "maxItems", "the patch has %d file sections, more than the %d one patch may have; split it", len(hunks), maxPatchFiles)
	}
	for _, h := range hunks {
		for _, p := range []string{h.path, h.moveTo} {
			if strings.HasSuffix(p, "/") {
				return nil, errdefs.Invalid("/input", "format", "the path %q in the patch ends with /, which names a directory; "+
					"apply_patch adds, updates and deletes files. Nothing was changed.", p)
			}
		}
		if strings.TrimSpace(h.path) == "" {
			return nil, errdefs.Invalid("/input", "format", "a file section of the patch has no path (*** Add File: <path>, "+
				"*** Delete File: <path>, *** Update File: <path>). Nothing was changed.")
		}
	}
	return hunks, nil
}

// patchFile is a file a patch touches, as planned: what it was and what it
// becomes.
type patchFile struct {
	loc   workspace.Location
	given string
	// p is the entry's place; nil when its parent directory does not exist
	// (yet): the commit creates it.
	p       *place
	existed bool
	orig    []byte
	origSt  unix.Stat_t
	exists  bool
	cur     string
	// changed says the patch writes the file (its content may still be
	// the same).
	changed bool
}

// patchPlan is a patch applied in memory.
type patchPlan struct {
	files []*patchFile // in the order the patch first names them
	byAbs map[string]*patchFile
	// summary lines, codex's: "A path", "M path", "D path".
	added, modified, deleted []string
	// diffs are the sections' changes, in the patch's order.
	diffs []patchDiff
	// steps counts the files committed (testCrashStep).
	steps int
}

type patchDiff struct {
	action   string     // add, update, move or delete
	from, to *patchFile // from nil for an added file, to nil for a deleted one
	// before and after are the file's content before and after the
	// section (a later section may change the same file again).
	before, after string
}

func (pl *patchPlan) close() {
	for _, pf := range pl.files {
		if pf.p != nil {
			pf.p.close()
		}
	}
}

// patchTarget is how a plan resolves and opens a path.
type patchTarget struct {
	// resolve resolves a path of the patch; follow as in resolvePath.
	resolve func(given string, follow bool) (workspace.Location, error)
	// open opens its place for reading, nil when the parent directory does
	// not exist.
	open func(loc workspace.Location, given string) (*place, error)
}

// planPatch applies hunks in memory. It returns the plan, also with an
// error, when it opened places; the caller closes it.
func (f *FileOperations) planPatch(ctx context.Context, hunks []patchHunk, t patchTarget) (*patchPlan, error) {
	pl := &patchPlan{byAbs: map[string]*patchFile{}}
	held := 0 // bytes of content held in memory, roughly
	tooMuch := func() error {
		return errdefs.Failed("the files this patch reads and writes come to more than %s, the most one patch holds; "+
			"split it into several patches. Nothing was changed.", tools.HumanSize(maxPatchBytes))
	}
	file := func(given string, follow bool) (*patchFile, error) {
		loc, err := t.resolve(given, follow)
		if err != nil {
			return nil, err
		}
		if err := f.refuseRoot(loc, "patching"); err != nil {
			return nil, err
		}
		if pf, ok := pl.byAbs[loc.Abs]; ok {
			return pf, nil
		}
		pf := &patchFile{loc: loc, given: given}
		pl.byAbs[loc.Abs] = pf
		pl.files = append(pl.files, pf)
		if pf.p, err = t.open(loc, given); err != nil {
			return nil, err
		}
		if pf.p == nil {
			return pf, nil
		}
		st, ok, err := pf.p.lstat()
		switch {
		case err != nil:
			return nil, mapErr(loc, err)
		case !ok:
			return pf, nil
		case st.Mode&unix.S_IFMT == unix.S_IFDIR:
			return nil, errdefs.Failed("%s is a directory; apply_patch adds, updates and deletes files only. Nothing was changed.", display(loc))
		case st.Mode&unix.S_IFMT == unix.S_IFLNK:
			return nil, errdefs.Failed("%s is a symlink; apply_patch does not delete or move symlinks (delete_path and move_path do). Nothing was changed.", display(loc))
		}
		data, st, _, err := pf.p.read(maxEditBytes)
		switch {
		case errors.Is(err, errTooLarge):
			return nil, errdefs.Failed("%s is larger than %s, the most apply_patch edits; change it with a shell command. Nothing was changed.", display(loc), tools.HumanSize(maxEditBytes))
		case errors.Is(err, errNotRegular):
			return nil, errdefs.Failed("%s is not a regular file; apply_patch edits text files only. Nothing was changed.", display(loc))
		case err != nil:
			return nil, mapErr(loc, err)
		}
		pf.existed, pf.exists, pf.orig, pf.origSt, pf.cur = true, true, data, st, string(data)
		held += 2 * len(data)
		return pf, nil
	}
	for _, h := range hunks {
		if err := ctx.Err(); err != nil {
			return pl, ctxError(ctx, "apply_patch")
		}
		if held > maxPatchBytes {
			return pl, tooMuch()
		}
		switch h.op {
		case patchAdd:
			pf, err := file(h.path, true)
			if err != nil {
				return pl, err
			}
			d := patchDiff{action: "add", to: pf}
			if pf.exists {
				// Add File replaces an existing file, as in codex.
				d.from, d.before = pf, pf.cur
			}
			pf.cur, pf.exists, pf.changed = h.contents, true, true
			held += len(h.contents)
			pl.added = append(pl.added, display(pf.loc))
			d.after = h.contents
			pl.diffs = append(pl.diffs, d)
		case patchDelete:
			pf, err := file(h.path, false)
			if err != nil {
				return pl, err
			}
			if !pf.exists {
				return pl, errdefs.Failed("Failed to delete file %s: it does not exist. Nothing was changed.", display(pf.loc))
			}
			pl.diffs = append(pl.diffs, patchDiff{action: "delete", from: pf, before: pf.cur})
			pf.exists, pf.cur, pf.changed = false, "", true
			pl.deleted = append(pl.deleted, display(pf.loc))
		case patchUpdate:
			pf, err := file(h.path, h.moveTo == "")
			if err != nil {
				return pl, err
			}
			name := display(pf.loc)
			if !pf.exists {
				return pl, errdefs.Failed("Failed to read file to update %s: it does not exist. Use *** Add File: to create it. Nothing was changed.", name)
			}
			if mt, bin := scan.BinaryKind(name, []byte(pf.cur)); bin {
				return pl, errdefs.Failed("%s is a binary file (%s); apply_patch edits text files only. Nothing was changed.", name, mt)
			}
			after, err := updateContent(pf.cur, name, h.chunks)
			if err != nil {
				return pl, err
			}
			before := pf.cur
			dst := pf
			if h.moveTo != "" {
				if dst, err = file(h.moveTo, true); err != nil {
					return pl, err
				}
				if dst != pf {
					pf.exists, pf.cur, pf.changed = false, "", true
				}
			}
			dst.cur, dst.exists, dst.changed = after, true, true
			held += len(after)
			pl.modified = append(pl.modified, display(dst.loc))
			action := "update"
			if dst != pf {
				action = "move"
			}
			pl.diffs = append(pl.diffs, patchDiff{action: action, from: pf, to: dst, before: before, after: after})
		}
	}
	if held > maxPatchBytes {
		return pl, tooMuch()
	}
	return pl, nil
}

// updateContent applies the chunks of an update to content.
func updateContent(content, name string, chunks []patchChunk) (string, error) {
	eol := lineEnding(content)
	lines := []string{}
	if content != "" {
		lines = strings.Split(content, "\n")
		if lines[len(lines)-1] == "" {
			lines = lines[:len(lines)-1]
		}
		if eol == "\r\n" {
			for i, l := range lines {
				lines[i] = strings.TrimSuffix(l, "\r")
			}
		}
	}
	out, err := applyChunks(lines, name, chunks)
	var he *hunkError
	if errors.As(err, &he) {
		return "", hunkFailure(he, content, name)
	}
	if err != nil {
		return "", err
	}
	if len(out) == 0 {
		return "", nil
	}
	if out[len(out)-1] != "" {
		out = append(out, "")
	}
	return strings.Join(out, eol), nil
}

// hunkFailure is codex's error for a hunk that does not fit, with the most
// similar lines of the file added, numbered, so that the model can correct
// the patch without reading the file again.
func hunkFailure(he *hunkError, content, name string) error {
	var msg strings.Builder
	msg.WriteString(he.msg)
	fileLines := splitLines(content)
	want := slices.DeleteFunc(slices.Clone(he.want), func(s string) bool { return strings.TrimSpace(s) == "" })
	if content != "" && len(want) > 0 {
		if start, n, score := closestWindow(fileLines, want); score >= minSimilarity {
			fmt.Fprintf(&msg, "\nThe most similar lines of %s are at %s (%d%% similar):\n", name, span(start, n), int(score*100))
			showLines(&msg, fileLines, start, n)
		} else {
			fmt.Fprintf(&msg, "\nNo lines of %s are similar; read it again (read_file), it may have changed.", name)
		}
	}
	return errdefs.Failed("%s\nNothing was changed.", strings.TrimRight(msg.String(), "\n"))
}

// testHookPatchPlanned, when set by a test, runs after a patch was planned
// and before its first write.
var testHookPatchPlanned func()

func (f *FileOperations) applyPatch(ctx context.Context, call *tools.Call, _ *tools.Sink) (*tools.Result, error) {
	hunks, err := parsePatchArg(call)
	if err != nil {
		return nil, err
	}
	// Resolve and check every path before taking any lock.
	var abs []string
	for _, h := range hunks {
		for _, p := range []string{h.path, h.moveTo} {
			if p == "" {
				continue
			}
			loc, err := f.locate(call, "input", p, !(h.op == patchDelete || (h.moveTo != "" && p == h.path)))
			if err != nil {
				return nil, err
			}
			abs = append(abs, loc.Abs)
		}
	}
	unlock, err := f.locks.lock(ctx, abs...)
	if err != nil {
		return nil, ctxError(ctx, call.Operation)
	}
	defer unlock()
	pl, err := f.planPatch(ctx, hunks, patchTarget{
		resolve: func(given string, follow bool) (workspace.Location, error) {
			return f.locate(call, "input", given, follow)
		},
		open: func(loc workspace.Location, given string) (*place, error) {
			p, err := f.openPlace(loc, false)
			if errors.Is(err, fs.ErrNotExist) {
				return nil, nil
			}
			if err != nil {
				return nil, err
			}
			f.guardRead(p, call, given)
			return p, nil
		},
	})
	if pl != nil {
		defer pl.close()
	}
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, ctxError(ctx, call.Operation)
	}
	if testHookPatchPlanned != nil {
		testHookPatchPlanned()
	}
	testCrashStep(0)
	// The journal (journal.go) makes the patch all or nothing across a
	// crash too.
	forget, err := f.beginJournal(pl)
	if err != nil {
		return nil, errdefs.Wrap(errdefs.ErrFailed, err, "the patch's journal could not be written, so the patch was not applied: %v. Nothing was changed.", err)
	}
	testCrashStep(1)
	err = f.commitPatch(pl)
	if err == nil {
		testCrashStep(2 + pl.steps)
	}
	// Committed, or undone: either way the journal is done with (should the
	// undo itself have failed, the error says which files are left).
	forget()
	if err != nil {
		return nil, err
	}
	return patchResult(pl), nil
}

// undoStep reverts one step of a commit.
type undoStep struct {
	name string
	undo func() error
}

// commitPatch writes a plan: changed and new files, then deletions. When a
// step fails it undoes the steps done.
func (f *FileOperations) commitPatch(pl *patchPlan) error {
	var done []undoStep
	fail := func(pf *patchFile, err error) error {
		msg := errdefs.As(err).Msg
		var left []string
		for i := len(done) - 1; i >= 0; i-- {
			if uerr := done[i].undo(); uerr != nil {
				left = append(left, fmt.Sprintf("%s (%v)", done[i].name, uerr))
			}
		}
		if len(left) > 0 {
			return errdefs.Wrap(errdefs.ErrFailed, err, "applying the patch failed at %s: %s. Undoing the files written before failed too; "+
				"these are left changed: %s. Read them (read_file) before patching again.", display(pf.loc), msg, strings.Join(left, ", "))
		}
		return errdefs.Wrap(errdefs.ErrFailed, err, "applying the patch failed at %s: %s. Nothing was changed (the files written before were restored).",
			display(pf.loc), msg)
	}
	for _, pf := range pl.files {
		if !pf.changed || !pf.exists || (pf.existed && string(pf.orig) == pf.cur) {
			continue
		}
		if pf.p == nil {
			p, err := f.openPlace(pf.loc, true)
			if err != nil {
				return fail(pf, err)
			}
			pf.p = p
			if len(p.madeDirs) > 0 {
				done = append(done, undoStep{name: display(pf.loc), undo: func() error { return removeMadeDirs(p) }})
			}
		}
		p := pf.p
		if _, err := p.write([]byte(pf.cur), !pf.existed); err != nil {
			return fail(pf, f.writeError(pf.loc, err, "apply_patch"))
		}
		pl.steps++
		testCrashStep(1 + pl.steps)
		if pf.existed {
			orig := pf.orig
			done = append(done, undoStep{name: display(pf.loc), undo: func() error {
				_, err := p.write(orig, false)
				return err
			}})
		} else {
			done = append(done, undoStep{name: display(pf.loc), undo: func() error { return unix.Unlinkat(p.fd, p.name, 0) }})
		}
	}
	for _, pf := range pl.files {
		if pf.exists || !pf.existed {
			continue
		}
		p := pf.p
		if err := unix.Unlinkat(p.fd, p.name, 0); err != nil {
			return fail(pf, mapErr(pf.loc, &fs.PathError{Op: "delete", Path: pf.given, Err: err}))
		}
		orig, st := pf.orig, pf.origSt
		done = append(done, undoStep{name: display(pf.loc), undo: func() error {
			_, err := p.replace(func(w *os.File) error {
				_, err := w.Write(orig)
				return err
			}, true, &st)
			return err
		}})
		_ = unix.Fsync(p.fd)
		pl.steps++
		testCrashStep(1 + pl.steps)
	}
	return nil
}

// removeMadeDirs removes the directories openPlace created for p, innermost
// first, where they are still empty.
func removeMadeDirs(p *place) error {
	for i := len(p.madeDirs) - 1; i >= 0; i-- {
		d := p.madeDirs[i]
		if strings.HasPrefix(d, "/") {
			if err := os.Remove(d); err != nil {
				return err
			}
			continue
		}
		if err := p.root.Remove(d); err != nil {
			return err
		}
	}
	return nil
}

// patchResult is the result of an applied patch: codex's summary, then the
// diff of each file.
func patchResult(pl *patchPlan) *tools.Result {
	var text strings.Builder
	text.WriteString("Success. Updated the following files:\n")
	for _, n := range pl.added {
		text.WriteString("A " + n + "\n")
	}
	for _, n := range pl.modified {
		text.WriteString("M " + n + "\n")
	}
	for _, n := range pl.deleted {
		text.WriteString("D " + n + "\n")
	}
	diff, files, added, removed := pl.diff(false)
	shown, cut := capDiff(diff, maxResultDiff)
	fmt.Fprintf(&text, "(%s added, %s removed)\n", plural(added, "line", "lines"), plural(removed, "line", "lines"))
	if shown != "" {
		text.WriteString("\n" + shown)
	}
	return &tools.Result{
		Text: strings.TrimRight(text.String(), "\n"),
		Structured: map[string]any{
			"added": nonNil(pl.added), "modified": nonNil(pl.modified), "deleted": nonNil(pl.deleted),
			"files": files, "lines_added": added, "lines_removed": removed, "diff_truncated": cut,
		},
	}
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// diff renders the unified diffs of the plan, one per section, and counts
// their lines. withDeleted includes the removed lines of deleted files (an
// approval shows them; a result only names the file).
func (pl *patchPlan) diff(withDeleted bool) (string, []map[string]any, int, int) {
	var (
		b              strings.Builder
		files          []map[string]any
		added, removed int
	)
	for _, d := range pl.diffs {
		var (
			from, to      = "/dev/null", "/dev/null"
			before, after string
			item          = map[string]any{"action": d.action}
		)
		if d.from != nil {
			from, before = "a/"+display(d.from.loc), d.before
			item["path"] = display(d.from.loc)
		}
		if d.to != nil {
			to, after = "b/"+display(d.to.loc), d.after
			item["path"] = display(d.to.loc)
			if d.action == "move" {
				item["path"], item["moved_to"] = display(d.from.loc), display(d.to.loc)
			}
			if d.action == "add" && d.from != nil {
				item["replaced"] = true
			}
		}
		u, err := udiff.ToUnifiedDiff(from, to, before, udiff.Lines(before, after), diffContext)
		if err != nil {
			continue
		}
		a, r := 0, 0
		for _, h := range u.Hunks {
			for _, l := range h.Lines {
				switch l.Kind {
				case udiff.Insert:
					a++
				case udiff.Delete:
					r++
				}
			}
		}
		item["lines_added"], item["lines_removed"] = a, r
		added, removed = added+a, removed+r
		files = append(files, item)
		switch {
		case d.to == nil && !withDeleted:
			fmt.Fprintf(&b, "--- %s\n+++ /dev/null\n[deleted: %s]\n", from, plural(r, "line", "lines"))
		case d.from != nil && d.to != nil && d.from != d.to && len(u.Hunks) == 0:
			fmt.Fprintf(&b, "--- %s\n+++ %s\n[moved; content unchanged]\n", from, to)
		default:
			b.WriteString(scan.ValidText([]byte(u.String())))
		}
	}
	return b.String(), files, added, removed
}

func (f *FileOperations) previewPatch(ctx context.Context, call *tools.Call) (string, error) {
	hunks, err := parsePatchArg(call)
	if err != nil {
		return "", err
	}
	readable := true
	for _, h := range hunks {
		for _, p := range []string{h.path, h.moveTo} {
			if p == "" {
				continue
			}
			_, ok, err := f.previewTarget(call, "input", p, !(h.op == patchDelete || (h.moveTo != "" && p == h.path)))
			if err != nil {
				return "", err
			}
			readable = readable && ok
		}
	}
	if !readable {
		s, _ := capDiff(scan.ValidText([]byte("Would apply this patch (it names paths outside the workspace, which are not read):\n"+call.Args["input"].(string))), maxPreviewDiff)
		return s, nil
	}
	pl, err := f.planPatch(ctx, hunks, patchTarget{
		resolve: func(given string, follow bool) (workspace.Location, error) {
			loc, _, err := f.previewTarget(call, "input", given, follow)
			return loc, err
		},
		open: func(loc workspace.Location, given string) (*place, error) {
			p, ok, err := f.peekPlace(loc)
			if err != nil || !ok {
				return nil, err
			}
			f.guardRead(p, call, given)
			return p, nil
		},
	})
	if pl != nil {
		defer pl.close()
	}
	if err != nil {
		return "", err
	}
	diff, _, added, removed := pl.diff(true)
	n := len(pl.added) + len(pl.modified) + len(pl.deleted)
	head := fmt.Sprintf("Would change %s (%s added, %s removed):\n", plural(n, "file", "files"), plural(added, "line", "lines"), plural(removed, "line", "lines"))
	s, _ := capDiff(head+diff, maxPreviewDiff)
	return s, nil
}
