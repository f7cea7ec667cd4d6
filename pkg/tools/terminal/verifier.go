package terminal

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// A surviving process's meta.json (survive.go) does not hold its
// conversation's secret: anything that can read the state directory (a
// command when the operator turned the sandbox off, a backup) would then
// hold the key to the conversation's history, terminals and grants. It
// holds a verifier instead: HMAC-SHA256 of the secret, keyed with a random
// key kept in the state directory (verifierKey, 0600). An adopting toold
// checks a secret a client presents against it (VerifySecret); the
// secret itself cannot be recovered from the verifier, with or without
// the key (the secret is random), and without the key a guessed secret
// cannot be checked offline.

// verifierKeyFile is the key's file in the state directory.
const verifierKeyFile = "procs.key"

// verifierPrefix names the verifier's scheme in meta.json.
const verifierPrefix = "hmac-sha256:"

// loadVerifierKey reads the state directory's key, creating it on first
// use.
func loadVerifierKey(stateDir string) ([]byte, error) {
	path := filepath.Join(stateDir, verifierKeyFile)
	if b, err := os.ReadFile(path); err == nil {
		if k, err := hex.DecodeString(strings.TrimSpace(string(b))); err == nil && len(k) >= 32 {
			return k, nil
		}
		return nil, errors.New(path + " does not hold a key: remove it (processes that survived the toold before lose their clients)")
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	k := make([]byte, 32)
	if _, err := rand.Read(k); err != nil {
		return nil, err
	}
	tmp, err := os.CreateTemp(stateDir, verifierKeyFile+".tmp*")
	if err != nil {
		return nil, err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.WriteString(hex.EncodeToString(k) + "\n"); err != nil {
		tmp.Close()
		return nil, err
	}
	if err := tmp.Close(); err != nil {
		return nil, err
	}
	// Two tolds never share a state directory (it is locked); a link
	// that fails because the key exists lost no race that matters.
	if err := os.Link(tmp.Name(), path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return loadVerifierKey(stateDir)
		}
		return nil, err
	}
	return k, nil
}

// verifier returns the verifier of secret ("" for no secret or no key).
func (m *Manager) verifier(secret string) string {
	if secret == "" || len(m.verifierKey) == 0 {
		return ""
	}
	h := hmac.New(sha256.New, m.verifierKey)
	h.Write([]byte(secret))
	return verifierPrefix + hex.EncodeToString(h.Sum(nil))
}

// verifierOf returns the verifier to keep with conv's processes: of the
// secret the conversation has now, or, for a conversation adopted from
// the toold before whose client has not come back yet, the verifier its
// processes had.
func (m *Manager) verifierOf(conv string) string {
	if v := m.verifier(m.secretOf(conv)); v != "" {
		return v
	}
	return m.adopted[conv]
}

// VerifySecret reports whether secret is the secret of conversation conv
// as the processes and sessions adopted at start recorded it (Adopted).
func (m *Manager) VerifySecret(conv, secret string) bool {
	want := m.adopted[conv]
	got := m.verifier(secret)
	return want != "" && got != "" && hmac.Equal([]byte(got), []byte(want))
}
