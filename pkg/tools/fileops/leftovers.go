package fileops

import (
	"context"
	"errors"
	"io/fs"
	"strings"

	"github.com/toold/toold/pkg/leftover"
	"github.com/toold/toold/pkg/workspace"
)

// LeftoverStats says what RemoveLeftovers did.
type LeftoverStats struct {
	// Removed counts the temporary files removed.
	Removed int
	// Complete is false when ctx ended before the whole workspace was
	// walked.
	Complete bool
}

// RemoveLeftovers removes the temporary files of atomic writes that a
// toold which no longer runs left in the workspace (it was killed between
// writing one and renaming it into place): names made by tempName whose
// owner mark names a dead process (leftover.Dead). Other files, those of
// a toold that still runs, and names without a mark are never touched.
//
// It walks the workspace through its os.Root without following symlinks,
// so nothing outside is reached, and stops when ctx ends (the daemon
// bounds it in time at start).
func RemoveLeftovers(ctx context.Context, ws *workspace.Workspace) (LeftoverStats, error) {
	var st LeftoverStats
	root := ws.Root()
	err := fs.WalkDir(root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		if err != nil {
			// An unreadable directory: skip it, walk on.
			if d != nil && d.IsDir() && p != "." {
				return fs.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || !isLeftoverTemp(d.Name()) {
			return nil
		}
		if err := root.Remove(p); err == nil {
			st.Removed++
		}
		return nil
	})
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return st, nil
	}
	st.Complete = err == nil
	return st, err
}

// isLeftoverTemp reports whether name is a temporary file of tempName
// whose owner is dead: ".NAME.toold-<mark>-<12 hex>.tmp".
func isLeftoverTemp(name string) bool {
	rest, ok := strings.CutSuffix(name, ".tmp")
	if !ok || !strings.HasPrefix(name, ".") {
		return false
	}
	i := strings.LastIndex(rest, ".toold-")
	if i < 1 {
		return false
	}
	mark, random, ok := strings.Cut(rest[i+len(".toold-"):], "-")
	if !ok || len(random) != 12 || strings.Trim(random, "0123456789abcdef") != "" {
		return false
	}
	return leftover.Dead(mark)
}
