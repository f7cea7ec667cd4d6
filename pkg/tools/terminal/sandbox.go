package terminal

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/trace"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/toold/toold/pkg/tools"

	"github.com/toold/toold/pkg/sandbox"
)

// Sensitivity tells sensitive paths (authz.Engine implements it): the
// workspace's secrets are masked in the sandbox.
type Sensitivity interface {
	// Sensitive reports whether abs, an absolute path with symlinks
	// resolved, is sensitive.
	Sensitive(abs string) bool
}

// setupSandbox completes the sandbox's policy with the Manager's
// directories, finds out which layers this machine offers (isolation needs
// namespaces, limits a delegated cgroup, Landlock the kernel's LSM) and
// says so in the log; with RequireSandbox it fails unless every layer is
// in force. With p.Isolate, NewManager has opened the shared network
// namespace (m.netns) or failed to (netnsErr); isolation, when not nil, is
// the result of the isolation probe already made in it through
// m.cfg.Runner (findHelper).
func (m *Manager) setupSandbox(p sandbox.Policy, isolation *error, netnsErr error) error {
	log := m.cfg.Logger
	p.Writable = append([]string{m.ws.Dir(), m.tmp, m.cache}, p.Writable...)
	// The kept outputs of every conversation are read through read_output,
	// not by commands.
	p.Hide = append(slices.Clip(p.Hide), m.store.dir)
	p.Require = m.cfg.RequireSandbox
	var isolateWhy, limitsWhy, unixWhy string
	switch {
	case !p.Isolate:
		isolateWhy = "terminal.network is true: commands share the host's network and file system view (the operator's choice)"
	case netnsErr != nil:
		// One network namespace for every command (making one per command
		// costs tens of milliseconds): without it, no isolation. The
		// reason reads as the probe's does (a container's operator looks
		// for one sentence).
		isolateWhy = "this machine does not let toold create the sandbox's namespaces: " + netnsErr.Error()
		p.Isolate = false
	default:
		if isolation == nil {
			err := sandbox.ProbeIsolationIn(m.cfg.Runner, m.netns)
			isolation = &err
		}
		switch err := *isolation; {
		case errors.Is(err, sandbox.ErrProbeUnfinished):
			// Not a refusal: fail closed, isolated. If the kernel does
			// refuse, every command fails and says so.
			log.Warn("terminal: the sandbox's isolation probe did not finish (a loaded machine); commands stay isolated", "err", err)
		case err != nil:
			isolateWhy = "this machine does not let toold create the sandbox's namespaces: " + err.Error()
			p.Isolate = false
		}
	}
	if !p.Isolate && m.netns != nil {
		_ = m.netns.Close()
		m.netns = nil
	}
	if p.Isolate {
		r := trace.StartRegion(context.Background(), "limits")
		lim, err := sandbox.OpenLimits(p.Pids, p.Memory)
		r.End()
		if err != nil {
			limitsWhy = err.Error()
		} else {
			// Each helper is born in a cgroup of its own (startHelper).
			m.limits = lim
			p.Pids, p.Memory = lim.Pids, lim.Memory
			if !lim.Complete() {
				limitsWhy = lim.Describe()
			}
			// Unix sockets bound after a command started, held by the
			// kernel (sandbox.UnixGuard) where it lets toold.
			r := trace.StartRegion(context.Background(), "unixguard")
			g, err := sandbox.GuardUnixSockets(lim)
			r.End()
			if err != nil {
				unixWhy = err.Error()
			} else {
				m.unixGuard = g
			}
		}
	} else {
		limitsWhy = "the per-command cgroup is made by the isolated helper, and isolation is off"
	}
	if p.Isolate {
		m.openSecretGuard()
	}
	m.policy = &p
	m.env["TMPDIR"] = m.tmp
	if p.Isolate {
		// Caches of build tools, writable in the sandbox; the operator's
		// own settings (terminal.env, pass_env) win.
		for k, v := range map[string]string{
			"XDG_CACHE_HOME":   m.cache,
			"npm_config_cache": filepath.Join(m.cache, "npm"),
		} {
			if _, set := m.env[k]; !set {
				m.env[k] = v
			}
		}
		if p.Proxy != "" {
			// Loopback inside the sandbox is the sandbox's own.
			// "[::1]" as well: Python before 3.12 compares the bracketed host.
			m.env["NO_PROXY"], m.env["no_proxy"] = "localhost,127.0.0.1,::1,[::1]", "localhost,127.0.0.1,::1,[::1]"
		}
	}
	if p.Isolate {
		// Helpers started ahead of time, their sandbox ready: most of an
		// isolated command's cost is off its path (sandbox.Warm).
		defer trace.StartRegion(context.Background(), "warm").End()
		m.warm = sandbox.NewWarm(m.cfg.Runner, m.netns.File(), m.limits, m.cfg.KillGrace, warmHelpers, m.warmPolicy)
	}
	m.layers = m.describeLayers(p, isolateWhy, limitsWhy, unixWhy)
	var missing []string
	for _, l := range m.layers {
		if l.InForce {
			log.Info("sandbox layer in force", "layer", l.Name, "how", l.Detail)
		} else {
			log.Warn("sandbox layer MISSING", "layer", l.Name, "why", l.Detail)
			missing = append(missing, l.Name+" ("+l.Detail+")")
		}
	}
	if m.cfg.RequireSandbox && len(missing) > 0 {
		return fmt.Errorf("terminal: the sandbox is required (terminal.sandbox: require) but layers are missing: %s; use sandbox: auto to run with what this machine offers", strings.Join(missing, "; "))
	}
	return nil
}

// describeLayers says which layers p enforces here.
//
// The network layer says how unix sockets outside the sandbox are held
// (unixGuards). Either way the layer is in force, as before the guards
// existed: terminal.sandbox: require does not refuse a machine without
// them, and the detail says which promise holds.
func (m *Manager) describeLayers(p sandbox.Policy, isolateWhy, limitsWhy, unixWhy string) []sandbox.Layer {
	abi := sandbox.LandlockABI()
	landlock := "no Landlock"
	if abi > 0 {
		landlock = fmt.Sprintf("Landlock ABI %d", abi)
	}
	var ls []sandbox.Layer
	if p.Isolate {
		ls = append(ls,
			sandbox.Layer{Name: sandbox.LayerWrites, InForce: true, Detail: "mount namespace: everything read-only but the workspace, the temp dir, the cache dir and terminal.writable; no capabilities; " + landlock},
			sandbox.Layer{Name: sandbox.LayerReads, InForce: true, Detail: "mount namespace: sensitive paths (~/.ssh, cloud and registry credentials, .env and key files of the workspace, shell histories, toold's and toolctl's state) masked as each command starts; private /proc; " + m.secretsHow()},
		)
		if unixWhy == "" {
			unixWhy = "no per-command cgroups to tell commands by"
		}
		unixHow := unixGuards(m.unixGuard, unixWhy)
		tcp := "no other TCP"
		if sandbox.UnixSupervisorSupported() == nil {
			tcp = "no other TCP out; a command's own TCP servers on loopback reachable to it, no other command's"
		}
		if p.Proxy != "" {
			ls = append(ls, sandbox.Layer{Name: sandbox.LayerNetwork, InForce: true, Detail: "network namespace with loopback only; toold's egress proxy forwarded in at " + p.Proxy + " (host rules, private-address guard); no UDP, " + tcp + ", no DNS" + unixHow})
		} else {
			ls = append(ls, sandbox.Layer{Name: sandbox.LayerNetwork, InForce: true, Detail: "network namespace with loopback only: no network (terminal.network: false)" + unixHow})
		}
		ls = append(ls, sandbox.Layer{Name: sandbox.LayerControlPlane, InForce: true, Detail: "toold's socket masked and its processes invisible (pid namespace); abstract sockets are the namespace's own"})
	} else {
		w := sandbox.Layer{Name: sandbox.LayerWrites, InForce: abi > 0, Detail: landlock + ": writes only in the workspace, the temp dir and terminal.writable"}
		if abi == 0 {
			w.Detail = "no namespaces (" + isolateWhy + ") and no Landlock on this kernel"
		}
		ls = append(ls, w, sandbox.Layer{Name: sandbox.LayerReads, Detail: isolateWhy})
		ls = append(ls, supervisedLayers(p, isolateWhy, abi)...)
	}
	if m.limits != nil && limitsWhy == "" {
		ls = append(ls, sandbox.Layer{Name: sandbox.LayerResources, InForce: true, Detail: m.limits.Describe()})
	} else {
		ls = append(ls, sandbox.Layer{Name: sandbox.LayerResources, Detail: limitsWhy})
	}
	return ls
}

// supervisedLayers are the network and control plane layers of the
// Landlock-only sandbox (no namespaces: isolateWhy): in force where each
// command's helper supervises its connects (sandbox.Policy's
// supervisedWithoutNamespaces: a kernel with the supervisor's needs,
// terminal.network proxy or false), missing otherwise.
func supervisedLayers(p sandbox.Policy, isolateWhy string, abi int) []sandbox.Layer {
	sup := sandbox.UnixSupervisorSupported()
	if !p.NoNetwork || p.NoUnixSupervisor || sup != nil {
		why := isolateWhy
		if p.NoNetwork && sup != nil {
			why += "; no seccomp supervisor: " + sup.Error()
		}
		return []sandbox.Layer{{Name: sandbox.LayerNetwork, Detail: why}, {Name: sandbox.LayerControlPlane, Detail: why}}
	}
	out := "no network (terminal.network: false)"
	if p.Proxy != "" {
		out = "TCP only to toold's egress proxy at " + p.Proxy + " (host rules, private-address guard) and to the command's own listeners"
	}
	bind := "TCP bind to ports the kernel picks only (Landlock), listeners in toold's network namespace"
	if abi < 4 {
		bind = "TCP bind NOT restricted (Landlock ABI 4 needed), listeners in toold's network namespace"
	}
	return []sandbox.Layer{
		{Name: sandbox.LayerNetwork, InForce: true, Detail: "no network namespace (" + isolateWhy + "): every connect is made by the command's helper (seccomp supervisor): " + out +
			"; unix sockets only the command's own; no UDP, raw or other sockets, no TCP Fast Open, no DNS; " + bind},
		{Name: sandbox.LayerControlPlane, InForce: true, Detail: "toold's socket and listeners refused to commands by their helper's supervisor (not the command's own), and toold refuses its commands' processes as clients; toold cannot be signalled or traced (Landlock); its processes are visible (no pid namespace)"},
	}
}

// openSecretGuard starts the guard of the secrets that appear in the
// workspace or a home directory while a command runs
// (sandbox.SecretGuard), or notes why it cannot (secretWhy): without it,
// such a secret is masked only for the commands that start after it.
func (m *Manager) openSecretGuard() {
	if m.cfg.NoSecretGuard {
		m.secretWhy = "terminal.secret_guard is false (the operator's choice)"
		return
	}
	if m.cfg.Secrets == nil {
		m.secretWhy = "no sensitive paths configured"
		return
	}
	// The workspace, whole but for what the masks' walk skips
	// (skipDirs), and in every home directory whose secrets are masked
	// (toold's, /root, /home/*) the way to those secrets
	// (Config.HomeSecrets).
	roots := []string{m.ws.Dir()}
	homes, _ := filepath.Glob("/home/*")
	if home, err := os.UserHomeDir(); err == nil {
		homes = append(homes, home)
	}
	for _, h := range append(homes, "/root") {
		real, err := filepath.EvalSymlinks(h)
		if err != nil || real == "/" || slices.Contains(roots, real) {
			continue
		}
		if fi, err := os.Stat(real); err == nil && fi.IsDir() {
			roots = append(roots, real)
		}
	}
	r := trace.StartRegion(context.Background(), "secretguard")
	g, err := sandbox.OpenSecretGuard(sandbox.SecretGuardConfig{Roots: roots[:1], Homes: roots[1:], HomePaths: m.cfg.HomeSecrets,
		Skip: func(name string) bool { return skipDirs[name] }, Sensitive: m.cfg.Secrets.Sensitive, Netns: m.netns.File(), Logger: m.cfg.Logger})
	r.End()
	if err != nil {
		m.secretWhy = err.Error()
		return
	}
	m.secretGuard = g
}

// secretsHow says, for the reads layer, what holds a secret that appears
// while a command runs.
func (m *Manager) secretsHow() string {
	if m.secretGuard != nil {
		return m.secretGuard.Describe()
	}
	return "a secret that appears while a command runs is NOT refused to it, only masked for the commands after it (no secret guard: " + m.secretWhy + ")"
}

// unixGuards says, for the network layer, what holds unix sockets bound
// outside the sandbox after a command started: the BPF LSM guard (g, or
// why not: unixWhy) and the seccomp supervisor of each command's helper
// (sandbox.UnixSupervisorSupported, or why not); with neither, only the
// masks made as each command starts.
func unixGuards(g *sandbox.UnixGuard, unixWhy string) string {
	sup := sandbox.UnixSupervisorSupported()
	switch {
	case g != nil && sup == nil:
		return "; " + g.Describe() + "; and " + sandbox.UnixSupervisorDetail
	case g != nil:
		return "; " + g.Describe() + " (no seccomp supervisor: " + sup.Error() + ")"
	case sup == nil:
		return "; " + sandbox.UnixSupervisorDetail + " (no BPF LSM guard: " + unixWhy + ")"
	}
	return "; unix sockets outside the sandbox masked as each command starts, NOT those bound later (no kernel guard: " + unixWhy + "; no seccomp supervisor: " + sup.Error() + ")"
}

// WarmReady returns how many sandbox helpers are ready for isolated
// commands and how many the manager keeps (sandbox.Warm.Ready; 0, 0
// without them).
func (m *Manager) WarmReady() (ready, size int) {
	if m == nil {
		return 0, 0
	}
	return m.warm.Ready()
}

// Layers returns the layers of the boundary around commands and whether
// each is in force; nil when commands run without a sandbox
// (terminal.sandbox: off).
func (m *Manager) Layers() []sandbox.Layer {
	if m == nil || m.policy == nil {
		return nil
	}
	return slices.Clone(m.layers)
}

// policyFor returns the policy of a command starting now: the sandbox's,
// with the workspace's secrets and the unix sockets outside the sandbox's
// writable directories added to its masks. The sockets bound in toold's
// network namespace are read now, for this command
// (sandbox.BoundUnixSockets: one kernel table, never cached — a socket
// bound a moment ago is masked too); the walks (the workspace's secrets,
// the runtime directories' sockets) are reused for hiddenTTL, unless a
// secret they found has moved since (hiddenCache.moved) or a name changed
// in a directory they read (hiddenCache.changed).
//
// The workspace's git directories found by the same walk (gitDirs) are
// read-only in the command's view (sandbox.Policy.ReadOnly), unless the
// operator let commands write them (Config.GitWritable): a person's git,
// outside any sandbox, runs what a repository's config and hooks name,
// so no command may write them — nor the submodules below directories
// the walk skips and what the repositories' configuration names
// (gitNamedCache). toold's version-control tool writes
// through Exec, which runs git with them writable and nothing of the
// repository's run.
func (m *Manager) policyFor() *sandbox.Policy {
	if m.policy == nil || !m.policy.Isolate {
		return m.policy
	}
	secrets, gits := m.hidden.get(m.ws.Dir(), m.cfg.Secrets, m.dir, m.policy.Writable, m.cfg.OtherStateDirs)
	bound := sandbox.BoundUnixSockets(m.policy.Writable)
	m.hidden.setBound(bound)
	if m.cfg.GitWritable {
		gits = nil
	} else {
		gits = append(slices.Clip(gits), m.gitNamed.get(m.ws.Dir(), gits, m.policy.Writable)...)
	}
	if len(secrets) == 0 && len(bound) == 0 && len(gits) == 0 {
		return m.policy
	}
	p := *m.policy
	p.Hide = append(append(slices.Clip(p.Hide), secrets...), bound...)
	p.ReadOnly = gits
	return &p
}

// GitNamedPaths implements tools.GitNamed: the paths policyFor makes
// read-only for a command starting now — the workspace's git directories
// of the walk and what gitNamedCache finds — computed by the same caches
// (with the workspace as the only writable directory when commands run
// without a sandbox). Nil when Config.GitWritable lets commands write them.
func (m *Manager) GitNamedPaths() []string {
	if m == nil || m.cfg.GitWritable {
		return nil
	}
	dir := m.ws.Dir()
	writable := []string{dir}
	var gits []string
	if m.policy != nil && m.policy.Isolate {
		writable = m.policy.Writable
		_, gits = m.hidden.get(dir, m.cfg.Secrets, m.dir, writable, m.cfg.OtherStateDirs)
	}
	return slices.Concat(gits, m.gitNamed.get(dir, gits, writable))
}

// warmHelpers is how many sandboxed helpers are kept ready (sandbox.Warm):
// enough for a burst of commands; each is a small idle process.
const warmHelpers = 4

// warmPolicy is the policy a warm helper prepares its view for: the
// sandbox's, with the workspace's secrets and the sockets of the last walk
// and the bound sockets of the last command (none before the first one).
// It neither walks nor reads the socket table: a command's own masks are
// those of policyFor when it starts, and the helper adds what its view
// lacks — on the command's path, so the view should lack nothing as a rule.
func (m *Manager) warmPolicy() *sandbox.Policy {
	p := *m.policy
	hide, gits := m.hidden.last()
	p.Hide = append(append(slices.Clip(p.Hide), hide...), m.hidden.lastBound()...)
	if !m.cfg.GitWritable {
		p.ReadOnly = append(slices.Clip(gits), m.gitNamed.lastPaths()...)
	}
	return &p
}

// hiddenTTL is how long a walk of the workspace for secrets is reused;
// hiddenBudget bounds the entries one walk looks at.
const (
	hiddenTTL    = 2 * time.Second
	hiddenBudget = 50000
)

// hiddenCache keeps the last walk of the workspace for secrets, and the
// bound sockets a command last masked.
type hiddenCache struct {
	mu    sync.Mutex
	at    time.Time
	paths []string
	bound []string
	// gits are the git directories of the last walk (gitDirs).
	gits []string
	// found are the workspace's secrets of the last walk, each with the
	// file it was (device and inode): a walk is reused only while every
	// one of them is still that file at that path. A command that renames
	// a directory holding a secret (its mask moves with it in that
	// command's view) moved it out of every later command's masks until
	// the next walk: `mv cfg x`, then `cat x/.env`.
	found []foundSecret
	// watch is an inotify instance (non-blocking) with a watch on every
	// directory the last walk read, added before the walk read it: a name
	// created, removed or renamed in any of them since queues an event.
	// A walk is reused only while none is queued — a person writing a
	// .env or a key into the workspace between two commands, renaming a
	// file to such a name or moving in a directory holding one is in the
	// very next command's masks, not 2 s later. settled is false when a
	// directory could not be watched (the inotify limits): that walk is
	// not reused. closed: the Manager is closed; no more watches.
	watch            int
	watching, closed bool
	settled          bool
}

// watchMask is what a watched directory reports: any change of its names,
// and its own removal or rename.
const watchMask = unix.IN_CREATE | unix.IN_DELETE | unix.IN_MOVED_FROM | unix.IN_MOVED_TO |
	unix.IN_DELETE_SELF | unix.IN_MOVE_SELF | unix.IN_ONLYDIR | unix.IN_DONT_FOLLOW

// changed reports whether a name changed in a directory of the last walk
// since the walk read it (or whether that cannot be told).
func (h *hiddenCache) changed() bool {
	if !h.watching {
		return true
	}
	var buf [4096]byte // room for an event with the longest name
	n, err := unix.Read(h.watch, buf[:])
	return n > 0 || !errors.Is(err, unix.EAGAIN)
}

// rewatch drops the last walk's watches and starts an empty inotify
// instance for the next walk; it reports false when there is none.
func (h *hiddenCache) rewatch() bool {
	if h.watching {
		unix.Close(h.watch)
		h.watching = false
	}
	if h.closed {
		return false
	}
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		return false
	}
	h.watch, h.watching = fd, true
	return true
}

// watchDir watches directory path for the walk about to read it.
func (h *hiddenCache) watchDir(path string) bool {
	if !h.watching {
		return false
	}
	_, err := unix.InotifyAddWatch(h.watch, path, watchMask)
	return err == nil
}

// close releases the watches; later walks are not reused.
func (h *hiddenCache) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	h.rewatch()
}

// foundSecret is a secret the walk found in the workspace.
type foundSecret struct {
	path     string
	dev, ino uint64
}

// moved reports whether a secret of the last walk is no longer the same
// file at the same path (renamed, removed or replaced).
func (h *hiddenCache) moved() bool {
	for _, f := range h.found {
		dev, ino, ok := fileID(f.path)
		if !ok || dev != f.dev || ino != f.ino {
			return true
		}
	}
	return false
}

// fileID returns the device and inode of path (not following a final
// symbolic link).
func fileID(path string) (dev, ino uint64, ok bool) {
	var st syscall.Stat_t
	if syscall.Lstat(path, &st) != nil {
		return 0, 0, false
	}
	return uint64(st.Dev), st.Ino, true
}

// setBound records the bound sockets masked for a command starting now.
func (h *hiddenCache) setBound(bound []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.bound = bound
}

// lastBound returns the bound sockets of the last setBound.
func (h *hiddenCache) lastBound() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.bound
}

// last returns the paths and git directories of the last walk, without
// walking.
func (h *hiddenCache) last() (paths, gits []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.paths, h.gits
}

// skipDirs are not walked for secrets: they hold what tools fetched, not
// the operator's credentials, and can be huge.
var skipDirs = map[string]bool{".git": true, "node_modules": true, ".venv": true, "venv": true, "target": true, "vendor": true, "__pycache__": true}

// get returns the sensitive files and directories of the workspace dir,
// and the socket files below the runtime directories outside the writable
// directories; and the git directories of the workspace: every directory
// named .git (not walked into), every file named .git, and the git
// directory a .git file names (a worktree's, a submodule's) with its
// common directory, when they are inside a writable directory. Symbolic links are not followed (what one
// points to is masked where it is, when it is sensitive there). The walk
// does not enter skipDirs: a repository below node_modules or vendor is
// not found by it (a submodule there is, from its repository's index:
// gitNamedCache).
func (h *hiddenCache) get(dir string, s Sensitivity, own string, writable []string, otherState func() []string) (paths, gits []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if time.Since(h.at) < hiddenTTL && h.settled && !h.moved() && !h.changed() {
		return h.paths, h.gits
	}
	var gitDirs []string
	addGit := func(p string) {
		if !slices.Contains(gitDirs, p) {
			gitDirs = append(gitDirs, p)
		}
	}
	h.found = h.found[:0]
	settled := h.rewatch() && s != nil
	// Other toolds' output directories beside this one's.
	others, _ := filepath.Glob(filepath.Join(filepath.Dir(own), dirPrefix+"*"))
	out := slices.DeleteFunc(others, func(p string) bool { return p == own })
	out = append(out, sandbox.RuntimeUnixSockets(writable)...)
	if otherState != nil {
		out = append(out, otherState()...)
	}
	budget := hiddenBudget
	if s == nil {
		budget = 0
	}
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if budget--; budget < 0 {
			return filepath.SkipAll
		}
		if err != nil {
			// A directory that cannot be read is not known to be unchanged.
			settled = false
			return nil
		}
		if p == dir {
			// WalkDir reads a directory after calling this for it: the
			// watch is there before the read.
			settled = h.watchDir(p) && settled
			return nil
		}
		if d.Name() == ".git" {
			switch {
			case d.IsDir():
				addGit(p)
			case d.Type().IsRegular():
				// The file itself too (a submodule's, a worktree's): a
				// command rewriting it to name a repository of its own
				// would have the person's git run that one's config;
				// read-only, it also pins the work tree holding it.
				addGit(p)
				for _, g := range gitFileDirs(p, writable) {
					addGit(g)
				}
			case d.Type()&fs.ModeSymlink != 0:
				// A .git linked to a directory of the workspace.
				if g := resolveIn(filepath.Dir(p), p); g != "" && inside(g, writable) {
					addGit(g)
				}
			}
		}
		if d.IsDir() && skipDirs[d.Name()] {
			return filepath.SkipDir
		}
		if d.Type()&fs.ModeSymlink != 0 {
			return nil
		}
		if s.Sensitive(p) {
			out = append(out, p)
			if dev, ino, ok := fileID(p); ok {
				h.found = append(h.found, foundSecret{path: p, dev: dev, ino: ino})
			}
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			settled = h.watchDir(p) && settled
		}
		return nil
	})
	if budget < 0 {
		// The walk stopped early: what it did not read is not masked
		// anyway, and the next command walks again.
		settled = false
	}
	// The workspace's own .git, even where the walk stopped before it.
	if g := resolveIn(dir, ".git"); g != "" && inside(g, writable) {
		addGit(g)
	}
	h.at, h.paths, h.gits, h.settled = time.Now(), out, gitDirs, settled
	return out, gitDirs
}

// gitFileDirs returns the git directory a .git file names ("gitdir: PATH",
// relative to the file's directory) and that directory's common directory
// (a worktree's "commondir"), those of them inside a writable directory,
// symbolic links resolved.
func gitFileDirs(file string, writable []string) []string {
	var out []string
	gd := readPathFile(file, "gitdir: ")
	if gd == "" {
		return nil
	}
	gd = resolveIn(filepath.Dir(file), gd)
	if gd == "" {
		return nil
	}
	out = append(out, gd)
	if cd := readPathFile(filepath.Join(gd, "commondir"), ""); cd != "" {
		if cd = resolveIn(gd, cd); cd != "" {
			out = append(out, cd)
		}
	}
	return slices.DeleteFunc(out, func(p string) bool { return !inside(p, writable) })
}

// inside reports whether p is one of dirs or below one.
func inside(p string, dirs []string) bool {
	return slices.ContainsFunc(dirs, func(d string) bool { return p == d || strings.HasPrefix(p, d+"/") })
}

// readPathFile reads the first line of a small file and returns it
// without prefix ("" when it is not there or does not start so).
func readPathFile(path, prefix string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	var buf [4096]byte
	n, _ := io.ReadFull(f, buf[:])
	line, _, _ := strings.Cut(string(buf[:n]), "\n")
	rest, ok := strings.CutPrefix(strings.TrimSpace(line), prefix)
	if !ok {
		return ""
	}
	return rest
}

// resolveIn returns p (relative to dir unless absolute) cleaned, with
// symbolic links resolved, when it is a directory; "" otherwise.
func resolveIn(dir, p string) string {
	if !filepath.IsAbs(p) {
		p = filepath.Join(dir, p)
	}
	r, err := filepath.EvalSymlinks(p)
	if err != nil {
		return ""
	}
	if fi, err := os.Stat(r); err != nil || !fi.IsDir() {
		return ""
	}
	return r
}

// Exec runs a program toold needs on a model's behalf (the git of the
// version-control tools) as commands run: under a helper, in the sandbox
// when one is configured, with exactly env (TMPDIR is the sandbox's temp
// dir) — but with the workspace's git directories writable, which no
// command's view has (policyFor): the caller runs git so that nothing a
// repository names runs (pkg/tools/vcs). Its output goes to stdout and stderr; it returns the exit status,
// -1 when a signal ended it. When ctx ends the tree is stopped and Exec
// returns ctx's error once it is gone.
func (m *Manager) Exec(ctx context.Context, path string, args, env []string, dir string, stdout, stderr io.Writer) (int, error) {
	m.mu.Lock()
	if err := m.enterLocked(); err != nil {
		m.mu.Unlock()
		return -1, err
	}
	m.wg.Add(1)
	m.mu.Unlock()
	defer m.wg.Done()
	if m.policy != nil {
		env = append(slices.DeleteFunc(slices.Clone(env), func(kv string) bool { return strings.HasPrefix(kv, "TMPDIR=") }), "TMPDIR="+m.tmp)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		return -1, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return -1, err
	}
	spec := sandbox.Spec{Path: path, Args: args, Env: env, Dir: dir, Grace: m.cfg.KillGrace, Policy: m.policyFor()}
	if spec.Policy != nil && len(spec.Policy.ReadOnly) > 0 {
		// A warm helper's view has them read-only: it lifts them.
		p := *spec.Policy
		p.ReadOnly = nil
		spec.Policy = &p
	}
	h, err := m.startHelper(ctx, spec, sandbox.Stdio{Stdout: outW, Stderr: errW})
	outW.Close()
	errW.Close()
	if err != nil {
		outR.Close()
		errR.Close()
		return -1, m.startError(ctx, err)
	}
	var copies sync.WaitGroup
	copies.Add(2)
	go func() { defer copies.Done(); _, _ = io.Copy(stdout, outR) }()
	go func() { defer copies.Done(); _, _ = io.Copy(stderr, errR) }()
	exit := h.Exit()
	copies.Wait()
	outR.Close()
	errR.Close()
	if ctx.Err() != nil {
		return -1, ctx.Err()
	}
	if exit.Err != nil {
		return -1, exit.Err
	}
	return exit.Code, nil
}

// startHelper starts spec under a helper, in the sandbox's network
// namespace and in a cgroup of its own with the limits (when they are in
// force), which it releases once the tree is gone.
func (m *Manager) startHelper(ctx context.Context, spec sandbox.Spec, stdio sandbox.Stdio) (*sandbox.Process, error) {
	if spec.Policy == nil || !spec.Policy.Isolate {
		return m.cfg.Runner.Start(ctx, spec, stdio)
	}
	if h, ok, err := m.warm.Start(ctx, spec, stdio); ok {
		return h, err
	}
	stdio.Netns = m.netns.File()
	slot, err := m.limits.Take()
	if err != nil {
		// Fail closed: a command the limits were promised for does not
		// run without them.
		return nil, &sandbox.StartError{Msg: "the command's cgroup could not be made: " + err.Error()}
	}
	stdio.Slot = slot
	h, err := m.cfg.Runner.Start(ctx, spec, stdio)
	if err != nil {
		slot.Release()
		return nil, err
	}
	if slot != nil {
		m.wg.Add(1)
		go func() {
			defer m.wg.Done()
			select {
			case <-h.Reaped():
				// Empty then: removed without waiting.
				slot.Release()
			case <-m.detach:
				// A shim's tree runs on in the slot after toold (Close
				// keeps it): Release lets go of the slot's thread and
				// leaves cgroups that hold a shim, which the sweep of a
				// later toold removes once the shim is gone. Other trees
				// are stopping.
				if spec.Shim == nil {
					<-h.Reaped()
				}
				slot.Release()
			}
		}()
	}
	return h, nil
}

var _ tools.GitNamed = (*Manager)(nil)
