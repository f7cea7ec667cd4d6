package fileops

import (
	"cmp"
	"context"
	"fmt"
	"github.com/toold/toold/pkg/tools/fileops/internal/scan"
	"io/fs"
	"path"
	"slices"
	"strings"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/tools"
)

var listDirOp = &operation{
	name: "list_dir",
	description: "List a directory: subdirectories first (with a trailing /), then files with their sizes, " +
		"each group in name order; symlinks show their target (name@ -> target). " +
		"With depth > 1, a tree indented by two spaces per level. Hidden files are listed; " +
		".git and entries matched by .gitignore are not.",
	risk:     tools.RiskLow,
	fast:     true,
	schema:   listDirSchema,
	describe: (*FileOperations).describeListDir,
	run:      (*FileOperations).listDir,
}

// maxListDepth is the deepest tree list_dir shows.
const maxListDepth = 10

// maxListCollect bounds the entries a listing collects; past it the walk
// stops and the total is reported as a lower bound.
const maxListCollect = 200_000

func listDirSchema(l tools.Limits) string {
	return fmt.Sprintf(`{
  "type": "object",
  "properties": {
    "path": {
      "type": "string",
      "default": ".",
      "description": "Directory to list, relative to the workspace root (an absolute path inside the workspace also works). Defaults to the workspace root."
    },
    "depth": {
      "type": "integer",
      "minimum": 1,
      "maximum": %d,
      "default": 1,
      "description": "How many levels to show: 1 lists the directory itself, 2 also the contents of its subdirectories, and so on. At most %d entries are shown."
    }
  },
  "additionalProperties": false
}`, maxListDepth, l.ListItems)
}

type listDirArgs struct {
	Path  string `json:"path"`
	Depth intArg `json:"depth"`
}

func (f *FileOperations) describeListDir(call *tools.Call) tools.Effect {
	p, _ := call.Args["path"].(string)
	p = orDefault(p)
	return tools.Effect{Display: "Listing directory: " + clip(p), Reads: []string{p}}
}

// listEntry is one entry of a listing.
type listEntry struct {
	rel    string
	name   string
	kind   string // "dir", "file", "symlink" or "other"
	size   int64  // files only
	target string // symlinks only
	depth  int    // 1 for the listed directory's entries
}

// listVisitor collects the entries of a walk.
type listVisitor struct {
	per   [][]listEntry // per worker
	count atomic.Int64
	w     *scan.Walker
}

func (v *listVisitor) add(worker int, e listEntry) {
	if v.count.Add(1) > maxListCollect {
		v.w.Abort()
		return
	}
	v.per[worker] = append(v.per[worker], e)
}

func (v *listVisitor) Dir(worker int, parent *scan.Node, name, rel string) bool {
	v.add(worker, listEntry{rel: rel, name: name, kind: "dir", depth: parent.Depth + 1})
	return true
}

func (v *listVisitor) File(worker int, parent *scan.Node, name string, typ fs.FileMode) {
	e := listEntry{rel: parent.Child(name), name: name, kind: "other", depth: parent.Depth + 1}
	switch {
	case typ.IsRegular():
		e.kind = "file"
		var st unix.Stat_t
		if unix.Fstatat(parent.Fd, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil {
			e.size = st.Size
		}
	case typ&fs.ModeSymlink != 0:
		e.kind = "symlink"
		buf := make([]byte, 256)
		for {
			n, err := unix.Readlinkat(parent.Fd, name, buf)
			if err != nil {
				break
			}
			if n < len(buf) {
				e.target = scan.ValidText(buf[:n])
				break
			}
			buf = make([]byte, 2*len(buf))
		}
	}
	v.add(worker, e)
}

func (f *FileOperations) listDir(ctx context.Context, call *tools.Call, _ *tools.Sink) (*tools.Result, error) {
	var args listDirArgs
	if err := bind(call, &args); err != nil {
		return nil, err
	}
	depth := int(args.Depth)
	switch {
	case depth == 0:
		depth = 1
	case depth < 1 || depth > maxListDepth:
		return nil, errdefs.Invalid("/depth", "maximum", "depth must be from 1 to %d, not %d", maxListDepth, depth)
	}
	t, err := f.locateRead(call, "path", orDefault(args.Path))
	if err != nil {
		return nil, err
	}
	defer t.close()
	rel := t.show
	start, err := t.openDir("list_dir")
	if err != nil {
		return nil, err
	}
	start.Ign = f.startIgnores(t)
	v := &listVisitor{}
	w := scan.NewWalker(scan.Config{Dotfiles: true, MaxDepth: depth, Inline: true, Withhold: f.withholdFor(t)}, v)
	v.w = w
	v.per = make([][]listEntry, w.Cfg.Workers)
	complete := w.Run(ctx, start)
	if ctx.Err() != nil {
		return nil, ctxError(ctx, "list_dir")
	}

	// Group by directory, sort, and render depth first.
	children := map[string][]*listEntry{}
	total := 0
	for _, es := range v.per {
		for i := range es {
			e := &es[i]
			parent := path.Dir(e.rel)
			children[parent] = append(children[parent], e)
			total++
		}
	}
	for _, es := range children {
		slices.SortFunc(es, func(a, b *listEntry) int {
			if (a.kind == "dir") != (b.kind == "dir") {
				if a.kind == "dir" {
					return -1
				}
				return 1
			}
			return cmp.Compare(a.name, b.name)
		})
	}
	var (
		out     strings.Builder
		shown   []map[string]any
		walkDir func(dir string)
	)
	walkDir = func(dir string) {
		for _, e := range children[dir] {
			if len(shown) == f.limits.ListItems {
				return
			}
			out.WriteString(strings.Repeat("  ", e.depth-1))
			item := map[string]any{"path": e.rel, "type": e.kind}
			switch e.kind {
			case "dir":
				out.WriteString(e.name + "/")
			case "file":
				fmt.Fprintf(&out, "%s (%s)", e.name, tools.HumanSize(e.size))
				item["size"] = e.size
			case "symlink":
				fmt.Fprintf(&out, "%s@ -> %s", e.name, e.target)
				item["target"] = e.target
			default:
				out.WriteString(e.name + " (special file)")
			}
			out.WriteByte('\n')
			shown = append(shown, item)
			if e.kind == "dir" {
				walkDir(e.rel)
			}
		}
	}
	walkDir(rel)

	res := &tools.Result{}
	ignored := w.Ignored.Load()
	totalText := fmt.Sprint(total)
	if !complete {
		totalText = fmt.Sprintf("at least %d", total)
	}
	if total == 0 {
		out.WriteString("(empty directory)\n")
	}
	var notes []string
	if len(shown) < total {
		notes = append(notes, fmt.Sprintf("... %d more entries not shown (%s in total). List a subdirectory or use a smaller depth to see them.",
			total-len(shown), totalText))
		res.Truncation = &tools.Truncation{
			ShownItems:   uint64(len(shown)),
			TotalItems:   uint64(total),
			Continuation: "list a subdirectory or use a smaller depth",
		}
	}
	if ignored > 0 {
		notes = append(notes, fmt.Sprintf("(%s matched by .gitignore not listed.)", plural(int(ignored), "entry", "entries")))
	}
	if n := w.Errs.Load(); n > 0 {
		notes = append(notes, fmt.Sprintf("(%s could not be read.)", plural(int(n), "directory", "directories")))
	}
	withheld := w.Withheld.Load()
	if withheld > 0 {
		notes = append(notes, withheldNote(withheld))
	}
	out.WriteString(strings.Join(notes, "\n"))
	res.Text = strings.TrimRight(out.String(), "\n")
	res.Structured = map[string]any{
		"path":          rel,
		"depth":         depth,
		"entries":       shown,
		"total_entries": total,
		"ignored":       ignored,
		"complete":      complete,
	}
	if withheld > 0 {
		res.Structured["withheld"] = withheld
	}
	return res, nil
}
