package fileops

import (
	"errors"
	"fmt"
	"github.com/toold/toold/pkg/tools/fileops/internal/scan"
	"io/fs"
	"math/rand/v2"
	"os"

	"golang.org/x/sys/unix"

	"github.com/toold/toold/pkg/leftover"
)

// Atomic writes.
//
// A file is never written in place. The new content goes to a temporary
// file in the same directory (created with O_EXCL, never through a
// symlink), which is synced and then renamed over the target, and the
// directory is synced: a reader sees the old file or the new one, never a
// mix, and a crash leaves one of the two. The new file keeps the old one's
// permission bits and, where the process may, its owner. New files get mode
// 0644 less the umask.
//
// An exclusive write (create_file) puts the temporary file in place with
// renameat2(RENAME_NOREPLACE), or link(2) where the file system lacks it:
// both fail when the target exists, whoever created it, so an existing file
// is never replaced, and of two racing creates exactly one wins.
//
// Replacing a file gives it a new inode: other hard links to the old file
// keep the old content (the result says so when the file had any).

// maxNameBytes is the longest file name Linux file systems take.
const maxNameBytes = 255

// errExists is the error of an exclusive write whose target exists.
var errExists = errors.New("file exists")

// writeResult describes a completed write.
type writeResult struct {
	created bool        // the file did not exist
	mode    fs.FileMode // permission bits of the written file
	links   int         // hard links the replaced file had
}

// tempName returns a name for a temporary file next to name: hidden (so
// glob and grep skip it) and recognizable, with the owner mark of this
// toold (pkg/leftover), so that a later toold removes it should this one
// die before renaming it (see RemoveLeftovers).
func tempName(name string) string {
	suffix := fmt.Sprintf(".toold-%s-%012x.tmp", leftover.Mark(), rand.Uint64()&(1<<48-1))
	if max := maxNameBytes - len(suffix) - 1; len(name) > max {
		name = name[:max]
	}
	return "." + name + suffix
}

// write replaces the entry of p with data atomically, or, when exclusive,
// creates it and fails with errExists if it exists.
func (p *place) write(data []byte, exclusive bool) (writeResult, error) {
	var res writeResult
	st, exists, err := p.lstat()
	if err != nil {
		return res, err
	}
	if exists {
		switch {
		case exclusive:
			return res, errExists
		case st.Mode&unix.S_IFMT == unix.S_IFLNK:
			return res, &fs.PathError{Op: "write", Path: p.loc.Given, Err: errSwapped}
		case st.Mode&unix.S_IFMT == unix.S_IFDIR:
			return res, &fs.PathError{Op: "write", Path: p.loc.Given, Err: unix.EISDIR}
		case st.Mode&unix.S_IFMT != unix.S_IFREG:
			return res, errNotRegular
		}
		res.links = int(st.Nlink)
	}
	res.created = !exists
	var like *unix.Stat_t
	if exists {
		like = &st
	}
	res.mode, err = p.replace(func(f *os.File) error {
		_, err := f.Write(data)
		return err
	}, exclusive, like)
	return res, err
}

// replace writes a temporary file next to the entry with fill and puts it
// in place: over the entry, or, when exclusive, only where nothing exists
// (errExists otherwise). The file takes the permission bits and, where the
// process may, the owner of like; without like, mode 0644 less the umask.
// It returns the permission bits the file got.
func (p *place) replace(fill func(*os.File) error, exclusive bool, like *unix.Stat_t) (fs.FileMode, error) {
	createPerm := uint32(0o644) // less the umask, by the kernel
	if like != nil {
		createPerm = 0o600 // until the content is complete; then like's mode
	}
	var (
		tmp string
		fd  int
		err error
	)
	for range 100 {
		tmp = tempName(p.name)
		fd, err = unix.Openat(p.fd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, createPerm)
		if err != unix.EEXIST && err != unix.EINTR {
			break
		}
	}
	if err != nil {
		return 0, &fs.PathError{Op: "create", Path: p.loc.Given, Err: err}
	}
	f := os.NewFile(uintptr(fd), tmp)
	placed := false
	defer func() {
		if !placed {
			unix.Unlinkat(p.fd, tmp, 0)
		}
	}()
	err = fill(f)
	if err == nil && like != nil {
		// like's owner (an error means the process may not give files
		// away, which leaves them its own) and mode, setuid and setgid
		// bits included.
		_ = f.Chown(int(like.Uid), int(like.Gid))
		err = unix.Fchmod(fd, like.Mode&0o7777)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, &fs.PathError{Op: "write", Path: p.loc.Given, Err: unwrapPathError(err)}
	}

	if exclusive {
		err = placeNoReplace(p.fd, tmp, p.name)
	} else {
		err = unix.Renameat(p.fd, tmp, p.fd, p.name)
	}
	if err != nil {
		if errors.Is(err, errExists) {
			return 0, err
		}
		return 0, &fs.PathError{Op: "rename", Path: p.loc.Given, Err: err}
	}
	placed = true
	// The rename is durable once the directory is synced. The file is in
	// place either way; a failed directory sync is not worth failing for.
	_ = unix.Fsync(p.fd)
	st, err := fstatAt(p.fd, p.name)
	if err != nil {
		return fs.FileMode(createPerm), nil
	}
	return fs.FileMode(st.Mode & 0o7777), nil
}

// placeNoReplace renames tmp to name in the directory dirfd, failing with
// errExists when name exists. Where the file system has no RENAME_NOREPLACE
// it links tmp to name (which fails on an existing name too) and removes
// tmp.
func placeNoReplace(dirfd int, tmp, name string) error {
	err := unix.Renameat2(dirfd, tmp, dirfd, name, unix.RENAME_NOREPLACE)
	switch err {
	case nil:
		return nil
	case unix.EEXIST:
		return errExists
	case unix.EINVAL, unix.ENOSYS, unix.ENOTSUP:
	default:
		return err
	}
	if err := unix.Linkat(dirfd, tmp, dirfd, name, 0); err != nil {
		if err == unix.EEXIST {
			return errExists
		}
		return err
	}
	unix.Unlinkat(dirfd, tmp, 0)
	return nil
}

// errNotRegular is the error of writing over something that is not a
// regular file (a device, a FIFO, a socket).
var errNotRegular = errors.New("not a regular file")

func fstatAt(dirfd int, name string) (unix.Stat_t, error) {
	var st unix.Stat_t
	err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW)
	return st, err
}

// unwrapPathError returns the error inside a *fs.PathError.
func unwrapPathError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// read reads the regular file of p, refusing a symlink (swapped in
// after the check) and a file larger than max bytes (errTooLarge, with the
// size in size). ok is false when it does not exist.
//
// A directory (EISDIR) or a file that is not regular (errNotRegular, st's
// type set) is refused before it is opened, by the type the resolve step
// lstat'ed (p.loc.Type), or, where that is unknown, by an lstat here that
// also answers for a file that does not exist: opening a device can act
// by itself. What is opened is checked again (see readTarget.open for
// what remains).
func (p *place) read(max int64) (data []byte, st unix.Stat_t, ok bool, err error) {
	typ := p.loc.Type
	if typ == 0 {
		lst, exists, err := p.lstat()
		if err != nil || !exists {
			return nil, st, false, err
		}
		typ = lst.Mode & unix.S_IFMT
	}
	switch typ {
	case unix.S_IFREG, unix.S_IFLNK: // a symlink: the open refuses it
	case unix.S_IFDIR:
		return nil, st, true, &fs.PathError{Op: "read", Path: p.loc.Given, Err: unix.EISDIR}
	default:
		st.Mode = typ
		return nil, st, true, errNotRegular
	}
	fd, err := scan.OpenAt(p.fd, p.name, 0)
	switch {
	case err == unix.ENOENT:
		return nil, st, false, nil
	case err == unix.ELOOP:
		return nil, st, false, &fs.PathError{Op: "open", Path: p.loc.Given, Err: errSwapped}
	case err != nil:
		return nil, st, false, &fs.PathError{Op: "open", Path: p.loc.Given, Err: err}
	}
	defer unix.Close(fd)
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, st, true, &fs.PathError{Op: "stat", Path: p.loc.Given, Err: err}
	}
	if p.check != nil {
		if err := p.check(&st); err != nil {
			return nil, st, true, err
		}
	}
	switch {
	case st.Mode&unix.S_IFMT == unix.S_IFDIR:
		return nil, st, true, &fs.PathError{Op: "read", Path: p.loc.Given, Err: unix.EISDIR}
	case st.Mode&unix.S_IFMT != unix.S_IFREG:
		return nil, st, true, errNotRegular
	case st.Size > max:
		return nil, st, true, errTooLarge
	}
	data = make([]byte, st.Size)
	n, eof, err := scan.ReadFull(fd, data)
	if err != nil {
		return nil, st, true, &fs.PathError{Op: "read", Path: p.loc.Given, Err: err}
	}
	if eof || n < len(data) {
		return data[:n], st, true, nil
	}
	// The file grew since fstat: read the rest, within max.
	buf := make([]byte, 32<<10)
	for {
		m, eof, err := scan.ReadFull(fd, buf)
		data = append(data, buf[:m]...)
		if err != nil {
			return nil, st, true, &fs.PathError{Op: "read", Path: p.loc.Given, Err: err}
		}
		if int64(len(data)) > max {
			return nil, st, true, errTooLarge
		}
		if eof {
			return data, st, true, nil
		}
	}
}

// errTooLarge is the error of reading a file larger than allowed.
var errTooLarge = errors.New("file too large")
