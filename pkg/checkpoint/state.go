package checkpoint

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"
)

// Kind is what an entry of the workspace is.
type Kind uint8

// Kinds of entries.
const (
	Absent Kind = iota
	File
	Dir
	Symlink
	Other // a FIFO, socket or device: recorded, never restored
)

func (k Kind) String() string {
	switch k {
	case File:
		return "file"
	case Dir:
		return "dir"
	case Symlink:
		return "symlink"
	case Other:
		return "other"
	}
	return "absent"
}

// State is what one path of the workspace was at a point in time.
type State struct {
	Kind Kind
	// Mode is the permission bits, setuid, setgid and sticky included
	// (st_mode & 07777).
	Mode uint32
	// Size is a file's size in bytes.
	Size int64
	// Hash is the SHA-256 (hex) of a file's content, whose bytes the store
	// keeps; empty when the file was larger than Config.MaxFileBytes (its
	// content was not kept and cannot be restored).
	Hash string
	// Target is a symlink's target.
	Target string
	// Secret says the path was a secret when this state was read
	// (Config.Secret): Content never returns its content.
	Secret bool

	// The stat key: a file whose key did not change is not read again.
	mtime, ctime int64
	ino          uint64
}

// Same says a and b are the same content, kind and mode. Files whose
// content was not kept are the same only when their stat keys are.
func (a State) Same(b State) bool {
	if a.Kind != b.Kind {
		return false
	}
	switch a.Kind {
	case Absent:
		return true
	case File:
		if a.Hash == "" || b.Hash == "" {
			return a.Mode == b.Mode && a.Size == b.Size && a.mtime == b.mtime && a.ino == b.ino
		}
		return a.Mode == b.Mode && a.Hash == b.Hash
	case Symlink:
		return a.Target == b.Target
	}
	return a.Mode == b.Mode
}

// sameKey says the stat key of a file did not change.
func (a State) sameKey(st *syscall.Stat_t) bool {
	return a.Kind == File && a.Size == st.Size && a.mtime == st.Mtim.Nano() && a.ctime == st.Ctim.Nano() &&
		a.ino == st.Ino && a.Mode == st.Mode&0o7777
}

// errChanged is the error of a file that changed while it was read.
var errChanged = errors.New("changed while read")

// stat reads the state of rel under root without following a symlink. A
// file's content goes to the store (unless it is larger than the store
// keeps) unless prev has the same stat key.
func (r *Recorder) stat(rel string, prev State) (State, error) {
	fi, err := r.root.Lstat(rel)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, unix.ENOTDIR) {
		return State{}, nil
	}
	if err != nil {
		return State{}, err
	}
	st, _ := fi.Sys().(*syscall.Stat_t)
	if st == nil {
		return State{}, errors.New("no stat")
	}
	s := State{Mode: st.Mode & 0o7777, Size: st.Size, mtime: st.Mtim.Nano(), ctime: st.Ctim.Nano(), ino: st.Ino}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		s.Kind, s.Size = Dir, 0
	case unix.S_IFLNK:
		s.Kind, s.Size = Symlink, 0
		if s.Target, err = r.root.Readlink(rel); err != nil {
			return State{}, err
		}
	case unix.S_IFREG:
		s.Kind = File
		s.Secret = r.cfg.Secret != nil && r.cfg.Secret(filepath.Join(r.cfg.Workspace, filepath.FromSlash(rel)))
		if prev.sameKey(st) {
			s.Hash = prev.Hash
			return s, nil
		}
		if st.Size > r.cfg.MaxFileBytes || r.blobs.bytes+st.Size > r.cfg.MaxBytes {
			// Too large, or the store is full: tracked, not kept.
			return s, nil
		}
		if s.Hash, err = r.keep(rel, st); err != nil {
			if errors.Is(err, errChanged) || errors.Is(err, fs.ErrNotExist) {
				// Changing under the read: a later event reads it again.
				s.Hash = ""
				return s, nil
			}
			return State{}, err
		}
	default:
		s.Kind, s.Size = Other, 0
	}
	return s, nil
}

// keep reads the file rel (which had st) into the store and returns its
// hash.
func (r *Recorder) keep(rel string, st *syscall.Stat_t) (string, error) {
	f, err := r.root.OpenFile(rel, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	if err != nil {
		return "", err
	}
	defer f.Close()
	var fst unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &fst); err != nil {
		return "", err
	}
	if fst.Ino != st.Ino || fst.Mode&unix.S_IFMT != unix.S_IFREG {
		return "", errChanged
	}
	data, err := io.ReadAll(io.LimitReader(f, r.cfg.MaxFileBytes+1))
	if err != nil {
		return "", err
	}
	if int64(len(data)) > r.cfg.MaxFileBytes {
		return "", errChanged
	}
	sum := sha256.Sum256(data)
	h := hex.EncodeToString(sum[:])
	if err := r.blobs.put(h, data); err != nil {
		return "", err
	}
	return h, nil
}
