package fileops

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/tools"
)

var readManyFilesOp = &operation{
	name: "read_many_files",
	description: "Read several text files in one call: each is shown like read_file shows it, under a ==> path <== header. " +
		"Entries may be glob patterns (src/**/*.go), expanded like glob does. The output of all files together is capped; " +
		"files past the cap are named, to read with read_file.",
	risk:     tools.RiskLow,
	schema:   readManySchema,
	describe: (*FileOperations).describeReadMany,
	run:      (*FileOperations).readManyFiles,
}

// maxManyFiles bounds the files one read_many_files reads.
const maxManyFiles = 100

// minManyBudget is the least output budget worth starting another file
// with; below it, the remaining files are named instead.
const minManyBudget = 512

func readManySchema(l tools.Limits) string {
	return fmt.Sprintf(`{
  "type": "object",
  "properties": {
    "paths": {
      "type": "array",
      "minItems": 1,
      "maxItems": %d,
      "items": {"type": "string", "minLength": 1},
      "description": "Files to read, relative to the workspace root, or glob patterns such as internal/**/*.go. At most %d files are read, and %s of output in all."
    }
  },
  "required": ["paths"],
  "additionalProperties": false
}`, maxManyFiles, maxManyFiles, tools.HumanSize(int64(l.ReadBytes)))
}

type readManyArgs struct {
	Paths []string `json:"paths"`
}

// isPattern reports whether p is a glob pattern rather than a path.
func isPattern(p string) bool { return strings.ContainsAny(p, "*?[{") }

func (f *FileOperations) describeReadMany(call *tools.Call) tools.Effect {
	raw, _ := call.Args["paths"].([]any)
	var reads, shown []string
	for _, r := range raw {
		p, _ := r.(string)
		shown = append(shown, p)
		if isPattern(p) {
			base, _ := doublestar.SplitPattern(p)
			p = orDefault(base)
		}
		reads = append(reads, p)
	}
	return tools.Effect{Display: "Reading files: " + clip(strings.Join(shown, ", ")), Reads: reads}
}

func (f *FileOperations) readManyFiles(ctx context.Context, call *tools.Call, _ *tools.Sink) (*tools.Result, error) {
	var args readManyArgs
	if err := bind(call, &args); err != nil {
		return nil, err
	}
	if len(args.Paths) == 0 {
		return nil, errdefs.Invalid("/paths", "minItems", "paths is required: the files (or glob patterns) to read")
	}

	// Expand patterns in order, without duplicates.
	var (
		files    []string
		seen     = map[string]bool{}
		matched  = map[string]bool{} // files only a pattern named
		notes    []string
		withheld int64
		overflow bool
	)
	add := func(p string, byPattern bool) {
		key := path.Clean(p)
		if seen[key] {
			return
		}
		seen[key] = true
		matched[p] = byPattern
		if len(files) == maxManyFiles {
			overflow = true
			return
		}
		files = append(files, p)
	}
	for _, p := range args.Paths {
		if !isPattern(p) {
			add(p, false)
			continue
		}
		res, err := f.glob(ctx, &tools.Call{Tool: ToolName, Operation: "glob", Args: map[string]any{"pattern": p}, Outside: call.Outside}, nil)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctxError(ctx, call.Operation)
			}
			notes = append(notes, fmt.Sprintf("[%s: %v]", p, err))
			continue
		}
		matches, _ := res.Structured["matches"].([]string)
		n := 0
		for _, m := range matches {
			if !strings.HasSuffix(m, "/") {
				add(m, true)
				n++
			}
		}
		if w, ok := res.Structured["withheld"].(int64); ok {
			withheld += w
		}
		if n == 0 {
			notes = append(notes, fmt.Sprintf("[No files match %q.]", p))
		}
		if res.Truncation != nil {
			overflow = true
		}
	}

	var (
		out      strings.Builder
		results  []map[string]any
		unread   []string
		budget   = f.limits.ReadBytes
		cut      bool
		complete = 0
	)
	for i, p := range files {
		if budget-out.Len() < minManyBudget {
			unread = files[i:]
			break
		}
		// read_file's shaping, with what is left of the budget.
		// A file a pattern matched was not judged by policy itself: the
		// guard checks it at use like any path, and an ask rule that names
		// it refuses it (read it with read_file, which asks).
		sub := &FileOperations{ws: f.ws, limits: f.limits, sensitive: f.sensitive, guard: f.guard, undecided: matched[p], parent: call, readLocated: f.readLocated}
		sub.limits.ReadBytes = budget - out.Len()
		res, err := sub.readFile(ctx, &tools.Call{Tool: ToolName, Operation: "read_file", Args: map[string]any{"path": p}, Outside: call.Outside}, nil)
		fmt.Fprintf(&out, "==> %s <==\n", p)
		item := map[string]any{"path": p}
		switch {
		case err != nil && ctx.Err() != nil:
			return nil, ctxError(ctx, call.Operation)
		case err != nil:
			e := errdefs.As(err)
			fmt.Fprintf(&out, "[error: %s]\n\n", e.Msg)
			item["error"] = e.Msg
			if errors.Is(err, errdefs.ErrDenied) {
				item["denied"] = true
			}
		default:
			out.WriteString(strings.TrimRight(res.Text, "\n"))
			out.WriteString("\n\n")
			for _, k := range []string{"start_line", "end_line", "total_lines", "size", "binary"} {
				if v, ok := res.Structured[k]; ok {
					item[k] = v
				}
			}
			if res.Truncation != nil && res.Truncation.Continuation != "" {
				item["truncated"] = true
				cut = true
			} else {
				complete++
			}
		}
		results = append(results, item)
	}

	if len(unread) > 0 {
		notes = append(notes, fmt.Sprintf("[Output limit of %s reached; not read: %s. Read them with read_file or a smaller set here.]",
			tools.HumanSize(int64(budget)), strings.Join(unread, ", ")))
	}
	if overflow {
		notes = append(notes, fmt.Sprintf("[More files match than the %d read here (or a pattern matched more than glob returns); use narrower patterns.]", maxManyFiles))
	}
	if withheld > 0 {
		notes = append(notes, withheldNote(withheld))
	}
	out.WriteString(strings.Join(notes, "\n"))
	res := &tools.Result{
		Text: strings.TrimRight(out.String(), "\n"),
		Structured: map[string]any{
			"files":    results,
			"read":     len(results),
			"complete": complete,
		},
	}
	if len(unread) > 0 {
		res.Structured["unread"] = unread
	}
	if cut || len(unread) > 0 || overflow {
		res.Truncation = &tools.Truncation{
			ShownItems:   uint64(complete),
			TotalItems:   uint64(len(files)),
			Continuation: "read the files that were cut or not read with read_file",
		}
	}
	return res, nil
}
