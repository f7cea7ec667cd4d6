package fileops

// withholdFor returns the walk filter of Options.Hidden for a walk of the
// target t, or nil when there is nothing to filter: no Hidden option, or a
// start directory that is itself hidden (the model named it, and policy
// judged that path). It applies the same inside the workspace and outside.
//
// Entries are passed to Hidden as absolute paths below the start
// directory's resolved path: the walk never follows a symlink, so those are
// the entries' real paths.
func (f *FileOperations) withholdFor(t *readTarget) func(rel string) bool {
	if f.hidden == nil {
		return nil
	}
	base, start := t.loc.Abs, t.show
	if f.hidden(base) {
		return nil
	}
	if base == "/" {
		base = ""
	}
	return func(rel string) bool {
		return f.hidden(base + "/" + Below(start, rel))
	}
}

// withheldNote is the note of a walk that withheld n entries.
func withheldNote(n int64) string {
	return "(" + plural(int(n), "sensitive entry", "sensitive entries") + " withheld by policy.)"
}
