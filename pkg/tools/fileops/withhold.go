package fileops

import "github.com/toold/toold/pkg/tools/fileops/internal/scan"

// withholdFor returns the walk filter of Options.Sensitive for a walk of the
// target t, or nil when there is nothing to filter: no Sensitive option, or a
// start directory that is itself sensitive (the model named it, and policy
// judged that path). It applies the same inside the workspace and outside.
//
// Entries are passed to Sensitive as absolute paths below the start
// directory's resolved path: the walk never follows a symlink, so those are
// the entries' real paths.
func (f *FileOperations) withholdFor(t *readTarget) func(rel string) bool {
	if f.sensitive == nil {
		return nil
	}
	base, start := t.loc.Abs, t.show
	if f.sensitive(base) {
		return nil
	}
	if base == "/" {
		base = ""
	}
	return func(rel string) bool {
		return f.sensitive(base + "/" + scan.Below(start, rel))
	}
}

// withheldNote is the note of a walk that withheld n entries.
func withheldNote(n int64) string {
	return "(" + plural(int(n), "sensitive entry", "sensitive entries") + " withheld by policy.)"
}
