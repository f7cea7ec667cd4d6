package fileops

import (
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/tools"
)

// suggestWalkLimit bounds the entries looked at to suggest a path for one
// that does not exist, so a huge workspace costs a bounded walk.
const suggestWalkLimit = 20000

// pathArgs are the arguments of file operations that name one path.
var pathArgs = []string{"path", "source", "destination"}

// explainMissing adds to a "does not exist" error the closest existing
// paths: the same name with a typo or without its extension in the same
// directory, or the same name in another directory; a file:// URL or a
// quoted path gets the plain path to send instead. Other errors pass
// through unchanged.
func (f *FileOperations) explainMissing(call *tools.Call, err error) error {
	var de *errdefs.Error
	if err == nil || !errors.Is(err, fs.ErrNotExist) || !errors.As(err, &de) {
		return err
	}
	for _, k := range pathArgs {
		given, _ := call.Args[k].(string)
		if given == "" || !strings.HasPrefix(de.Msg, fmt.Sprintf("%q does not exist", given)) {
			continue
		}
		sug := f.nearbyPaths(given, 3)
		if len(sug) == 0 {
			return err
		}
		return &errdefs.Error{
			Class:       de.Class,
			Msg:         fmt.Sprintf("%q does not exist; did you mean %s? (list_dir or glob can find others)", given, quoteList(sug)),
			Field:       "/" + k,
			Suggestions: sug,
			Cause:       de.Cause,
		}
	}
	return err
}

func quoteList(s []string) string {
	q := make([]string, len(s))
	for i, x := range s {
		q[i] = fmt.Sprintf("%q", x)
	}
	return strings.Join(q, " or ")
}

// nearbyPaths returns up to n existing workspace paths (slash-separated,
// relative to the root) a model may have meant by given. Hidden (sensitive)
// entries and dot-entries are never suggested.
func (f *FileOperations) nearbyPaths(given string, n int) []string {
	p := strings.TrimSpace(given)
	p = strings.Trim(p, "`'\"")
	if u, err := url.Parse(p); err == nil && u.Scheme == "file" {
		p = u.Path
	}
	if filepath.IsAbs(p) {
		rel, err := filepath.Rel(f.ws.Dir(), p)
		if err != nil || strings.HasPrefix(rel, "..") {
			return nil
		}
		p = rel
	}
	p = path.Clean(filepath.ToSlash(p))
	if p != path.Clean(filepath.ToSlash(given)) && f.exists(p) {
		// A file:// URL, quotes or whitespace around an existing path.
		return []string{p}
	}
	dir, base := path.Split(p)
	dir = path.Clean(dir)
	stem := strings.TrimSuffix(base, path.Ext(base))
	type cand struct {
		p     string
		score int
	}
	var cands []cand
	seen := 0
	fsys := f.ws.Root().FS()
	_ = fs.WalkDir(fsys, ".", func(q string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		seen++
		if seen > suggestWalkLimit {
			return fs.SkipAll
		}
		name := d.Name()
		if q != "." && (strings.HasPrefix(name, ".") || name == "node_modules" || (f.sensitive != nil && f.sensitive(filepath.Join(f.ws.Dir(), filepath.FromSlash(q))))) {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if q == "." {
			return nil
		}
		qdir, qbase := path.Split(q)
		qdir = path.Clean(qdir)
		qstem := strings.TrimSuffix(qbase, path.Ext(qbase))
		score := -1
		switch {
		case qdir == dir && strings.EqualFold(qbase, base):
			score = 0 // case
		case qdir == dir && qstem == base:
			score = 1 // missing extension
		case qdir == dir && levenshteinAtMost(strings.ToLower(qbase), strings.ToLower(base), max(2, len(base)/4)):
			score = 2 // typo
		case qbase == base:
			score = 3 + strings.Count(q, "/") // same name elsewhere
		case qstem == base && stem == base:
			score = 10 + strings.Count(q, "/")
		}
		if score >= 0 {
			cands = append(cands, cand{q, score})
		}
		return nil
	})
	sort.SliceStable(cands, func(i, j int) bool {
		if cands[i].score != cands[j].score {
			return cands[i].score < cands[j].score
		}
		return cands[i].p < cands[j].p
	})
	var out []string
	for _, c := range cands {
		if len(out) == n {
			break
		}
		if !slices.Contains(out, c.p) {
			out = append(out, c.p)
		}
	}
	return out
}

func (f *FileOperations) exists(p string) bool {
	_, err := f.ws.Root().Lstat(filepath.FromSlash(p))
	return err == nil
}

// levenshteinAtMost reports whether a and b are within k edits.
func levenshteinAtMost(a, b string, k int) bool {
	ra, rb := []rune(a), []rune(b)
	if d := len(ra) - len(rb); d > k || -d > k {
		return false
	}
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			c := 1
			if ra[i-1] == rb[j-1] {
				c = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+c)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)] <= k
}
