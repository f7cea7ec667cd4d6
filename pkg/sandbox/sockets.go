package sandbox

import (
	"bufio"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
)

// runtimeDirs are walked for socket files besides the kernel's list:
// container runtimes and system daemons keep theirs there, and a socket
// bound in another network namespace (a runtime's, in its own container)
// is not in this namespace's list.
var runtimeDirs = []string{"/run", "/var/run", "/var/lib/docker", "/var/lib/containerd"}

// runtimeDepth is how deep below runtimeDirs socket files are looked for.
const runtimeDepth = 4

// UnixSockets returns the pathname unix sockets outside keep (the
// workspace, the temp and cache directories: the commands' own) that a
// command could connect to: BoundUnixSockets and RuntimeUnixSockets.
// Masked in the sandbox (Policy.Hide), each reads as /dev/null there, so
// connect fails: the kernel lets a uid-0 process without capabilities
// connect to root's sockets on a read-only mount, and Landlock (ABI < 9)
// does not cover pathname sockets.
//
// What it cannot see: a socket bound after the call, and one bound in
// another network namespace outside the runtime directories.
func UnixSockets(keep []string) []string {
	return append(BoundUnixSockets(keep), RuntimeUnixSockets(keep)...)
}

// BoundUnixSockets returns the pathname unix sockets bound in the calling
// process's network namespace (/proc/net/unix — toold's, so the host's
// sockets and toold's own) outside keep. It reads one kernel table and no
// file system: callers call it for every command, as the command starts,
// and cache nothing (a socket bound a moment before a command would
// otherwise be missed). A socket bound after the call is not in it: the
// masks are those of the moment the command starts (docs/policy.md).
func BoundUnixSockets(keep []string) []string {
	k := resolveKeep(keep)
	seen := map[string]bool{}
	var out []string
	// The kernel lists the table bucket by bucket across read calls, and
	// entries added or removed meanwhile can shift it so that one is
	// skipped: read it in as few calls as possible, twice. (Missing a
	// socket here was first blamed on this; the real cause was the thread,
	// see boundUnixPaths.)
	for range 2 {
		for _, p := range boundUnixPaths() {
			if p == "" || seen[p] || !filepath.IsAbs(p) {
				continue
			}
			seen[p] = true
			if !k.under(p) {
				out = append(out, p)
			}
		}
	}
	return out
}

// RuntimeUnixSockets returns the socket files below the runtime
// directories (/run, /var/run, the container runtimes') outside keep:
// container runtimes and system daemons keep theirs there, and a socket
// bound in another network namespace (a runtime's, in its own container)
// is not in this namespace's table. It walks directories, so callers may
// reuse its answer for a short while.
func RuntimeUnixSockets(keep []string) []string {
	k := resolveKeep(keep)
	seen := map[string]bool{}
	var out []string
	for _, root := range runtimeDirs {
		depth0 := strings.Count(root, "/")
		_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				if d != nil && d.IsDir() {
					return fs.SkipDir
				}
				return nil
			}
			if d.IsDir() && strings.Count(p, "/")-depth0 >= runtimeDepth {
				return fs.SkipDir
			}
			if d.Type()&fs.ModeSocket != 0 && !seen[p] {
				seen[p] = true
				if !k.under(p) {
					out = append(out, p)
				}
			}
			return nil
		})
	}
	return out
}

// boundUnixPaths returns the paths of the pathname sockets in
// /proc/net/unix.
func boundUnixPaths() []string {
	// The calling thread's network namespace, not the process's:
	// /proc/self/net is the main thread's, which may be in the sandbox's
	// namespace (a goroutine that joined it and ended locked on the main
	// thread leaves it there: the runtime cannot end the main thread).
	// Other goroutines never run on such a thread, so this one is in
	// toold's own namespace (as in peercred).
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	f, err := os.Open("/proc/thread-self/net/unix")
	if err != nil {
		if f, err = os.Open("/proc/net/unix"); err != nil { // Linux < 3.17
			return nil
		}
	}
	defer f.Close()
	// A large reused buffer: few read(2) calls, and no megabyte allocated
	// per command (this runs at every sandboxed command's start).
	bp := unixTableBufs.Get().(*[]byte)
	defer unixTableBufs.Put(bp)
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(*bp, len(*bp))
	sc.Scan() // the header
	for sc.Scan() {
		// Num RefCount Protocol Flags Type St Inode [Path]; an abstract
		// socket's path starts with "@" and is not a file.
		fields := strings.Fields(sc.Text())
		if len(fields) >= 8 && strings.HasPrefix(fields[7], "/") {
			out = append(out, strings.Join(fields[7:], " "))
		}
	}
	return out
}

// unixTableBufs are boundUnixPaths' read buffers.
var unixTableBufs = sync.Pool{New: func() any { b := make([]byte, 1<<20); return &b }}

// keepDirs are directories whose sockets are the commands' own, as given
// and with their symbolic links resolved (once per call, not per socket).
type keepDirs []string

func resolveKeep(dirs []string) keepDirs {
	var k keepDirs
	for _, d := range dirs {
		if d == "" {
			continue
		}
		k = append(k, strings.TrimSuffix(d, "/"))
		if r, err := filepath.EvalSymlinks(d); err == nil && r != d {
			k = append(k, strings.TrimSuffix(r, "/"))
		}
	}
	return k
}

// under reports whether p is one of k or below one.
func (k keepDirs) under(p string) bool {
	for _, d := range k {
		if p == d || strings.HasPrefix(p, d+"/") {
			return true
		}
	}
	return false
}
