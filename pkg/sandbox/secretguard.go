package sandbox

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// SecretGuard keeps a secret that appears while a command runs out of that
// command, in the kernel (issue 25, item 2).
//
// A command's masks are those of the moment it starts: a .env, a key or a
// credentials file that a person, an editor or another tool writes into
// the workspace (or the home directory) afterwards is in its view. The
// guard closes that with fanotify:
//
//   - an inode mark (FAN_CREATE, FAN_MOVED_TO, FAN_REPORT_DFID_NAME) on
//     each directory that matters — every directory of the workspace
//     (Roots) but those the masks' walk skips (Skip: node_modules, .git,
//     ...), and in each home directory (Homes) the directories on the way
//     to the policy's home secrets (HomePaths) — tells it every name that
//     appears in them; a directory that appears in one is marked too
//     before it is read. A name the policy calls sensitive (Sensitive), or
//     a directory moved in with such names below it, is marked. Names
//     created elsewhere on the machine cost the guard nothing: the kernel
//     finds no mark on their directory;
//   - the mark is an inode mark of a second group, with FAN_OPEN_PERM and
//     FAN_ACCESS_PERM: every open and every read(2) (splice, sendfile and
//     copy_file_range included) of that inode, by any name — a hard link,
//     a rename back to a harmless name, /proc/self/fd — waits for the
//     guard's answer, which is deny when the caller is a command (its
//     network namespace is the sandbox's, Netns: a property of the
//     process, not of its name) and allow otherwise;
//   - after marking, the guard looks for commands that opened or mapped
//     the file before the mark (their descriptors and maps in /proc) and
//     kills each such command (the init of its pid namespace): a mapping
//     is read without read(2), so it cannot be refused — fail closed.
//
// What a command creates itself (the creator of the name is a command) is
// its own: marked with that command's pid namespace as owner, so the
// command keeps reading what it wrote (cp .env.example .env && npm test)
// and other commands are refused. Once a process outside the sandbox
// writes into such a file (FAN_MODIFY, a third group), the ownership ends
// and its holders are killed as above.
//
// The window: the mark is placed when the guard has read the creation
// event, tens to hundreds of microseconds after it (more under load). A
// command that opens, reads and closes the file inside that window, after
// its content was written, read it; one that still holds it is killed.
//
// toold never holds a host process's open: the permission group is
// toold's descriptor, and when toold ends (a crash, SIGKILL) the kernel
// closes it and allows every pending and later event. While toold runs,
// the guard answers every event at once (no I/O but /proc of the caller).
// A process waiting for an answer pins, besides the permission mark, the
// mark of another group it reaches next on each other object the event
// is reported on (the file's mount, its file system, a parent watching
// its children), and the release of a group waits until no mark of it is
// pinned. With a filesystem mark of toold's notify group there, a toold
// killed while an open waited (stopped first, or killed at that moment)
// released the notify group first and waited forever for the open, which
// waited for the permission group's release after it — the dead toold in
// fsnotify_destroy_group, the open in fanotify_handle_event, on 6.18. So
// toold marks no mount nor file system, and its directories' marks do
// not watch children's events (no FAN_EVENT_ON_CHILD); the modify
// group's marks are on the file itself, behind the permission group's
// (TestSecretGuardStoppedThenKilled).
type SecretGuard struct {
	cfg                SecretGuardConfig
	netnsDev, netnsIno uint64

	// notify carries the directories' marks (see the type's comment on
	// why no other kind), perm the files' permission marks, modify the
	// FAN_MODIFY marks of the files commands own.
	notify, perm, modify *os.File
	// mounts holds a directory on each file system a watched directory is
	// on (for open_by_handle_at), by fsid; devs the devices seen. Written
	// by OpenSecretGuard, then by the notify loop only.
	mounts map[[2]int32]*os.File
	devs   map[uint64]bool

	mu      sync.Mutex
	skipped []string // directories that cannot be watched, and why
	marked  map[fileKey]*secretMark
	dirs    map[string]string // directory handle -> path, cleared when a directory moves

	// life is held (read) by each event's handling and (write) by Close
	// while it closes the files: a handler never uses a file Close closed.
	life sync.RWMutex

	marks   atomic.Int64
	denied  atomic.Int64
	killed  atomic.Int64
	wg      sync.WaitGroup
	closing atomic.Bool
}

// SecretGuardConfig configures OpenSecretGuard.
type SecretGuardConfig struct {
	// Roots are the trees whose new secrets are guarded whole (the
	// workspace): every directory below them is watched, but those Skip
	// names. The first must be watchable.
	Roots []string
	// Skip, when set, names the directories below Roots that are not
	// watched, nor anything below them (the directories the masks' walk
	// does not enter either: node_modules, .git, vendor, ...).
	Skip func(name string) bool
	// Homes are directories of which only what HomePaths names is watched
	// (home directories: the directory itself, the directories on the way
	// to each of HomePaths, and below a sensitive one, everything).
	Homes []string
	// HomePaths are the home secrets, relative to each of Homes, one path
	// pattern each (path.Match per component; a "**" component matches
	// any depth): ".ssh", ".config/gcloud", ".docker/config.json".
	HomePaths []string
	// Sensitive reports whether abs, an absolute path with symlinks
	// resolved, is a secret (authz's sensitive paths).
	Sensitive func(abs string) bool
	// Netns is the network namespace toold's commands share: a process in
	// it is a command. Required.
	Netns *os.File
	// Logger, when set, gets what the guard did (marks, kills).
	Logger *slog.Logger
	// OnMark, when set, is called with each path marked and when its mark
	// was in place, once the commands holding it were killed (tests,
	// benchmarks).
	OnMark func(path string, at time.Time)
}

type fileKey struct{ dev, ino uint64 }

type secretMark struct {
	path  string
	owner uint64 // the pid namespace (inode) of the command that created it; 0: none
}

// OpenSecretGuard starts the guard; Close stops it. It fails where
// fanotify's permission events or filesystem marks are not offered
// (no CAP_SYS_ADMIN, as in toold's non-root image; a kernel without
// CONFIG_FANOTIFY_ACCESS_PERMISSIONS; a file system without file handles).
func OpenSecretGuard(cfg SecretGuardConfig) (*SecretGuard, error) {
	if cfg.Netns == nil || cfg.Sensitive == nil || len(cfg.Roots) == 0 {
		return nil, errors.New("secret guard: Netns, Sensitive and Roots are required")
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(cfg.Netns.Fd()), &st); err != nil {
		return nil, fmt.Errorf("secret guard: the sandbox's network namespace: %w", err)
	}
	g := &SecretGuard{cfg: cfg, netnsDev: st.Dev, netnsIno: st.Ino, mounts: map[[2]int32]*os.File{}, devs: map[uint64]bool{},
		marked: map[fileKey]*secretMark{}, dirs: map[string]string{}}
	ok := false
	defer func() {
		if !ok {
			g.closeFiles()
		}
	}()
	open := func(flags uint) (*os.File, error) {
		fd, err := unix.FanotifyInit(flags|unix.FAN_REPORT_TID|unix.FAN_CLOEXEC|unix.FAN_NONBLOCK|unix.FAN_UNLIMITED_QUEUE|unix.FAN_UNLIMITED_MARKS, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_LARGEFILE)
		if err != nil {
			return nil, err
		}
		return os.NewFile(uintptr(fd), "fanotify"), nil
	}
	var err error
	if g.perm, err = open(unix.FAN_CLASS_CONTENT); err != nil {
		return nil, fmt.Errorf("secret guard: fanotify permission events: %w", err)
	}
	if g.modify, err = open(unix.FAN_CLASS_NOTIF); err != nil {
		return nil, fmt.Errorf("secret guard: fanotify: %w", err)
	}
	if g.notify, err = open(unix.FAN_CLASS_NOTIF | unix.FAN_REPORT_DFID_NAME); err != nil {
		return nil, fmt.Errorf("secret guard: fanotify with directory handles and names: %w", err)
	}
	// The first root (the workspace) must be watched; another directory
	// whose file system cannot be (no file handles: some network file
	// systems) is left out, and said so. Each directory is marked before
	// it is read: a name that appears meanwhile is either read or
	// reported.
	for i, root := range cfg.Roots {
		if err := g.watchTree(root, dirTree, false, 0, initialBudget); err != nil && i == 0 {
			return nil, fmt.Errorf("secret guard: watching %s: %w", root, err)
		}
	}
	for _, home := range cfg.Homes {
		g.watchTree(home, dirHome, false, 0, initialBudget)
	}
	ok = true
	g.wg.Add(3)
	go func() { defer g.wg.Done(); g.loop(g.perm, g.onPerm) }()
	go func() { defer g.wg.Done(); g.loop(g.notify, g.onNotify) }()
	go func() { defer g.wg.Done(); g.loop(g.modify, g.onModify) }()
	return g, nil
}

// dirKind is how a watched directory's new subdirectories are watched.
type dirKind int

const (
	dirNone dirKind = iota // not watched
	dirTree                // in Roots, or a sensitive directory: all below
	dirHome                // a home directory, or one on the way to a home secret
)

// Budgets of the directory entries one walk looks at: the walk of the
// watched trees when the guard opens, and that of a directory that
// appears (moved in with what it holds).
const (
	initialBudget = 200000
	walkBudget    = 20000
)

// markDir puts the guard's inode mark on directory dir (not following a
// symbolic link), notes its file system for open_by_handle_at, and
// returns the directory, open, for its caller to read.
func (g *SecretGuard) markDir(dir string) (*os.File, error) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), dir)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		f.Close()
		return nil, err
	}
	if !g.devs[st.Dev] {
		var sfs unix.Statfs_t
		if err := unix.Fstatfs(fd, &sfs); err != nil {
			f.Close()
			return nil, err
		}
		fsid := [2]int32{sfs.Fsid.Val[0], sfs.Fsid.Val[1]}
		if g.mounts[fsid] == nil {
			m, err := os.Open(dir)
			if err != nil {
				f.Close()
				return nil, err
			}
			g.mounts[fsid] = m
		}
		g.devs[st.Dev] = true
	}
	if err := unix.FanotifyMark(int(g.notify.Fd()), unix.FAN_MARK_ADD|unix.FAN_MARK_ONLYDIR,
		unix.FAN_CREATE|unix.FAN_MOVED_TO|unix.FAN_ONDIR, fd, ""); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// watchTree marks dir (of kind) and, below it, every directory that
// matters, each before it is read. fresh says dir just appeared (made or
// moved in): the sensitive files already in it are marked too, with
// owner (see mark); the files below the trees watched when the guard
// opens are the masks' business. It looks at budget entries at most, and
// returns why dir itself could not be watched.
func (g *SecretGuard) watchTree(dir string, kind dirKind, fresh bool, owner uint64, budget int) error {
	type item struct {
		dir  string
		kind dirKind
	}
	stack := []item{{dir, kind}}
	budget0 := budget
	for len(stack) > 0 {
		it := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		f, err := g.markDir(it.dir)
		if err != nil {
			if it.dir == dir {
				// Gone, or replaced by a symbolic link: nothing to watch.
				if !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.ENOTDIR) && !errors.Is(err, unix.ELOOP) {
					g.skip(it.dir, err.Error())
				}
				return err
			}
			if !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.ENOTDIR) && !errors.Is(err, unix.ELOOP) {
				g.skip(it.dir, err.Error())
			}
			continue
		}
		ents, _ := f.ReadDir(-1)
		f.Close()
		for _, e := range ents {
			if budget--; budget < 0 {
				g.skip(dir, fmt.Sprintf("more than %d entries: the rest is not watched", budget0))
				return nil
			}
			p := filepath.Join(it.dir, e.Name())
			switch {
			case e.IsDir():
				if k := g.childKind(it.kind, p, e.Name()); k != dirNone {
					stack = append(stack, item{p, k})
				}
			case fresh && e.Type().IsRegular() && g.cfg.Sensitive(p):
				g.mark(p, owner)
			}
		}
	}
	return nil
}

// childKind is how the directory p, named name, in a watched directory of
// kind parent is watched.
func (g *SecretGuard) childKind(parent dirKind, p, name string) dirKind {
	if parent == dirTree {
		if g.cfg.Skip != nil && g.cfg.Skip(name) && !g.cfg.Sensitive(p) {
			return dirNone
		}
		return dirTree
	}
	return g.kindOf(p)
}

// kindOf is how the directory p is watched, from its path.
func (g *SecretGuard) kindOf(p string) dirKind {
	for _, r := range g.cfg.Roots {
		rel, ok := below(r, p)
		if !ok {
			continue
		}
		if g.cfg.Skip != nil {
			for _, c := range strings.Split(rel, "/") {
				if g.cfg.Skip(c) && !g.cfg.Sensitive(p) {
					return dirNone
				}
			}
		}
		return dirTree
	}
	for _, h := range g.cfg.Homes {
		rel, ok := below(h, p)
		if !ok {
			continue
		}
		if g.cfg.Sensitive(p) {
			return dirTree
		}
		if onTheWay(rel, g.cfg.HomePaths) {
			return dirHome
		}
		return dirNone
	}
	return dirNone
}

// below reports whether p is strictly below dir, with p relative to it.
func below(dir, p string) (string, bool) {
	dir = strings.TrimSuffix(dir, "/")
	if len(p) <= len(dir)+1 || p[len(dir)] != '/' || !strings.HasPrefix(p, dir) {
		return "", false
	}
	return p[len(dir)+1:], true
}

// onTheWay reports whether rel (a relative directory path) is a proper
// prefix of one of patterns (or below a "**" component of one).
func onTheWay(rel string, patterns []string) bool {
	comps := strings.Split(rel, "/")
	for _, pat := range patterns {
		pc := strings.Split(pat, "/")
		match := true
		for i, c := range comps {
			if i >= len(pc)-1 && (i >= len(pc) || pc[i] != "**") {
				match = false
				break
			}
			if pc[i] == "**" {
				break
			}
			if ok, _ := path.Match(pc[i], c); !ok {
				match = false
				break
			}
		}
		if match {
			return true
		}
	}
	return false
}

// skip notes a directory the guard could not watch, and why.
func (g *SecretGuard) skip(dir, why string) {
	g.log("secret guard: a directory left out", "dir", dir, "why", why)
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.skipped) < 8 && !slices.Contains(g.skipped, dir+" ("+why+")") {
		g.skipped = append(g.skipped, dir+" ("+why+")")
	}
}

// Describe says what the guard holds, for the reads layer.
func (g *SecretGuard) Describe() string {
	d := "secrets that appear while a command runs are refused to it by the kernel (fanotify permission marks on each new sensitive file; a command that opened or mapped one before its mark is killed)"
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.skipped) > 0 {
		d += "; NOT below " + strings.Join(g.skipped, ", ")
	}
	return d
}

// Stats returns how many files the guard marked, how many opens and reads
// of commands it refused and how many commands it killed.
func (g *SecretGuard) Stats() (marks, denied, killed int64) {
	return g.marks.Load(), g.denied.Load(), g.killed.Load()
}

// Marked reports whether path's file is marked now.
func (g *SecretGuard) Marked(path string) bool {
	var st unix.Stat_t
	if unix.Lstat(path, &st) != nil {
		return false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	_, ok := g.marked[fileKey{st.Dev, st.Ino}]
	return ok
}

// Close stops the guard: the kernel drops its marks and allows whatever
// was waiting for an answer.
func (g *SecretGuard) Close() error {
	if g == nil || !g.closing.CompareAndSwap(false, true) {
		return nil
	}
	g.life.Lock()
	g.closeFiles()
	g.life.Unlock()
	g.wg.Wait()
	return nil
}

func (g *SecretGuard) closeFiles() {
	for _, f := range []*os.File{g.perm, g.notify, g.modify} {
		if f != nil {
			f.Close()
		}
	}
	for _, f := range g.mounts {
		f.Close()
	}
}

// loop reads events from f and hands each to handle until f is closed.
func (g *SecretGuard) loop(f *os.File, handle func(m *unix.FanotifyEventMetadata, info []byte)) {
	buf := make([]byte, 64<<10)
	for {
		n, err := f.Read(buf)
		if err != nil {
			if errors.Is(err, os.ErrClosed) || errors.Is(err, io.EOF) {
				return
			}
			if errors.Is(err, unix.EINTR) || errors.Is(err, unix.EAGAIN) {
				continue
			}
			g.log("secret guard: reading events", "err", err)
			return
		}
		for b := buf[:n]; len(b) >= int(unsafe.Sizeof(unix.FanotifyEventMetadata{})); {
			m := (*unix.FanotifyEventMetadata)(unsafe.Pointer(&b[0]))
			if m.Event_len < uint32(m.Metadata_len) || int(m.Event_len) > len(b) || m.Event_len == 0 {
				break
			}
			g.life.RLock()
			if g.closing.Load() {
				// The kernel allows what was pending when the group
				// closes; the events' descriptors are toold's to close.
				g.life.RUnlock()
				closeEventFds(b)
				return
			}
			handle(m, b[m.Metadata_len:m.Event_len])
			g.life.RUnlock()
			b = b[m.Event_len:]
		}
	}
}

// closeEventFds closes the descriptors of the events in b.
func closeEventFds(b []byte) {
	for len(b) >= int(unsafe.Sizeof(unix.FanotifyEventMetadata{})) {
		m := (*unix.FanotifyEventMetadata)(unsafe.Pointer(&b[0]))
		if m.Event_len < uint32(m.Metadata_len) || int(m.Event_len) > len(b) || m.Event_len == 0 {
			return
		}
		if m.Fd >= 0 {
			unix.Close(int(m.Fd))
		}
		b = b[m.Event_len:]
	}
}

func (g *SecretGuard) log(msg string, args ...any) {
	if g.cfg.Logger != nil {
		g.cfg.Logger.Warn(msg, args...)
	}
}

// nsOf returns the network and pid namespaces (inodes) of pid; ok false
// when /proc does not tell.
func nsOf(pid int) (netDev, netIno, pidIno uint64, ok bool) {
	var st unix.Stat_t
	p := "/proc/" + strconv.Itoa(pid) + "/ns/"
	if unix.Stat(p+"net", &st) != nil {
		return 0, 0, 0, false
	}
	netDev, netIno = st.Dev, st.Ino
	if unix.Stat(p+"pid", &st) != nil {
		return 0, 0, 0, false
	}
	return netDev, netIno, st.Ino, true
}

// isCommand reports whether pid is a command (in the sandbox's network
// namespace), with its pid namespace. The groups report thread ids
// (FAN_REPORT_TID): the thread that opens is the one judged — toold's own
// first thread may have entered the sandbox's network namespace (a
// goroutine that ends locked on it is parked, not ended), and toold is
// not a command.
func (g *SecretGuard) isCommand(pid int) (cmd bool, pidns uint64, known bool) {
	dev, ino, pidns, ok := nsOf(pid)
	if !ok {
		return false, 0, false
	}
	return dev == g.netnsDev && ino == g.netnsIno, pidns, true
}

// onPerm answers an open or a read of a marked file: deny for a command
// (unless it is the file's owner), allow for everyone else.
func (g *SecretGuard) onPerm(m *unix.FanotifyEventMetadata, _ []byte) {
	resp := uint32(unix.FAN_ALLOW)
	cmd, pidns, known := g.isCommand(int(m.Pid))
	if !known {
		// A caller /proc does not show (it is exiting): refuse; nothing
		// outside the sandbox is refused a file it can open, as the event
		// is for a process that no longer runs anything.
		cmd = true
	}
	if cmd {
		resp = unix.FAN_DENY
		var st unix.Stat_t
		if m.Fd >= 0 && unix.Fstat(int(m.Fd), &st) == nil {
			g.mu.Lock()
			var owner uint64
			if s := g.marked[fileKey{st.Dev, st.Ino}]; s != nil {
				owner = s.owner
			}
			g.mu.Unlock()
			if owner != 0 && owner == pidns && known {
				resp = unix.FAN_ALLOW
			}
		}
	}
	if resp == unix.FAN_DENY {
		g.denied.Add(1)
	}
	r := unix.FanotifyResponse{Fd: m.Fd, Response: resp}
	var b [8]byte
	binary.NativeEndian.PutUint32(b[0:], uint32(r.Fd))
	binary.NativeEndian.PutUint32(b[4:], r.Response)
	if _, err := g.perm.Write(b[:]); err != nil && !g.closing.Load() {
		g.log("secret guard: answering", "err", err)
	}
	if m.Fd >= 0 {
		unix.Close(int(m.Fd))
	}
}

// onModify ends a command's ownership of a file a process outside the
// sandbox wrote into, and kills the commands that hold it.
func (g *SecretGuard) onModify(m *unix.FanotifyEventMetadata, _ []byte) {
	if m.Fd < 0 {
		return
	}
	defer unix.Close(int(m.Fd))
	if cmd, _, known := g.isCommand(int(m.Pid)); cmd || !known {
		return
	}
	var st unix.Stat_t
	if unix.Fstat(int(m.Fd), &st) != nil {
		return
	}
	key := fileKey{st.Dev, st.Ino}
	g.mu.Lock()
	s := g.marked[key]
	owned := s != nil && s.owner != 0
	var path string
	if owned {
		s.owner, path = 0, s.path
	}
	g.mu.Unlock()
	if owned {
		unix.FanotifyMark(int(g.modify.Fd()), unix.FAN_MARK_REMOVE, unix.FAN_MODIFY, int(m.Fd), "")
		g.killHolders(key, path)
	}
}

// onNotify handles a name that appeared: a sensitive file is marked; a
// directory moved in is walked for them.
func (g *SecretGuard) onNotify(m *unix.FanotifyEventMetadata, info []byte) {
	if m.Mask&unix.FAN_Q_OVERFLOW != 0 {
		g.log("secret guard: events lost (queue overflow): secrets that appeared meanwhile are not marked")
		return
	}
	// struct fanotify_event_info_fid: a header (type, pad, len), fsid,
	// then struct file_handle and the name.
	if len(info) < 4+8+8 || info[0] != unix.FAN_EVENT_INFO_TYPE_DFID_NAME {
		return
	}
	fsid := [2]int32{int32(binary.NativeEndian.Uint32(info[4:])), int32(binary.NativeEndian.Uint32(info[8:]))}
	hbytes := binary.NativeEndian.Uint32(info[12:])
	htype := int32(binary.NativeEndian.Uint32(info[16:]))
	if 20+int(hbytes) > len(info) {
		return
	}
	handle := info[20 : 20+hbytes]
	name := info[20+hbytes:]
	if i := bytes.IndexByte(name, 0); i >= 0 {
		name = name[:i]
	}
	mount := g.mounts[fsid]
	if mount == nil || len(name) == 0 {
		return
	}
	isDir := m.Mask&unix.FAN_ONDIR != 0
	hkey := string(handle)
	g.mu.Lock()
	dir, cached := g.dirs[hkey]
	if isDir && m.Mask&unix.FAN_MOVED_TO != 0 {
		// A directory moved: cached paths below it may be stale.
		clear(g.dirs)
		cached = false
	}
	g.mu.Unlock()
	if !cached {
		fd, err := unix.OpenByHandleAt(int(mount.Fd()), unix.NewFileHandle(htype, handle), unix.O_PATH|unix.O_CLOEXEC)
		if err != nil {
			return // the directory is gone
		}
		p, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
		unix.Close(fd)
		if err != nil {
			return
		}
		dir = p
		g.mu.Lock()
		if len(g.dirs) > 4096 {
			clear(g.dirs)
		}
		g.dirs[hkey] = dir
		g.mu.Unlock()
	}
	full := filepath.Join(dir, string(name))
	if isDir {
		// A directory made or moved into a watched one (still where it
		// matters: a watched directory may have been moved out since):
		// watched itself, and what it holds already marked.
		if k := g.kindOf(full); k != dirNone {
			g.watchTree(full, k, true, g.owner(int(m.Pid)), walkBudget)
		}
		return
	}
	// Its directory is still where it matters: a watched directory may
	// have been moved out since (its mark moved with it).
	if g.cfg.Sensitive(full) && (slices.Contains(g.cfg.Roots, dir) || slices.Contains(g.cfg.Homes, dir) || g.kindOf(dir) != dirNone) {
		g.mark(full, g.owner(int(m.Pid)))
	}
}

// owner returns the pid namespace of pid when it is a command's (the
// owner of what it creates, see mark), or 0.
func (g *SecretGuard) owner(pid int) uint64 {
	if cmd, pidns, known := g.isCommand(pid); cmd && known {
		return pidns
	}
	return 0
}

// mark puts the permission mark on the regular file at path (not
// following a symlink), then kills the commands that already hold it.
func (g *SecretGuard) mark(path string, owner uint64) {
	fd, err := unix.Open(path, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return
	}
	self := "/proc/self/fd/" + strconv.Itoa(fd)
	if err := unix.FanotifyMark(int(g.perm.Fd()), unix.FAN_MARK_ADD, unix.FAN_OPEN_PERM|unix.FAN_ACCESS_PERM, unix.AT_FDCWD, self); err != nil {
		g.log("secret guard: marking a new secret", "path", path, "err", err)
		return
	}
	at := time.Now()
	key := fileKey{st.Dev, st.Ino}
	g.mu.Lock()
	if s := g.marked[key]; s != nil {
		// Marked before (a rename, a hard link): the first owner stays,
		// unless this name was made by another party.
		if s.owner != owner {
			s.owner = 0
		}
		s.path = path
		owner = s.owner
	} else {
		g.marked[key] = &secretMark{path: path, owner: owner}
	}
	if len(g.marked) > 1<<16 {
		// Entries of files long gone: the kernel dropped their marks with
		// the inodes; keep the map bounded.
		for k, s := range g.marked {
			var st unix.Stat_t
			if unix.Lstat(s.path, &st) != nil || st.Ino != k.ino {
				delete(g.marked, k)
			}
		}
	}
	g.mu.Unlock()
	g.marks.Add(1)
	if owner != 0 {
		unix.FanotifyMark(int(g.modify.Fd()), unix.FAN_MARK_ADD, unix.FAN_MODIFY, unix.AT_FDCWD, self)
	} else {
		g.killHolders(key, path)
	}
	if g.cfg.OnMark != nil {
		g.cfg.OnMark(path, at)
	}
}

// killHolders kills every command that has the file key open or mapped:
// the init of the pid namespace of each holder (the command's helper), so
// that its whole tree ends.
func (g *SecretGuard) killHolders(key fileKey, path string) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return
	}
	self := os.Getpid()
	_, _, selfPidns, ok := nsOf(self)
	if !ok {
		return
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		// A command is in the sandbox's network namespace and in a pid
		// namespace of its own (never toold's: a thread of toold that
		// entered the network namespace may be its first).
		if cmd, pidns, known := g.isCommand(pid); !cmd || !known || pidns == selfPidns {
			continue
		}
		if holds(pid, key) {
			// The holder first: a process SIGKILLed runs no more code of
			// its own; the init's death ends the rest of the tree, a
			// moment later.
			init := pidnsInit(pid)
			unix.Kill(pid, unix.SIGKILL)
			g.log("secret guard: a command held a secret that appeared while it ran; killed", "path", path, "pid", pid, "init", init)
			unix.Kill(init, unix.SIGKILL)
			g.killed.Add(1)
		}
	}
}

// holds reports whether pid has the file key open (a descriptor) or mapped.
func holds(pid int, key fileKey) bool {
	dir := "/proc/" + strconv.Itoa(pid)
	fds, _ := os.ReadDir(dir + "/fd")
	for _, fd := range fds {
		var st unix.Stat_t
		if unix.Stat(dir+"/fd/"+fd.Name(), &st) == nil && st.Dev == key.dev && st.Ino == key.ino {
			return true
		}
	}
	f, err := os.Open(dir + "/maps")
	if err != nil {
		return false
	}
	defer f.Close()
	ino := strconv.FormatUint(key.ino, 10)
	dev := fmt.Sprintf("%02x:%02x", unix.Major(key.dev), unix.Minor(key.dev))
	s := bufio.NewScanner(f)
	for s.Scan() {
		// address perms offset dev inode path
		fields := strings.Fields(s.Text())
		if len(fields) >= 5 && fields[4] == ino && fields[3] == dev {
			return true
		}
	}
	return false
}

// pidnsInit returns the outermost ancestor of pid in pid's own pid
// namespace (its init, for a command: the helper), or pid.
func pidnsInit(pid int) int {
	_, _, ns, ok := nsOf(pid)
	if !ok {
		return pid
	}
	cur := pid
	for range 64 {
		pp := ppid(cur)
		if pp <= 1 {
			break
		}
		if _, _, pns, ok := nsOf(pp); !ok || pns != ns {
			break
		}
		cur = pp
	}
	return cur
}

// ppid returns pid's parent, or 0.
func ppid(pid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 2 {
		return 0
	}
	p, _ := strconv.Atoi(f[1])
	return p
}
