package daemon

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"github.com/toold/toold/pkg/errdefs"
)

// OperatorKeyFile is the name of the operator credential's file in toold's
// state directory (config state_dir).
const OperatorKeyFile = "operator.key"

// operatorKeyLen is the credential's length in hex characters (32 random
// bytes).
const operatorKeyLen = 64

// loadOperatorKey returns the operator credential kept in dir, creating it
// when it is missing or unusable: a regular 0600 file owned by toold's
// user holding 64 hex characters. A file that others may read, that is a
// symbolic link or owned by another user is replaced (its value may be
// known to others). The operator runs toolctl as the same user and it reads
// the file; a command toold runs cannot use it (the sandbox masks the
// state directory, and toold refuses its own commands as clients anyway).
func loadOperatorKey(dir string) (key string, replaced string, err error) {
	path := filepath.Join(dir, OperatorKeyFile)
	if fi, err := os.Lstat(path); err == nil {
		why := ""
		st, _ := fi.Sys().(*syscall.Stat_t)
		switch {
		case !fi.Mode().IsRegular():
			why = "it is not a regular file"
		case fi.Mode().Perm()&0o077 != 0:
			why = fmt.Sprintf("its mode %04o lets others read it", fi.Mode().Perm())
		case st != nil && int(st.Uid) != os.Getuid():
			why = "another user owns it"
		default:
			b, err := os.ReadFile(path)
			if err == nil && len(b) >= operatorKeyLen {
				k := string(b[:operatorKeyLen])
				if _, herr := hex.DecodeString(k); herr == nil {
					return k, "", nil
				}
			}
			why = "it does not hold a credential"
		}
		replaced = path + ": " + why + "; replaced with a new credential"
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return "", "", errdefs.New(errdefs.ErrFailed, "the operator credential %s cannot be replaced (%s): %v", path, why, err)
		}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", "", err
	}
	var b [operatorKeyLen / 2]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", "", err
	}
	key = hex.EncodeToString(b[:])
	tmp, err := os.CreateTemp(dir, ".operator-*.key") // 0600
	if err != nil {
		return "", "", err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.WriteString(key + "\n"); err != nil {
		tmp.Close()
		return "", "", err
	}
	if err := tmp.Close(); err != nil {
		return "", "", err
	}
	// A hard link, not a rename: when another toold sharing the state
	// directory created the file meanwhile, its credential stands.
	if err := os.Link(tmp.Name(), path); err != nil {
		if errors.Is(err, os.ErrExist) {
			k, _, err := loadOperatorKey(dir)
			return k, replaced, err
		}
		return "", "", err
	}
	return key, replaced, nil
}

// heldConversations checks secrets against the executor's conversations
// once it exists (the services are built before it).
type heldConversations struct{ m *Main }

// Check implements service.SecretChecker.
func (h heldConversations) Check(id, secret string) (string, error) {
	if h.m.exec == nil {
		return "", errdefs.New(errdefs.ErrDenied, "no conversation is held yet")
	}
	return h.m.exec.Conversations().Check(id, secret)
}

// OperatorCredential returns the operator credential (the contents of
// operator.key in the state directory), "" before Run.
func (m *Main) OperatorCredential() string { return m.operatorKey }
