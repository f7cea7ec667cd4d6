// Package checkpointtest helps tests compare workspaces.
package checkpointtest

import (
	"crypto/sha256"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TreeHash describes the tree at dir, one line per entry (sorted): its
// path, kind, permission bits (setuid, setgid and sticky included) and
// the SHA-256 of a file's content or a symlink's target. Two trees are the
// same, byte for byte and mode for mode, when their descriptions are.
func TreeHash(t testing.TB, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		mode := fi.Mode()
		var sum string
		switch {
		case mode.IsRegular():
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			sum = fmt.Sprintf("%x", sha256.Sum256(data))
		case mode&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			sum = "-> " + target
		}
		fmt.Fprintf(&b, "%s %v %s\n", rel, mode, sum)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}
