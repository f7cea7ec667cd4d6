package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// StateDir returns toold's state directory — where it keeps what outlives
// a run (the SQLite memory database; later history): dir when set, else
// $XDG_STATE_HOME/toold, else ~/.local/state/toold; a leading ~/ is the
// home directory. It does not create it.
// The daemon treats the whole directory as sensitive: no tool call may read
// or change it.
func StateDir(dir string) (string, error) {
	if rest, ok := strings.CutPrefix(dir, "~/"); ok {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("state_dir %q: %v", dir, err)
		}
		dir = filepath.Join(home, rest)
	}
	if dir == "" {
		if x := os.Getenv("XDG_STATE_HOME"); x != "" && filepath.IsAbs(x) {
			dir = filepath.Join(x, "toold")
		} else {
			home, err := os.UserHomeDir()
			if err != nil {
				return "", fmt.Errorf("state_dir: no home directory to default to (%v); set state_dir", err)
			}
			dir = filepath.Join(home, ".local", "state", "toold")
		}
	}
	return filepath.Abs(dir)
}
