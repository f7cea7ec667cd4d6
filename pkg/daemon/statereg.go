package daemon

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
)

// Other toolds' state directories. A toold's state directory holds what
// no command may read — its operator credential, conversations' history,
// audit records, the key of surviving processes' secrets — and each toold
// masks its own. Another toold of the same user whose state directory is
// elsewhere (--state-dir) was readable from this toold's sandbox: the
// battery's "operator credential" found one with find(1). So every toold
// registers its state directory in a per-user registry,
// ~/.local/state/toold/instances (itself masked in every toold's
// sandbox, so commands can neither read nor edit it), and masks the
// directories registered there at each command's start (the registry is
// read at most once per terminal.hiddenTTL). An entry stays while its
// directory exists — a stopped toold's state still holds its secrets —
// and is pruned once the directory is gone. Another user's toold keeps
// its state in directories this user cannot read.

// stateRegistry returns the registry directory of this user.
func stateRegistry() string {
	return filepath.Join(homeOr(), ".local", "state", "toold", "instances")
}

// registerStateDir records dir in the registry. An error is reported by
// the caller and does not stop toold (its own state is masked anyway).
func registerStateDir(dir string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	reg := stateRegistry()
	if err := os.MkdirAll(reg, 0o700); err != nil {
		return err
	}
	sum := sha256.Sum256([]byte(abs))
	name := filepath.Join(reg, hex.EncodeToString(sum[:8]))
	if b, err := os.ReadFile(name); err == nil && string(b) == abs+"\n" {
		return nil
	}
	tmp := name + ".tmp" + hex.EncodeToString(sum[8:12])
	if err := os.WriteFile(tmp, []byte(abs+"\n"), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, name)
}

// otherStateDirs returns the registered state directories other than own
// that exist and hold none of keep (masking one would hide a directory
// commands need), pruning entries whose directory is gone.
func otherStateDirs(own string, keep []string) []string {
	reg := stateRegistry()
	ents, err := os.ReadDir(reg)
	if err != nil {
		return nil
	}
	own, _ = filepath.Abs(own)
	var out []string
	for _, e := range ents {
		if !e.Type().IsRegular() || strings.Contains(e.Name(), ".tmp") {
			continue
		}
		name := filepath.Join(reg, e.Name())
		b, err := os.ReadFile(name)
		if err != nil {
			continue
		}
		dir := strings.TrimSpace(string(b))
		if !filepath.IsAbs(dir) || dir == own {
			continue
		}
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			if os.IsNotExist(err) {
				_ = os.Remove(name)
			}
			continue
		}
		if containsAny(dir, keep) {
			continue
		}
		out = append(out, dir)
	}
	return out
}
