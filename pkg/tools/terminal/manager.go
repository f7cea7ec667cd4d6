package terminal

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/trace"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/leftover"
	"github.com/toold/toold/pkg/sandbox"
	"github.com/toold/toold/pkg/tools"
	"github.com/toold/toold/pkg/workspace"
)

// Config configures a Manager. Zero fields take the defaults noted.
type Config struct {
	// Workspace is where commands run; working directories are confined to
	// it. Required; the caller keeps it open while the Manager is in use.
	Workspace *workspace.Workspace
	// Shell is the shell that runs commands (Shell -c COMMAND) and the
	// default program of sessions. Default "bash", or "sh" where no bash is
	// on PATH (a minimal container image). A shell other than bash runs
	// only command lines that parse as POSIX sh (see checkSyntax), since
	// policy judges command lines as bash parses them.
	Shell string
	// SessionArgs are the arguments of Shell in sessions (default: -il for
	// bash and zsh, an interactive login shell; -i for other shells).
	SessionArgs []string
	// PassEnv names the variables of toold's environment commands inherit
	// (default DefaultPassEnv). Names starting with TOOLD_ are never passed.
	PassEnv []string
	// Env is added to every command's environment.
	Env map[string]string
	// Sandbox, when set, confines every command and session (see
	// pkg/sandbox and sandbox.go here). The workspace, the Manager's temp
	// dir and its cache dir are added to its Writable; where the machine
	// cannot isolate or limit commands, NewManager turns those layers off
	// and Layers says why.
	Sandbox *sandbox.Policy
	// RequireSandbox makes NewManager fail unless every layer of the
	// sandbox is in force (terminal.sandbox: require).
	RequireSandbox bool
	// OtherStateDirs, when set, returns the state directories of the
	// other toolds of this user (their history, audit, keys): sandboxed
	// commands cannot read them either. It is called at a command's start,
	// at most once per hiddenTTL.
	OtherStateDirs func() []string
	// GitWritable lets sandboxed commands write the workspace's git
	// directories. By default they are read-only in every command's view
	// (policyFor): a person's own git, outside any sandbox, runs what a
	// repository's config and hooks name (core.fsmonitor, a hook, a
	// filter), so a command that could write them could plant a program
	// for the person to run. toold's version-control tool (Exec) writes
	// them either way.
	GitWritable bool
	// NoSecretGuard turns the secret guard off (terminal.secret_guard:
	// false): a secret that appears while a command runs is then masked
	// only for the commands that start after it.
	NoSecretGuard bool
	// Secrets tells which files of the workspace sandboxed commands must
	// not read (.env, keys): they are masked. Nil: none besides
	// Sandbox.Hide.
	Secrets Sensitivity
	// Runner starts the helpers that supervise (and confine) sessions,
	// sandboxed commands, and every command when cgroups are not used; and
	// the guard of the cgroups. When Runner.Helper is empty, a toold-helper
	// binary next to the running executable is used if it answers a probe,
	// and otherwise the running binary is re-executed (which must then call
	// sandbox.RunHelperIfRequested first thing).
	Runner sandbox.Runner
	// Supervision chooses how the process trees of commands (run_command,
	// foreground and background) are supervised: "" or "auto" runs each
	// unconfined command in a cgroup of its own when the kernel allows it
	// (see sandbox.Cgroups; no process per command besides the command)
	// and under a helper otherwise; "helper" always uses a helper.
	Supervision string
	// KillGrace is how long a process tree gets between SIGTERM and
	// SIGKILL when it is stopped (default 2s).
	KillGrace time.Duration
	// StateDir, when set, is toold's state directory (held by this toold
	// alone, masked in the sandbox): background processes and sessions
	// then run under shims that outlive toold, with their output in
	// StateDir/procs, and NewManager adopts what a toold before it left
	// there (survive.go). Empty: they end with toold.
	StateDir string
	// OrphanTimeout is how long a shim's tree runs on with no toold
	// owning it before it is stopped (default 1h).
	OrphanTimeout time.Duration
	// KeepOnShutdown keeps background processes and sessions running at
	// Close, for the next toold to adopt; by default Close stops them.
	KeepOnShutdown bool
	// ConversationSecret returns the secret of a conversation ("" when
	// unknown); a verifier of it (verifier.go, never the secret) is kept
	// with its processes so that an adopting toold can let the
	// conversation's client reach them again (Adopted, VerifySecret). Nil:
	// adopted processes are reachable by no client until their
	// conversation is reaped.
	ConversationSecret func(conv string) string
	// Dir is where the Manager creates its directory of kept outputs and
	// the commands' temp dir (default os.TempDir()). The directory is
	// removed by Close.
	Dir string
	// KeepPerCall caps the bytes kept of one command's output (default
	// 64 MiB); KeepTotal caps all kept output together (default 1 GiB).
	// See store for what happens at the limits.
	KeepPerCall, KeepTotal int64
	// KeepCount caps how many finished commands' outputs are kept
	// (default 1000); KeepAge how long after its command ended an output
	// is kept (default 1h). The oldest go first.
	KeepCount int
	KeepAge   time.Duration
	// SessionBuffer is how many bytes of output a session keeps (default
	// 1 MiB); older output is dropped.
	SessionBuffer int
	// MaxProcesses caps the running background processes of a conversation
	// (default 16), MaxSessions its open sessions (default 16). The daemon
	// as a whole allows 16 times as many of each.
	MaxProcesses, MaxSessions int
	// Limits shape results for the model (OutputBytes, LineChars,
	// SearchMatches).
	Limits tools.Limits
	// Logger receives start-up notes and process lifecycle events.
	Logger *slog.Logger
}

func (c Config) withDefaults() Config {
	if c.KillGrace <= 0 {
		c.KillGrace = 2 * time.Second
	}
	if c.Dir == "" {
		c.Dir = os.TempDir()
	}
	if c.KeepPerCall <= 0 {
		c.KeepPerCall = 64 << 20
	}
	if c.KeepTotal <= 0 {
		c.KeepTotal = 1 << 30
	}
	if c.KeepCount <= 0 {
		c.KeepCount = defaultKeepCount
	}
	if c.KeepAge <= 0 {
		c.KeepAge = defaultKeepAge
	}
	if c.SessionBuffer <= 0 {
		c.SessionBuffer = 1 << 20
	}
	if c.OrphanTimeout <= 0 {
		c.OrphanTimeout = defaultOrphanTimeout
	}
	if c.MaxProcesses <= 0 {
		c.MaxProcesses = 16
	}
	if c.MaxSessions <= 0 {
		c.MaxSessions = 16
	}
	c.Limits = c.Limits.WithDefaults()
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// ErrNoShell is the class of NewManager's error when the shell that runs
// commands is not installed. Without one, terminal_operations cannot work;
// a daemon may start without the tool and say why (pkg/daemon does).
var ErrNoShell = errors.New("no shell to run commands")

// defaultShells are tried in order when Config.Shell is empty.
var defaultShells = []string{"bash", "sh"}

// findShell resolves the configured shell, or the first of defaultShells on
// PATH, to an absolute path. It fails with ErrNoShell when there is none.
func findShell(configured string) (string, error) {
	names := defaultShells
	if configured != "" {
		names = []string{configured}
	}
	var errs []error
	for _, name := range names {
		path, err := exec.LookPath(name)
		if err == nil {
			return filepath.Abs(path)
		}
		errs = append(errs, err)
	}
	if configured != "" {
		return "", fmt.Errorf("%w: terminal.shell %q: %w", ErrNoShell, configured, errors.Join(errs...))
	}
	return "", fmt.Errorf("%w: neither bash nor sh is on PATH (%s)", ErrNoShell, os.Getenv("PATH"))
}

// errManagerClosed is the cause of the Manager's context after Close.
var errManagerClosed = errors.New("toold is shutting down")

// Manager owns the commands, background processes, terminal sessions and
// kept outputs of a daemon. It is safe for concurrent use.
//
// Lifetimes: a foreground command lives within its call. Background
// processes and sessions belong to a conversation and outlive the call and
// the stream that started them: a client that reconnects with the same
// conversation id finds them again. They end when killed or closed, when
// they exit, or when Close stops everything (toold's shutdown). Every
// goroutine the Manager starts belongs to a process or a session and ends
// with it; Close waits for all of them.
type Manager struct {
	cfg    Config
	ws     *workspace.Workspace
	shell  string // absolute path of cfg.Shell
	policy *sandbox.Policy
	layers []sandbox.Layer
	limits *sandbox.Limits // the commands' cgroup limits, when in force
	// unixGuard holds unix sockets outside the sandbox in the kernel
	// (BPF LSM), when this machine lets toold load it.
	unixGuard *sandbox.UnixGuard
	// secretGuard refuses commands the secrets that appear while they run
	// (fanotify), when this machine lets toold mark files; secretWhy says
	// why not otherwise.
	secretGuard *sandbox.SecretGuard
	secretWhy   string
	netns       *sandbox.Netns // the isolated commands' network namespace
	warm        *sandbox.Warm  // helpers ready for isolated commands, or nil
	hidden      hiddenCache
	dir         string // the Manager's own directory
	tmp         string // TMPDIR of sandboxed commands
	cache       string // XDG_CACHE_HOME (and npm's cache) of sandboxed commands
	store       *store
	env         map[string]string
	// cmdEnv is the environment of commands without extra variables
	// (commandEnv).
	cmdEnv     []string
	cmdEnvOnce sync.Once
	// cgroups, when set, runs unconfined commands without a helper.
	cgroups       *sandbox.Cgroups
	cgroupsFailed sync.Once // logs the fall back to helpers once

	// gitNamed: what the workspace's repositories name beside their git
	// directories (submodules, programs of their configuration).
	gitNamed gitNamedCache

	ctx    context.Context // ends at Close; background work derives from it
	cancel context.CancelCauseFunc
	wg     sync.WaitGroup // goroutines of processes and sessions

	// procsDir holds the directories of the shims of background processes
	// and sessions (survive.go), "" when they do not outlive toold.
	procsDir string
	// journal records the foreground commands running (survive.go); in
	// procsDir.
	journal callJournal
	// detach is closed by Close when it keeps shims running: their
	// goroutines let go of them.
	detach     chan struct{}
	detachOnce sync.Once
	adopted    map[string]string // conversation -> verifier of its secret, of what adopt found
	// verifierKey keys the verifiers of conversation secrets (verifier.go).
	verifierKey []byte
	// interrupted are the foreground commands a toold that died ran.
	interrupted []InterruptedCall
	// keepHomes are directories of earlier toolds' Managers that adopted
	// trees still use (their TMPDIR): the leftover sweep leaves them.
	keepHomes map[string]bool

	mu       sync.Mutex
	closed   bool
	procs    map[string]*process // running and recently ended, by id
	sessions map[string]*Session // by id
}

// NewManager checks cfg and prepares the Manager's directory. It reports
// on the sandbox through cfg.Logger and fails when the sandbox is required
// and the kernel lacks Landlock.
func NewManager(cfg Config) (*Manager, error) {
	cfg = cfg.withDefaults()
	if cfg.Workspace == nil {
		return nil, errors.New("terminal: a workspace is required")
	}
	shell, err := findShell(cfg.Shell)
	if err != nil {
		return nil, fmt.Errorf("terminal: %w", err)
	}
	if cfg.Shell == "" && filepath.Base(shell) != "bash" {
		cfg.Logger.Info("terminal: bash is not installed; commands run with "+shell+" and must be POSIX sh syntax", "shell", shell)
	}
	cfg.Shell = shell
	if err := os.MkdirAll(cfg.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("terminal: %w", err)
	}
	// The name carries this toold's owner mark, so that a later toold
	// removes the directory should this one die without removing it.
	dir, err := os.MkdirTemp(cfg.Dir, dirPrefix+leftover.Mark()+"-")
	if err != nil {
		return nil, fmt.Errorf("terminal: %w", err)
	}
	m := &Manager{
		cfg: cfg, ws: cfg.Workspace, shell: shell, dir: dir, tmp: filepath.Join(dir, "tmp"), cache: filepath.Join(dir, "cache"),
		env: baseEnv(cfg.PassEnv, cfg.Env), procs: map[string]*process{}, sessions: map[string]*Session{},
		detach: make(chan struct{}), adopted: map[string]string{}, keepHomes: map[string]bool{},
	}
	if cfg.StateDir != "" {
		m.procsDir = filepath.Join(cfg.StateDir, "procs")
		if err := os.MkdirAll(m.procsDir, 0o700); err != nil {
			cfg.Logger.Warn("terminal: background processes and sessions end with toold", "err", err)
			m.procsDir = ""
		} else if m.verifierKey, err = loadVerifierKey(cfg.StateDir); err != nil {
			cfg.Logger.Warn("terminal: background processes and sessions that survive toold are reachable by no client after a restart", "err", err)
		}
	}
	for _, d := range []string{m.tmp, m.cache} {
		if err := os.Mkdir(d, 0o700); err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("terminal: %w", err)
		}
	}
	if m.store, err = newStore(filepath.Join(dir, "outputs"), cfg.KeepPerCall, cfg.KeepTotal, cfg.Limits.OutputBytes); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("terminal: %w", err)
	}
	m.store.maxRecords, m.store.maxAge = cfg.KeepCount, cfg.KeepAge
	var isolation *error // the isolation probe's result through the helper found, if made
	isolate := cfg.Sandbox != nil && cfg.Sandbox.Isolate
	var netnsErr error
	if isolate {
		// The network namespace the isolated commands share, first: the
		// isolation probe runs in it, as they will (setupSandbox).
		r := trace.StartRegion(context.Background(), "netns")
		m.netns, netnsErr = sandbox.OpenNetns(cfg.Sandbox.Proxy)
		r.End()
	}
	if m.cfg.Runner.Helper == "" {
		r := trace.StartRegion(context.Background(), "find helper")
		m.cfg.Runner.Helper, isolation = m.findHelper(isolate && netnsErr == nil)
		r.End()
	}
	if cfg.Sandbox != nil {
		defer trace.StartRegion(context.Background(), "sandbox").End()
		if err := m.setupSandbox(*cfg.Sandbox, isolation, netnsErr); err != nil {
			m.store.close()
			m.warm.Close()
			_ = m.netns.Close()
			_ = m.limits.Close()
			_ = m.unixGuard.Close()
			_ = m.secretGuard.Close()
			os.RemoveAll(dir)
			return nil, err
		}
	}
	switch cfg.Supervision {
	case "", "auto":
		if m.policy == nil {
			m.openCgroups()
		}
	case "helper":
		cfg.Logger.Info("terminal: every command runs under a helper process (supervision: helper)")
	default:
		m.store.close()
		m.warm.Close()
		_ = m.netns.Close()
		_ = m.limits.Close()
		_ = m.unixGuard.Close()
		_ = m.secretGuard.Close()
		os.RemoveAll(dir)
		return nil, fmt.Errorf("terminal: supervision %q: want auto or helper", cfg.Supervision)
	}
	m.ctx, m.cancel = context.WithCancelCause(context.Background())
	if m.shims() {
		m.adopt()
		m.journal.dir = m.procsDir
	}
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		ctx, cancel := context.WithTimeout(m.ctx, leftoverBudget)
		defer cancel()
		if n := removeLeftoverDirs(ctx, cfg.Dir, m.keepHomes); n > 0 {
			cfg.Logger.Info("terminal: removed the output directories of toolds that are gone", "dir", cfg.Dir, "removed", n)
		}
	}()
	return m, nil
}

// dirPrefix starts the name of a Manager's directory in Config.Dir:
// "toold-out-<owner mark>-<random>".
const dirPrefix = "toold-out-"

// leftoverBudget bounds the removal of leftover directories at start.
const leftoverBudget = 30 * time.Second

// removeLeftoverDirs removes the directories of Managers of toolds that no
// longer run (see pkg/leftover) from dir, until ctx ends; it returns how
// many it removed. Only directories (not symlinks) owned by this user and
// named by dirPrefix with a dead owner's mark are touched.
func removeLeftoverDirs(ctx context.Context, dir string, keep map[string]bool) int {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range ents {
		if ctx.Err() != nil {
			break
		}
		rest, ok := strings.CutPrefix(e.Name(), dirPrefix)
		if !ok || !e.IsDir() {
			continue
		}
		mark, _, ok := strings.Cut(rest, "-")
		if !ok || !leftover.Dead(mark) {
			continue
		}
		p := filepath.Join(dir, e.Name())
		if keep[p] {
			continue
		}
		fi, err := os.Lstat(p)
		if err != nil || !fi.IsDir() {
			continue
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); !ok || int(st.Uid) != os.Getuid() {
			continue
		}
		if os.RemoveAll(p) == nil {
			n++
		}
	}
	return n
}

// Shell returns the absolute path of the shell that runs commands.
func (m *Manager) Shell() string { return m.shell }

// Supervision says how unconfined commands are supervised now: "cgroup"
// (a cgroup per command) or "helper" (a helper process per command).
func (m *Manager) Supervision() string {
	if m.cgroups != nil && !m.cgroups.Broken() {
		return "cgroup"
	}
	return "helper"
}

// CgroupDir returns the cgroup directory (a path in the cgroup file system)
// below which unconfined commands run in cgroups of their own, or "" when
// commands run under helper processes only.
func (m *Manager) CgroupDir() string {
	if m.cgroups == nil {
		return ""
	}
	return m.cgroups.Dir()
}

// openCgroups sets m.cgroups when commands can run in cgroups here, and
// says in the log which way commands are supervised.
func (m *Manager) openCgroups() {
	cg, err := sandbox.OpenCgroups(sandbox.CgroupConfig{
		Runner: m.cfg.Runner,
		Grace:  m.cfg.KillGrace,
		Probe: sandbox.Spec{
			Path: m.shell, Args: []string{filepath.Base(m.shell), "-c", "exit 0"}, Env: environ(m.env), Dir: m.ws.Dir(), Grace: time.Second,
		},
	})
	if err != nil {
		m.cfg.Logger.Info("terminal: every command runs under a helper process", "reason", err)
		return
	}
	m.cgroups = cg
	how := "commands run in cgroups of their own below " + cg.Dir()
	if m.policy != nil {
		how = "sandboxed commands run under a helper process each (Landlock is applied there); " + how + " when unconfined"
	}
	m.cfg.Logger.Info("terminal: " + how)
}

// findHelper returns the path of a toold-helper next to the running
// executable that runs a command correctly, or "" (re-execute this binary).
// With isolate (the sandbox wants namespaces) it first probes isolation
// through that helper (sandbox.ProbeIsolationIn, in m.netns), which runs a command through
// it too: one process at start instead of two when both work. isolation is
// then that probe's result for the helper returned (nil: not probed).
func (m *Manager) findHelper(isolate bool) (helper string, isolation *error) {
	exe, err := os.Executable()
	if err != nil {
		return "", nil
	}
	path := filepath.Join(filepath.Dir(exe), sandbox.HelperName)
	if fi, err := os.Stat(path); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
		return "", nil
	}
	if isolate {
		err := sandbox.ProbeIsolationIn(sandbox.Runner{Helper: path, Args: m.cfg.Runner.Args}, m.netns)
		if err == nil {
			m.cfg.Logger.Debug("command helper", "path", path)
			return path, &err
		}
		// Isolation or the helper fails: the probe below tells which.
		isolation = &err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	p, err := sandbox.Runner{Helper: path, Args: m.cfg.Runner.Args}.Start(ctx, sandbox.Spec{
		Path: m.shell, Args: []string{filepath.Base(m.shell), "-c", "exit 0"}, Env: environ(m.env), Dir: m.ws.Dir(), Grace: time.Second,
	}, sandbox.Stdio{})
	if err == nil {
		if exit := p.Exit(); exit.Code != 0 || exit.Err != nil {
			err = fmt.Errorf("probe: %s", exit)
		}
	}
	if err != nil {
		m.cfg.Logger.Warn("ignoring the command helper next to toold; toold runs as its own helper", "helper", path, "err", err)
		return "", nil
	}
	m.cfg.Logger.Debug("command helper", "path", path)
	return path, isolation
}

// Close stops every command, background process and session (SIGTERM to
// each tree, SIGKILL after the kill grace), waits for them until ctx ends,
// and deletes the kept outputs. Calls after Close fail with ErrUnavailable.
// It is safe to call more than once.
func (m *Manager) Close(ctx context.Context) error {
	m.mu.Lock()
	m.closed = true
	var shimProcs []*process
	for _, p := range m.procs {
		if p.shimDir != "" {
			shimProcs = append(shimProcs, p)
		}
	}
	var shimSessions []*Session
	for _, s := range m.sessions {
		if s.shimDir != "" {
			shimSessions = append(shimSessions, s)
		}
	}
	m.mu.Unlock()
	if m.cfg.KeepOnShutdown {
		// The shims' trees run on for the next toold.
		m.detachOnce.Do(func() { close(m.detach) })
	} else {
		// Not bound to the Manager's context: they outlive toold's death.
		for _, p := range shimProcs {
			p.stop(stopShutdown)
		}
		for _, s := range shimSessions {
			s.h.Stop()
		}
	}
	m.cancel(errManagerClosed)
	m.warm.Close()
	m.hidden.close()
	done := make(chan struct{})
	go func() { m.wg.Wait(); close(done) }()
	var err error
	select {
	case <-done:
	case <-ctx.Done():
		// The helpers are killed by their own deadline (grace + margin);
		// the goroutines end shortly after.
		err = fmt.Errorf("terminal: processes still stopping at close: %w", context.Cause(ctx))
	}
	if err == nil {
		m.journal.close()
	} else {
		go func() { <-done; m.journal.close() }()
	}
	if m.cgroups != nil {
		// Only once every process is done: Close kills what is left.
		if err == nil {
			_ = m.cgroups.Close()
		} else {
			go func() { <-done; _ = m.cgroups.Close() }()
		}
	}
	// Without the guard the kernel allows every open of the files it had
	// marked: a command that outlives toold (terminal.survive: keep) is
	// no longer refused the secrets that appeared while it ran.
	_ = m.secretGuard.Close()
	if m.netns != nil {
		_ = m.netns.Close()
	}
	if m.limits != nil {
		if err == nil {
			_ = m.limits.Close()
			_ = m.unixGuard.Close()
		} else {
			go func() { <-done; _ = m.limits.Close(); _ = m.unixGuard.Close() }()
		}
	}
	if !m.cfg.KeepOnShutdown && err == nil {
		for _, p := range shimProcs {
			m.removeShimDir(p.shimDir)
		}
		for _, s := range shimSessions {
			m.removeShimDir(s.shimDir)
		}
	}
	m.store.close()
	if m.cfg.KeepOnShutdown && (len(shimProcs) > 0 || len(shimSessions) > 0) {
		// Kept trees use its TMPDIR; the toold that adopts them removes
		// it once they are gone (as a leftover).
		return err
	}
	if rerr := os.RemoveAll(m.dir); rerr != nil && err == nil {
		err = rerr
	}
	return err
}

// enter fails when the Manager is closed.
func (m *Manager) enterLocked() error {
	if m.closed {
		return errdefs.New(errdefs.ErrUnavailable, "toold is shutting down and starts no new processes")
	}
	return nil
}

// resolveDir confines a working directory from a model to the workspace.
// It returns the directory's absolute path (symlinks resolved) and its
// path relative to the workspace.
func (m *Manager) resolveDir(p string) (abs, rel string, err error) {
	rel, err = m.ws.Rel(p)
	if err != nil {
		return "", "", err
	}
	fi, err := m.ws.Root().Stat(rel)
	if err != nil {
		return "", "", workspace.MapError(p, err)
	}
	if !fi.IsDir() {
		return "", "", errdefs.Failed("working_dir %q is not a directory", p)
	}
	abs, err = filepath.EvalSymlinks(m.ws.Abs(rel))
	if err != nil {
		return "", "", workspace.MapError(p, err)
	}
	if abs != m.ws.Dir() && !strings.HasPrefix(abs, m.ws.Dir()+string(filepath.Separator)) {
		return "", "", &errdefs.Error{Class: errdefs.ErrDenied, Rule: "workspace",
			Msg: fmt.Sprintf("working_dir %q resolves outside the workspace; use a directory inside it", p)}
	}
	return abs, rel, nil
}

// newID returns prefix followed by 8 random hex digits.
func newID(prefix string) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// HoldsConversation reports whether anything of conversation conv is
// left: a background process (running, or ended and still listed), a
// terminal session (open, or exited and still listed), or kept output.
func (m *Manager) HoldsConversation(conv string) bool {
	m.mu.Lock()
	held := false
	for _, p := range m.procs {
		if p.conv == conv {
			held = true
			break
		}
	}
	if !held {
		for _, s := range m.sessions {
			if s.conv == conv {
				held = true
				break
			}
		}
	}
	m.mu.Unlock()
	return held || m.store.holds(conv)
}

// ForgetConversation ends everything of conversation conv: its background
// processes are stopped (SIGTERM to each tree, SIGKILL after the kill
// grace) and its sessions closed, and once they are gone (or ctx ends),
// they and its kept output are forgotten (the output files deleted). The
// daemon calls it for a conversation nobody was attached to for too long.
func (m *Manager) ForgetConversation(ctx context.Context, conv string) error {
	m.mu.Lock()
	var procs []*process
	for _, p := range m.procs {
		if p.conv == conv {
			procs = append(procs, p)
		}
	}
	var sessions []*Session
	for _, s := range m.sessions {
		if s.conv == conv {
			sessions = append(sessions, s)
		}
	}
	m.mu.Unlock()
	var errs []error
	for _, p := range procs {
		p.stop(stopKilled)
	}
	for _, s := range sessions {
		s.h.Stop()
	}
	for _, p := range procs {
		select {
		case <-p.done:
		case <-ctx.Done():
			errs = append(errs, fmt.Errorf("terminal: process %s of conversation %s is still stopping: %w", p.id, conv, context.Cause(ctx)))
		}
	}
	for _, s := range sessions {
		if err := s.Close(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	m.mu.Lock()
	for _, p := range procs {
		if m.procs[p.id] == p && p.isDone() {
			delete(m.procs, p.id)
			m.removeShimDir(p.shimDir)
		}
	}
	for _, s := range sessions {
		if m.sessions[s.id] == s && s.isExited() {
			delete(m.sessions, s.id)
			m.removeShimDir(s.shimDir)
		}
	}
	m.mu.Unlock()
	m.store.dropConversation(conv)
	if len(errs) > 0 {
		m.cfg.Logger.Warn("conversation not fully forgotten", "conversation_id", conv, "err", errors.Join(errs...))
	}
	return errors.Join(errs...)
}
