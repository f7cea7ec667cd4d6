package authz

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/tools"
)

// Checked at use.
//
// A call is decided on the paths its tool described, resolved when the
// decision is made. A file tool resolves them again when it runs, which may
// be much later (an approval waits for a person), and the files may have
// changed meanwhile: a file swapped for a symlink to .env, a directory for a
// symlink to .git/hooks, a hard link to ~/.ssh/id_rsa made in the
// workspace. So a file tool asks a UseChecker twice more, on the object it
// is about to touch and on the one it opened:
//
//   - CheckUse, with the path resolved just before it is opened (the tool
//     then opens exactly that path, one component at a time, never following
//     a symlink): a sensitive path is refused unless an allow rule with
//     "sensitive: true" names it; a path a deny rule names is refused; a path
//     an ask rule names (such as builtin:git-internals) is refused unless the
//     call named that path itself, so that the decision (and the person, if
//     it asked) saw it; a write into a directory git uses as a repository
//     that is not named .git (a gitdir: target, a bare repository) is
//     refused.
//   - CheckOpened, with the status of the opened file: a regular file with
//     more than one link is refused when it is a sensitive file that exists
//     under another name (compared by device and inode; see SensitiveFile).

// Use, Opened and UseChecker are the port the file tools consume; they are
// defined in pkg/tools (interfaces where they are consumed), so that the
// tools do not import the policy.
type (
	// Use is a path a file operation is about to touch.
	Use = tools.Use
	// Opened is the status of a file an operation opened.
	Opened = tools.Opened
	// UseChecker checks at use what a file operation touches (see above).
	// The Engine and SensitiveMatcher (sensitive paths only, no rules)
	// implement it.
	UseChecker = tools.UseChecker
)

var (
	_ UseChecker = (*Engine)(nil)
	_ UseChecker = (*SensitiveMatcher)(nil)
)

// CheckUse implements UseChecker with the engine's sensitive paths and
// path rules.
func (e *Engine) CheckUse(u *Use) error {
	return checkUse(e.sensitive, e.rules, e.scope, e.wsDir, u)
}

// CheckOpened implements UseChecker.
func (e *Engine) CheckOpened(u *Use, o Opened) error {
	return checkOpened(e.sensitive, e.rules, e.scope, u, o)
}

// CheckUse implements UseChecker with the sensitive paths alone.
func (m *SensitiveMatcher) CheckUse(u *Use) error {
	return checkUse(m, nil, m.scope, m.scope.ws, u)
}

// CheckOpened implements UseChecker with the sensitive paths alone.
func (m *SensitiveMatcher) CheckOpened(u *Use, o Opened) error {
	return checkOpened(m, nil, m.scope, u, o)
}

func useAccess(u *Use) access {
	if u.Write {
		return accWrite
	}
	return accRead
}

func useVerb(u *Use) string {
	if u.Write {
		return "written"
	}
	return "read"
}

// checkUse is CheckUse over a matcher and rules.
func checkUse(m *SensitiveMatcher, rules []*rule, sc pathScope, wsDir string, u *Use) error {
	if u.Abs == "" {
		return nil
	}
	acc := useAccess(u)
	lexical := ""
	if u.Given != "" && strings.IndexByte(u.Given, 0) < 0 {
		lexical = u.Given
		if !filepath.IsAbs(lexical) {
			lexical = filepath.Join(wsDir, lexical)
		}
		lexical = filepath.Clean(lexical)
	}
	forms := []string{filepath.Clean(u.Abs)}
	if lexical != "" && lexical != forms[0] {
		forms = append(forms, lexical)
	}
	name := u.Given
	if name == "" {
		name = u.Abs
	}
	for _, p := range forms {
		pat, ok := m.Match(p)
		if !ok || sensitiveAllowed(rules, u, forms[0], acc, sc) {
			continue
		}
		return &errdefs.Error{
			Class: errdefs.ErrDenied,
			Msg: fmt.Sprintf("%q now resolves to %s, a sensitive path (it matches %q); it was checked again when the call ran, and nothing was %s",
				name, forms[0], pat, useVerb(u)),
			Rule: ruleSensitive,
		}
	}
	for _, r := range rules {
		if r.kind() != kindPath || r.decision == Allow || !r.callMatches(u.Tool, u.Operation, u.Args) {
			continue
		}
		switch r.decision {
		case Deny:
			if r.pathMatches(forms, acc, sc) {
				return &errdefs.Error{
					Class: errdefs.ErrDenied,
					Msg:   fmt.Sprintf("%q now resolves to %s, which rule %s denies: %s; nothing was %s", name, forms[0], r.name, r.reason, useVerb(u)),
					Rule:  r.name,
				}
			}
		case Ask:
			// The decision saw the path as the call named it, so a rule
			// matching that form asked (or a grant covered it) already.
			if lexical != "" && r.pathMatches([]string{lexical}, acc, sc) {
				continue
			}
			if r.pathMatches(forms[:1], acc, sc) {
				return &errdefs.Error{
					Class: errdefs.ErrDenied,
					Msg: fmt.Sprintf("%q now resolves to %s, which rule %s guards (%s), but the call was decided on another path; nothing was %s. "+
						"Name %s itself so that policy can decide on it", name, forms[0], r.name, r.reason, useVerb(u), forms[0]),
					Rule: r.name,
				}
			}
		}
	}
	if u.Write {
		if d, ok := gitDirAbove(forms[0]); ok {
			return &errdefs.Error{
				Class: errdefs.ErrDenied,
				Msg: fmt.Sprintf("%q resolves to %s, inside %s, which git uses as a repository's internals (it has HEAD and objects and refs, or a commondir); "+
					"the file tools do not write there; nothing was written", name, forms[0], d),
				Rule: ruleGitInternals,
			}
		}
	}
	return nil
}

// ruleGitInternals names the built-in rule on git's internals.
const ruleGitInternals = "builtin:git-internals"

// gitDirAbove reports whether abs is in, or is, a directory git would use
// as a repository (git's own test: a HEAD file, and objects and refs
// directories or a commondir file) that is not named .git: the target of
// a .git file's "gitdir:" line, a bare repository, a commondir. A path
// through a directory named .git is left to the builtin:git-internals
// rule, which the decision applied.
func gitDirAbove(abs string) (string, bool) {
	for _, c := range strings.Split(abs, "/") {
		if c == ".git" {
			return "", false
		}
	}
	isFile := func(p string) bool {
		fi, err := os.Lstat(p)
		return err == nil && fi.Mode().IsRegular()
	}
	isDir := func(p string) bool {
		fi, err := os.Lstat(p)
		return err == nil && fi.IsDir()
	}
	for d := abs; ; d = filepath.Dir(d) {
		if isFile(d+"/HEAD") && (isDir(d+"/objects") && isDir(d+"/refs") || isFile(d+"/commondir")) {
			return d, true
		}
		if d == "/" || d == "." || d == "" {
			return "", false
		}
	}
}

// sensitiveAllowed reports whether an allow rule with "sensitive: true"
// lets u touch abs.
func sensitiveAllowed(rules []*rule, u *Use, abs string, acc access, sc pathScope) bool {
	for _, r := range rules {
		if r.decision == Allow && r.sensitive && r.callMatches(u.Tool, u.Operation, u.Args) &&
			r.pathMatches([]string{abs}, acc, sc) {
			return true
		}
	}
	return false
}

// checkOpened is CheckOpened over a matcher and rules.
func checkOpened(m *SensitiveMatcher, rules []*rule, sc pathScope, u *Use, o Opened) error {
	if !o.Regular || o.Nlink <= 1 {
		// Its only name is the one it was opened by, which CheckUse saw.
		return nil
	}
	name := u.Given
	if name == "" {
		name = u.Abs
	}
	other, found, complete := m.SensitiveFile(o.Dev, o.Ino, o.Ctime)
	switch {
	case found && !sensitiveAllowed(rules, u, other, useAccess(u), sc):
		return &errdefs.Error{
			Class: errdefs.ErrDenied,
			Msg:   fmt.Sprintf("%q is a hard link to %s, a sensitive file; nothing was %s", name, other, useVerb(u)),
			Rule:  ruleSensitive,
		}
	case !found && !complete:
		return &errdefs.Error{
			Class: errdefs.ErrDenied,
			Msg: fmt.Sprintf("%q has %d hard links and toold cannot tell whether another of its names is a sensitive file "+
				"(there are too many files to index); nothing was %s", name, o.Nlink, useVerb(u)),
			Rule: ruleSensitive,
		}
	}
	return nil
}

// ownProc reports whether abs is in toold's own /proc entry: /proc/self,
// /proc/thread-self, /proc/PID of toold's process, or /proc/TID of one of
// its threads (reachable by number although not listed).
func ownProc(abs string) (string, bool) {
	rest, ok := strings.CutPrefix(filepath.Clean(abs), "/proc/")
	if !ok {
		return "", false
	}
	first, _, _ := strings.Cut(rest, "/")
	switch first {
	case "self", "thread-self":
		return "/proc/" + first, true
	}
	if strings.ContainsAny(first, "$`*?[{") {
		// A process only known when a command runs ($PPID, $$, a glob)
		// may be toold.
		return "/proc/<a process known at run time>", true
	}
	n, err := strconv.Atoi(first)
	if err != nil || n <= 0 {
		return "", false
	}
	if n == os.Getpid() {
		return "/proc/<toold's pid>", true
	}
	if _, err := os.Lstat("/proc/self/task/" + first); err == nil {
		return "/proc/<a thread of toold>", true
	}
	return "", false
}

// The index of sensitive files by identity.

// indexMax bounds the entries one build of the index visits. Past it the
// index is incomplete, and multi-linked files it does not know are refused.
var indexMax = 500_000

// ctimeSlack covers the coarse clock the kernel stamps ctime with (it lags
// the real time by at most a tick, 10 ms at HZ=100). For that long after a
// file changed, each look-up of it builds the index again.
const ctimeSlack = 100 * time.Millisecond

type fileKey struct{ dev, ino uint64 }

// fileIndex maps the identities of the sensitive regular files that exist
// to one of their names.
type fileIndex struct {
	mu       sync.Mutex
	built    time.Time // when the last build started
	ids      map[fileKey]string
	complete bool
}

// SensitiveFile reports whether the regular file dev/ino exists under a
// sensitive name, and returns that name: one of the files a pattern of the
// matcher names below a home directory (the matcher's, /root and
// /home/NAME) or an absolute path, or any file in the workspace whose path
// is sensitive. complete is false when the index could not look at every
// such file (more than indexMax entries).
//
// The index is built on first use and again whenever a file is asked about
// whose status changed (ctime) after the last build began: making a hard
// link, renaming and writing a file all change it, so a link made after the
// index was built is never judged by a stale index.
func (m *SensitiveMatcher) SensitiveFile(dev, ino uint64, ctime time.Time) (name string, found, complete bool) {
	if m == nil || m.files == nil {
		return "", false, true
	}
	x := m.files
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.ids == nil || !ctime.Before(x.built.Add(-ctimeSlack)) {
		x.built = time.Now()
		x.ids, x.complete = m.buildIndex()
	}
	name, found = x.ids[fileKey{dev, ino}]
	return name, found, x.complete
}

// buildIndex finds the sensitive files that exist.
func (m *SensitiveMatcher) buildIndex() (map[fileKey]string, bool) {
	ids := map[fileKey]string{}
	budget := indexMax
	walk := func(root string) {
		filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if budget--; budget < 0 {
				return filepath.SkipAll
			}
			if err != nil || !d.Type().IsRegular() {
				return nil
			}
			if _, ok := m.Match(p); !ok {
				return nil
			}
			// Every sensitive file is indexed, whatever its link count
			// now: a hard link to it may have been opened (two links)
			// and removed again (one) before this build looks, and the
			// opened file must still be known for what it is.
			fi, err := d.Info()
			if err != nil {
				return nil
			}
			if st, ok := fi.Sys().(*syscall.Stat_t); ok {
				k := fileKey{st.Dev, st.Ino}
				if _, dup := ids[k]; !dup {
					ids[k] = p
				}
			}
			return nil
		})
	}
	for _, g := range m.anchoredGlobs() {
		matches, err := doublestar.FilepathGlob(g, doublestar.WithNoFollow())
		if err != nil {
			continue
		}
		for _, p := range matches {
			walk(p)
		}
	}
	if m.scope.ws != "" {
		walk(m.scope.ws)
	}
	return ids, budget >= 0
}

// anchoredGlobs returns the matcher's patterns below home directories and
// absolute ones as absolute globs (one per home), leaving out /proc.
func (m *SensitiveMatcher) anchoredGlobs() []string {
	homes := append([]string(nil), m.scope.homes...)
	if m.scope.anyHome {
		homes = append(homes, "/root")
		if ents, err := os.ReadDir("/home"); err == nil {
			for _, e := range ents {
				if e.IsDir() {
					homes = append(homes, "/home/"+e.Name())
				}
			}
		}
	}
	var out []string
	seen := map[string]bool{}
	add := func(g string) {
		if !seen[g] {
			seen[g] = true
			out = append(out, g)
		}
	}
	for _, pp := range m.patterns {
		switch {
		case pp.negate:
		case pp.kind == pathHome && pp.glob != "~":
			for _, h := range homes {
				add(filepath.Join(h, strings.TrimPrefix(pp.glob, "~/")))
			}
		case pp.kind == pathAbs && pp.glob != "/proc" && !strings.HasPrefix(pp.glob, "/proc/"):
			add(pp.glob)
		}
	}
	return out
}
