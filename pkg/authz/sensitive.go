package authz

import (
	"fmt"
	"path/filepath"
	"slices"
)

// DefaultSensitive lists the paths no call may read or write unless an
// allow rule with "sensitive: true" names them: credentials, keys and
// secrets. The patterns are path patterns of the policy file: ~/ means every
// home directory (the daemon's, /root and /home/NAME), a pattern without /
// matches a file or directory of that name anywhere, a pattern matches the
// directory it names and everything below it, and ! excludes a path an
// earlier pattern matched (but, as in .gitignore, not a path below a
// sensitive directory). A policy file
// adds patterns (sensitive.add) and removes default ones by their exact
// text (sensitive.remove).
func DefaultSensitive() []string {
	return slices.Clone(defaultSensitive)
}

var defaultSensitive = []string{
	// Credentials in home directories.
	"~/.ssh",
	"~/.aws",
	"~/.gnupg",
	"~/.config/gcloud",
	"~/.kube",
	"~/.docker/config.json",
	"~/.netrc",
	"~/.npmrc",
	"~/.pypirc",
	"~/.git-credentials",
	"~/.config/gh/hosts.yml",
	"~/.azure",
	"~/.password-store",
	"~/.vault-token",
	"~/.terraform.d/credentials.tfrc.json",
	"~/.cargo/credentials",
	"~/.cargo/credentials.toml",
	"~/.gem/credentials",
	"~/.local/share/keyrings",
	"~/.config/op",
	// System secrets.
	"/etc/shadow",
	"/etc/gshadow",
	"/etc/shadow-",
	"/etc/gshadow-",
	"/etc/sudoers",
	"/etc/sudoers.d",
	"/etc/ssh/ssh_host_*_key",
	"/proc/*/environ",
	"/proc/*/mem",
	"/proc/*/task/*/environ",
	"/proc/*/task/*/mem",
	"/proc/self",
	"/proc/thread-self",
	// Keys and secrets anywhere.
	".env",
	".env.*",
	"!.env.example",
	"!.env.sample",
	"!.env.template",
	"!.env.dist",
	"*.pem",
	"*.key",
	"*.p12",
	"*.pfx",
	"*.jks",
	"*.keystore",
	"*.kdbx",
	"id_rsa*",
	"id_dsa*",
	"id_ecdsa*",
	"id_ed25519*",
	".netrc",
	".pgpass",
	".git-credentials",
}

// SensitiveMatcher reports whether a path is sensitive. It is immutable and
// safe for concurrent use.
type SensitiveMatcher struct {
	scope    pathScope
	patterns []pathPattern
	// files indexes the sensitive files that exist by device and inode,
	// for SensitiveFile; built when first needed.
	files *fileIndex
}

// Sensitivity is implemented by what can tell sensitive paths: the Engine
// and SensitiveMatcher. The file tools use it to withhold sensitive entries
// from directory walks (list_dir, glob, grep_search).
type Sensitivity interface {
	// Sensitive reports whether abs, an absolute path with symlinks
	// resolved, is sensitive.
	Sensitive(abs string) bool
}

var (
	_ Sensitivity = (*SensitiveMatcher)(nil)
	_ Sensitivity = (*Engine)(nil)
)

// NewSensitiveMatcher returns a matcher of patterns (as DefaultSensitive)
// for the workspace directory workspaceDir (absolute, symlinks resolved; a
// pattern with / that is not absolute and does not start with ~/ is
// relative to it) and the home directory home ("" for none).
func NewSensitiveMatcher(workspaceDir, home string, patterns []string) (*SensitiveMatcher, error) {
	m := &SensitiveMatcher{scope: pathScope{ws: filepath.Clean(workspaceDir), anyHome: true}, files: &fileIndex{}}
	if home != "" {
		m.scope.homes = []string{filepath.Clean(home)}
		if real, err := filepath.EvalSymlinks(home); err == nil && real != home {
			m.scope.homes = append(m.scope.homes, real)
		}
	}
	for _, s := range patterns {
		pp, err := compilePathPattern(s)
		if err != nil {
			return nil, fmt.Errorf("sensitive path %q: %w", s, err)
		}
		m.patterns = append(m.patterns, pp)
	}
	return m, nil
}

// Match returns the pattern that makes abs sensitive. Besides the
// matcher's patterns, toold's own process is always sensitive, whatever the
// patterns say: /proc/self, /proc/thread-self, and /proc/PID where PID is
// toold's process or one of its threads (see ownProc).
func (m *SensitiveMatcher) Match(abs string) (pattern string, ok bool) {
	if m == nil || abs == "" {
		return "", false
	}
	if p, ok := ownProc(abs); ok {
		return p, true
	}
	subject := pathSubject{abs: filepath.ToSlash(filepath.Clean(abs)), sc: m.scope}
	// The last matching pattern wins, except that, as in .gitignore, a
	// path below a sensitive directory cannot be excluded again.
	byDir := false
	for _, pp := range m.patterns {
		hit, leaf := pp.matchIn(&subject)
		if !hit {
			continue
		}
		if pp.negate {
			if ok && !byDir {
				pattern, ok = "", false
			}
			continue
		}
		if !ok {
			pattern = pp.src
		}
		ok, byDir = true, byDir || !leaf
	}
	return pattern, ok
}

// Sensitive implements Sensitivity.
func (m *SensitiveMatcher) Sensitive(abs string) bool {
	_, ok := m.Match(abs)
	return ok
}

// sensitivePatterns applies a policy's additions and removals to the
// defaults.
func sensitivePatterns(add, remove []string) ([]string, error) {
	out := DefaultSensitive()
	for _, r := range remove {
		i := slices.Index(out, r)
		if i < 0 {
			return nil, fmt.Errorf("sensitive.remove: %q is not a default sensitive path (defaults: %v)", r, defaultSensitive)
		}
		out = slices.Delete(out, i, i+1)
	}
	return append(out, add...), nil
}
