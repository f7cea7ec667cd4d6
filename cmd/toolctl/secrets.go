package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	"golang.org/x/sys/unix"
)

// Conversation secrets.
//
// toold binds a conversation to a secret it hands out in Welcome; a later
// stream joining the conversation (toolctl call --conversation ID, to reach
// its background processes or grants) and an attach to one of its terminal
// sessions (toolctl shell --session) must present it. toolctl keeps the
// secrets of the conversations it named in a file of its own, private to
// the user (mode 0600 in a 0700 directory):
//
//	$TOOLCTL_SECRETS, or $XDG_STATE_HOME/toolctl/conversations.json, or
//	~/.local/state/toolctl/conversations.json
//
// keyed by the daemon (its socket's absolute path, or its TCP address) and
// the conversation id. --secret (or $TOOLD_CONVERSATION_SECRET) gives a
// secret explicitly, for a conversation another client started.

// maxSecrets bounds the file: the oldest entries go first.
const maxSecrets = 256

// secretEntry is one conversation's secret in the file.
type secretEntry struct {
	Daemon       string `json:"daemon"`
	Conversation string `json:"conversation"`
	Secret       string `json:"secret"`
	Seq          int64  `json:"seq"` // order of saving, for maxSecrets
}

// secretsPath returns the file's path, or "" when there is none to use.
func (a *app) secretsPath() string {
	if p := a.getenv("TOOLCTL_SECRETS"); p != "" {
		return p
	}
	if d := a.getenv("XDG_STATE_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "toolctl", "conversations.json")
	}
	if h := a.getenv("HOME"); h != "" && filepath.IsAbs(h) {
		return filepath.Join(h, ".local", "state", "toolctl", "conversations.json")
	}
	return ""
}

// daemonKey names the daemon toolctl talks to.
func (a *app) daemonKey() string {
	if a.addr != "" {
		return "tcp:" + a.addr
	}
	if p, err := filepath.Abs(a.socket); err == nil {
		return "unix:" + p
	}
	return "unix:" + a.socket
}

// explicitSecret returns the secret given by flag or $TOOLD_CONVERSATION_SECRET.
func (a *app) explicitSecret(flag string) string {
	if flag != "" {
		return flag
	}
	return a.getenv("TOOLD_CONVERSATION_SECRET")
}

// conversationSecret returns the secret to present for conversation conv:
// explicit first (flag, then environment), then the stored one; "" when
// none is known.
func (a *app) conversationSecret(conv, explicit string) string {
	if conv == "" {
		return ""
	}
	if explicit != "" {
		return explicit
	}
	if s := a.getenv("TOOLD_CONVERSATION_SECRET"); s != "" {
		return s
	}
	entries, err := readSecrets(a.secretsPath())
	if err != nil {
		return ""
	}
	key := a.daemonKey()
	for _, e := range entries {
		if e.Daemon == key && e.Conversation == conv {
			return e.Secret
		}
	}
	return ""
}

// saveConversationSecret stores conv's secret for later calls.
func (a *app) saveConversationSecret(conv, secret string) error {
	path := a.secretsPath()
	if path == "" || conv == "" || secret == "" {
		return nil
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	// One toolctl at a time rewrites the file.
	lock, err := os.OpenFile(path+".lock", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return err
	}
	defer lock.Close()
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX); err != nil {
		return err
	}
	entries, err := readSecrets(path)
	if err != nil {
		return err
	}
	key := a.daemonKey()
	var seq int64
	kept := entries[:0]
	for _, e := range entries {
		seq = max(seq, e.Seq)
		if e.Daemon != key || e.Conversation != conv {
			kept = append(kept, e)
		}
	}
	kept = append(kept, secretEntry{Daemon: key, Conversation: conv, Secret: secret, Seq: seq + 1})
	sort.Slice(kept, func(i, j int) bool { return kept[i].Seq < kept[j].Seq })
	if len(kept) > maxSecrets {
		kept = kept[len(kept)-maxSecrets:]
	}
	b, err := json.MarshalIndent(kept, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, ".conversations-*.json")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// readSecrets reads the file; a missing file is empty. A file others may
// read is refused: its secrets are no longer private.
func readSecrets(path string) ([]secretEntry, error) {
	if path == "" {
		return nil, nil
	}
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("%s is readable by others (mode %v); toolctl uses it only when private (chmod 600)", path, fi.Mode().Perm())
	}
	var entries []secretEntry
	if err := json.NewDecoder(f).Decode(&entries); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return entries, nil
}
