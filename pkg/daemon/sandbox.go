package daemon

import (
	"os"
	"path/filepath"
	"slices"
	"strings"

	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/toold/toold/pkg/authz"
	"github.com/toold/toold/pkg/tools/terminal"
)

// histories are the shell and REPL histories masked in the sandbox (they
// hold the operator's typed secrets), relative to each home directory.
var histories = []string{
	".bash_history", ".zsh_history", ".zhistory", ".sh_history", ".history",
	".local/share/fish/fish_history", ".python_history", ".node_repl_history",
	".psql_history", ".mysql_history", ".sqlite_history", ".lesshst", ".rediscli_history",
}

// sandboxHide completes the terminal's sandbox policy with what commands
// must not read: the sensitive paths of the policy below home directories
// and absolute ones (authz.DefaultSensitive: ~/.ssh, cloud, registry and
// kube credentials, .netrc, ...), shell histories, toold's state
// directory, configuration, token file and socket, and toolctl's state and
// configuration. The workspace's own secrets (.env, keys) are found when
// each command starts (terminal.Config.Secrets). A path that contains the
// workspace or a writable directory is not masked (it would hide them).
func (m *Main) sandboxHide(tcfg *terminal.Config) {
	if tcfg.Sandbox == nil {
		return
	}
	tcfg.Secrets = m.Capabilities.Sensitivity
	homes := homeDirs()
	var hide []string
	for _, pat := range authz.DefaultSensitive() {
		switch {
		case strings.HasPrefix(pat, "~/"):
			tcfg.HomeSecrets = append(tcfg.HomeSecrets, pat[2:])
			for _, h := range homes {
				hide = append(hide, glob(filepath.Join(h, pat[2:]))...)
			}
		case strings.HasPrefix(pat, "/") && !strings.HasPrefix(pat, "/proc"):
			hide = append(hide, glob(pat)...)
		}
	}
	for _, h := range homes {
		for _, f := range histories {
			hide = append(hide, filepath.Join(h, f))
		}
		hide = append(hide,
			filepath.Join(h, ".local/state/toold"), filepath.Join(h, ".local/state/toolctl"),
			filepath.Join(h, ".config/toold"), filepath.Join(h, ".config/toolctl"))
	}
	if x := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(x) {
		hide = append(hide, filepath.Join(x, "toold"), filepath.Join(x, "toolctl"))
	}
	if f := os.Getenv("TOOLCTL_SECRETS"); filepath.IsAbs(f) {
		hide = append(hide, f)
	}
	cfg := m.Config
	hide = append(hide, m.memory.stateDir)
	for _, f := range []string{cfg.Source, cfg.TokenFile, cfg.PolicyFile} {
		if f != "" {
			hide = append(hide, f)
		}
	}
	if cfg.Socket != "" && cfg.Socket != "-" {
		hide = append(hide, cfg.Socket)
	}
	// The terminal's directory (the commands' temp and cache dirs) may be
	// in the state directory (--state-dir): then the state directory's
	// other entries are masked one by one.
	keep := append([]string{m.ws.Dir(), tcfg.Dir, os.TempDir()}, tcfg.Sandbox.Writable...)
	for i, k := range keep {
		if k != "" {
			keep[i], _ = filepath.Abs(k)
			if r := realPath(keep[i]); r != "" {
				keep = append(keep, r)
			}
		}
	}
	// Other toolds' state directories (statereg.go), read again as
	// commands start.
	if st := m.memory.stateDir; st != "" {
		if err := registerStateDir(st); err != nil {
			m.Logger.Warn("could not register the state directory for other toolds' sandboxes to mask", "dir", st, "err", err)
		}
		keepOthers := slices.Clone(keep)
		tcfg.OtherStateDirs = func() []string { return otherStateDirs(st, keepOthers) }
	}
	sb := *tcfg.Sandbox
	sb.Hide = append([]string(nil), sb.Hide...)
	seen := map[string]bool{}
	var add func(p string, depth int)
	add = func(p string, depth int) {
		if p == "" || seen[p] {
			return
		}
		seen[p] = true
		if !containsAny(p, keep) {
			sb.Hide = append(sb.Hide, p)
			return
		}
		if depth == 0 || slices.Contains(keep, p) {
			return
		}
		ents, _ := os.ReadDir(p)
		for _, e := range ents {
			add(filepath.Join(p, e.Name()), depth-1)
		}
	}
	for _, p := range hide {
		abs, err := filepath.Abs(p)
		if err != nil {
			continue
		}
		add(abs, 0)
		add(realPath(abs), 0)
	}
	// toold's own directories are masked entry by entry where they hold a
	// directory commands need.
	for _, p := range []string{m.memory.stateDir, filepath.Join(homeOr(), ".local/state/toold")} {
		delete(seen, p)
		add(p, 4)
	}
	tcfg.Sandbox = &sb
}

// homeOr returns toold's home directory, or "/".
func homeOr() string {
	if h, err := os.UserHomeDir(); err == nil && filepath.IsAbs(h) {
		return h
	}
	return "/"
}

// homeDirs returns toold's home directory, /root and /home/*.
func homeDirs() []string {
	var hs []string
	if h, err := os.UserHomeDir(); err == nil && filepath.IsAbs(h) {
		hs = append(hs, h)
	}
	hs = append(hs, "/root")
	if ents, err := os.ReadDir("/home"); err == nil {
		for _, e := range ents {
			if e.IsDir() {
				hs = append(hs, filepath.Join("/home", e.Name()))
			}
		}
	}
	return hs
}

// glob returns the paths pattern matches, or pattern itself when it has
// no wildcard (the mask skips paths that do not exist).
func glob(pattern string) []string {
	if !strings.ContainsAny(pattern, "*?[") {
		return []string{pattern}
	}
	ms, _ := filepath.Glob(pattern)
	return ms
}

// realPath returns p with symbolic links resolved, or "".
func realPath(p string) string {
	r, err := filepath.EvalSymlinks(p)
	if err != nil || r == p {
		return ""
	}
	return r
}

// containsAny reports whether p is one of dirs or a directory above one.
func containsAny(p string, dirs []string) bool {
	for _, d := range dirs {
		if d == p || strings.HasPrefix(d, p+string(filepath.Separator)) {
			return true
		}
	}
	return false
}

// SandboxHealthService is the health service name that reports the
// sandbox: SERVING when every layer of the boundary around commands is in
// force, NOT_SERVING when one is missing or the sandbox is off (Welcome,
// ListTools and toolctl health say which and why). The server as a whole
// ("") stays SERVING either way.
const SandboxHealthService = "toold.v1.Sandbox"

func (m *Main) sandboxHealth() healthpb.HealthCheckResponse_ServingStatus {
	layers := m.terminal.Layers()
	if layers == nil {
		return healthpb.HealthCheckResponse_NOT_SERVING
	}
	for _, l := range layers {
		if !l.InForce {
			return healthpb.HealthCheckResponse_NOT_SERVING
		}
	}
	return healthpb.HealthCheckResponse_SERVING
}
