package authz

import (
	"encoding/json"
	"errors"
	"fmt"
	"github.com/toold/toold/pkg/authz/internal/shellread"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/tools"
	"github.com/toold/toold/pkg/workspace"
)

// Names of the engine's own decisions (Verdict.Rule).
const (
	ruleSensitive    = "builtin:sensitive-path"
	ruleInvalidPath  = "builtin:invalid-path"
	ruleUnresolvable = "builtin:unresolvable-path"
	ruleOutsideWrite = "builtin:outside-write"
	ruleReadRoot     = "builtin:read-root"
	ruleWrapper      = "builtin:wrapper"
	ruleNoCommand    = "builtin:no-command"
	ruleCommandArg   = "builtin:command-argument"
	ruleTooMany      = "builtin:too-many-paths"
)

// maxFacets bounds the parts of one call that are judged.
const maxFacets = 4096

// facetKind says what part of a call a facet is.
type facetKind int

const (
	facetCall    facetKind = iota + 1 // the call as a whole (no paths, commands or hosts)
	facetPath                         // a path it touches
	facetCommand                      // a command of its command line
	facetHost                         // a host it reaches
	facetEnv                          // an environment variable it sets (given is NAME=VALUE)
)

// facet is one part of a call, judged on its own.
type facet struct {
	kind  facetKind
	acc   access
	given string
	// Paths: where it resolves, and the path as written made absolute
	// without resolving symlinks (deny checks look at both).
	loc        workspace.Location
	lexical    string
	resolveErr error
	// cmd is the index of the command the facet belongs to, or -1.
	cmd  int
	host string
	// words are a command facet's words, for grants.
	words []string

	decision     Decision
	rule, reason string
	risk         tools.Risk
	// hard: an ask that no rule lifts and only a grant without prefix
	// covers. neutral: allowed because something else decides (a command's
	// argument inside the workspace is judged with its command). byRule:
	// decided by a policy rule.
	hard, neutral, byRule, preset bool
	// grantable: a command facet that a command grant may cover — the
	// command is exactly its words: every word literal, no problem, no
	// wrapper, no environment set for it or for the call, no arguments
	// added at run time. A grant covers only what its approval showed.
	grantable bool
	// workdir: the directory a command runs in (Effect.Reads and
	// Effect.Writes of a call with a command line).
	workdir bool
	grant   *Grant
}

// judgement is a call taken apart and judged.
type judgement struct {
	e      *Engine
	req    *Request
	mode   Mode
	base   tools.Risk
	cmds   []*shellread.Command
	facets []*facet
	seen   map[string]bool
	dirs   []string
	// workdir is the resolved directory the command line runs in, from
	// the call's effect.
	workdir string
}

func (e *Engine) decide(req *Request, consume bool) Verdict {
	j := e.judge(req)
	j.applyGrants(consume)
	return j.verdict()
}

func (e *Engine) judge(req *Request) *judgement {
	j := &judgement{e: e, req: req, mode: req.Mode, base: req.Risk, seen: map[string]bool{}}
	if j.mode == ModeUnset {
		j.mode = ModeAuto
	}
	if j.base == tools.RiskUnknown {
		j.base = tools.RiskHigh
	}
	// A tool that runs a command line names the directory it runs in in
	// Effect.Dir (or, for tools that predate it, in Reads and Writes): that
	// directory is where relative paths start, and is judged as a directory
	// the command may change anything in.
	cmdDir := req.Effect.Command != "" && req.Effect.Dir == ""
	if req.Effect.Command != "" && req.Effect.Dir != "" {
		j.effectPath(req.Effect.Dir, accWrite, true)
	}
	for _, p := range req.Effect.Reads {
		j.effectPath(p, accRead, cmdDir)
	}
	for _, p := range req.Effect.Writes {
		j.effectPath(p, accWrite, cmdDir)
	}
	if req.Effect.Command != "" {
		j.commandLine(req.Effect.Command)
	}
	if req.Effect.Unknown != "" {
		j.add(&facet{kind: facetCommand, cmd: -1, given: req.Effect.Command, preset: true, hard: true, decision: Ask,
			rule: shellread.RuleUnparseable, risk: tools.RiskHigh, reason: "what runs cannot be judged: " + req.Effect.Unknown})
	}
	j.envFacets(req.Effect.Env)
	for _, h := range req.Effect.Hosts {
		j.addHost(h, -1)
	}
	if len(j.facets) == 0 {
		j.facets = append(j.facets, &facet{kind: facetCall, cmd: -1})
	}
	if len(j.facets) > maxFacets {
		j.facets = append(j.facets[:maxFacets], &facet{kind: facetCall, cmd: -1, preset: true, hard: true,
			decision: Ask, rule: ruleTooMany, risk: tools.RiskHigh,
			reason: fmt.Sprintf("the call touches more than %d paths, too many to judge one by one", maxFacets)})
	}
	for _, f := range j.facets {
		if !f.preset {
			j.decideFacet(f)
		}
	}
	return j
}

// add records f unless an equal facet is recorded.
func (j *judgement) add(f *facet) {
	key := fmt.Sprint(f.kind, "|", f.acc, "|", f.cmd, "|", f.loc.Abs, "|", f.lexical, "|", f.host, "|", f.given)
	if f.kind == facetCommand {
		key = fmt.Sprint(f.kind, "|", f.cmd, "|", len(j.facets))
	}
	if j.seen[key] || len(j.facets) > maxFacets {
		return
	}
	j.seen[key] = true
	j.facets = append(j.facets, f)
}

// expandHome expands a leading ~ of p.
func (j *judgement) expandHome(p string) string {
	if j.e.home != "" && (p == "~" || strings.HasPrefix(p, "~/")) {
		return j.e.home + p[1:]
	}
	return p
}

// effectPath adds a path from Effect.Reads or Effect.Writes, resolved as
// the tool resolves it; workdir marks the directory of a command line.
func (j *judgement) effectPath(given string, acc access, workdir bool) {
	f := &facet{kind: facetPath, acc: acc, given: given, cmd: -1, workdir: workdir}
	if workdir {
		f.acc = accArg
	}
	f.loc, f.resolveErr = j.e.ws.Resolve(given)
	if workdir && j.workdir == "" && f.resolveErr == nil {
		if fi, err := os.Stat(f.loc.Abs); err == nil && fi.IsDir() {
			j.workdir = f.loc.Abs
		}
	}
	if strings.IndexByte(given, 0) < 0 {
		lex := j.expandHome(given)
		if !filepath.IsAbs(lex) {
			lex = filepath.Join(j.e.wsDir, lex)
		}
		f.lexical = filepath.Clean(lex)
	}
	j.add(f)
}

// commandLine adds the commands of a command line and what they touch.
func (j *judgement) commandLine(line string) {
	pl := shellread.ParseLine(line, j.e.home, j.req.Effect.Interactive)
	for _, pr := range pl.Problems {
		j.add(&facet{kind: facetCommand, cmd: -1, given: line, preset: true, hard: true, decision: Ask,
			rule: pr.Rule, risk: tools.RiskHigh, reason: "the command line cannot be judged: " + pr.Reason})
	}
	j.cmds = pl.Commands
	base := j.e.wsDir
	if j.workdir != "" {
		base = j.workdir
	}
	if d := j.req.Dir; d != "" && filepath.IsAbs(d) {
		base = filepath.Clean(d)
		if loc, err := j.e.ws.Resolve(base); err == nil {
			base = loc.Abs
		}
	}
	j.dirs = []string{base}
	// Relative paths are resolved from every directory the line may be in:
	// where it starts and wherever a cd or pushd may take it, each cd taken
	// from every directory known before it, and both as bash's cd reads
	// its argument (logically: a/.. is removed before symlinks are
	// followed) and as the kernel does (physically).
	for _, c := range j.cmds {
		if n := c.Name(); (n == "cd" || n == "pushd") && !c.WrapperOnly {
			for _, w := range c.Args()[1:] {
				if w.Literal && !strings.HasPrefix(w.Text, "-") {
					for _, d := range slices.Clone(j.dirs) {
						j.addDir(&j.dirs, w.Text, d)
					}
					break
				}
			}
		}
		if n := c.Name(); (n == "popd" || (n == "pushd" && pushdRotates(c))) && j.req.Dir != "" {
			c.AddProblem(shellread.Problem{Rule: shellread.RuleCd, Reason: n + " changes to a directory of the shell's directory stack, which earlier lines filled and cannot be judged", Hard: true})
		}
	}
	if len(j.dirs) > maxDirs {
		j.add(&facet{kind: facetCommand, cmd: -1, given: line, preset: true, hard: true, decision: Ask,
			rule: shellread.RuleCd, risk: tools.RiskHigh, reason: fmt.Sprintf("the command line may run in more than %d directories, too many to judge", maxDirs)})
		j.dirs = j.dirs[:maxDirs]
	}
	j.scriptsWritten()
	for i, c := range j.cmds {
		j.commandFacets(i, c)
	}
}

// scriptsWritten asks for a command that runs a file (./run, sh x.sh,
// sh < x.sh, python3 x.py) which another word of the same line names
// (writes, downloads, copies or makes executable): the file's content when
// it runs is not what it is now, so "echo 'rm -rf /' > x.sh; sh x.sh"
// cannot be judged from here. Names are compared as the paths they
// resolve to from every directory the line may be in.
func (j *judgement) scriptsWritten() {
	type occ struct {
		cmd   int
		paths []string
	}
	resolve := func(t string) []string {
		t = j.expandHome(t)
		if filepath.IsAbs(t) {
			return []string{filepath.Clean(t)}
		}
		out := make([]string, 0, len(j.dirs))
		for _, d := range j.dirs {
			out = append(out, filepath.Clean(d+"/"+t))
		}
		return out
	}
	var named []occ
	type runner struct {
		cmd  int
		what string
		skip string // the word that names the program itself
	}
	var runs []runner
	for i, c := range j.cmds {
		for _, r := range c.Redirects {
			if (r.Write || r.Read) && r.Target.Literal {
				named = append(named, occ{i, resolve(r.Target.Text)})
			}
		}
		for _, l := range c.Layers {
			for _, w := range l {
				if !w.Literal {
					continue
				}
				for _, cand := range argCandidates(w.Text) {
					named = append(named, occ{i, resolve(cand)})
				}
			}
		}
		if c.WrapperOnly || len(c.Args()) == 0 {
			continue
		}
		args := c.Args()
		switch name := c.Name(); {
		case args[0].Literal && strings.Contains(args[0].Text, "/") && !shellread.InSystemBin(args[0].Text):
			runs = append(runs, runner{i, args[0].Text, args[0].Text})
		case slices.Contains(shellread.ShellNames, name) || shellread.IsInterpreter(name):
			found := false
			for _, w := range args[1:] {
				if w.Literal && !strings.HasPrefix(w.Text, "-") {
					runs = append(runs, runner{i, w.Text, w.Text})
					found = true
					break
				}
			}
			if !found {
				for _, r := range c.Redirects {
					if r.Read && r.Target.Literal {
						runs = append(runs, runner{i, r.Target.Text, ""})
					}
				}
			}
		}
	}
	for _, r := range runs {
		mine := resolve(r.what)
		uses := 0
		for _, o := range named {
			for _, p := range o.paths {
				if slices.Contains(mine, p) {
					uses++
					break
				}
			}
		}
		// The program's own mention (its name, or the file a shell reads)
		// counts once; any other mention means the line touches it too.
		if uses > 1 {
			j.cmds[r.cmd].AddProblem(shellread.Problem{Rule: shellread.RuleUnparseable, Reason: "it runs " + r.what + ", which the same command line writes or changes first, so what runs cannot be judged", Hard: true})
		}
	}
}

// maxDirs bounds the directories a command line is judged in.
const maxDirs = 64

// addDir adds the directory p (relative to base) to dirs, resolved
// physically (as the kernel resolves a path) and logically (as bash's cd
// does by default: "a/.." is removed as text before symlinks are
// followed, so cd a/.. never enters a's target).
func (j *judgement) addDir(dirs *[]string, p, base string) {
	p = j.expandHome(p)
	if !filepath.IsAbs(p) {
		p = base + "/" + p
	}
	for _, cand := range []string{p, filepath.Clean(p)} {
		loc, err := j.e.ws.Resolve(cand)
		if err != nil || !loc.Exists || slices.Contains(*dirs, loc.Abs) || len(*dirs) > maxDirs {
			continue
		}
		if fi, err := os.Stat(loc.Abs); err == nil && fi.IsDir() {
			*dirs = append(*dirs, loc.Abs)
		}
	}
}

// pushdRotates reports pushd without a directory (swap) or with +N / -N.
func pushdRotates(c *shellread.Command) bool {
	args := c.Args()
	if len(args) == 1 {
		return true
	}
	t := args[1].Text
	return len(t) > 1 && (t[0] == '+' || t[0] == '-') && shellread.IsNumber(t[1:])
}

// commandFacets adds command c (index i) and the paths and hosts it names.
func (j *judgement) commandFacets(i int, c *shellread.Command) {
	args := c.Args()
	words := make([]string, 0, len(args))
	for _, w := range args {
		words = append(words, w.String())
	}
	j.add(&facet{kind: facetCommand, cmd: i, given: c.Src, words: words})

	dirs := slices.Clone(j.dirs)
	for _, w := range c.Cwds {
		if w.Literal {
			for _, d := range j.dirs {
				j.addDir(&dirs, w.Text, d)
			}
		}
	}
	if !c.WrapperOnly && len(args) > 0 {
		if a := args[0]; a.Literal && strings.Contains(a.Text, "/") && !shellread.InSystemBin(a.Text) {
			j.commandPath(i, a, accExec, dirs)
		}
		acc := accArg
		if shellread.ReadOnlyArgs(c) {
			acc = accRead
		}
		for _, w := range args[1:] {
			j.argWord(i, w, acc, dirs)
		}
	}
	for _, w := range c.Own {
		j.argWord(i, w, accArg, dirs)
	}
	j.netHosts(i, c)
	j.programGlobs(i, c, dirs)
	j.treeWriters(i, c, dirs)
	for _, a := range c.Env {
		if a.Value.Literal && isPathLike(a.Value.Text) {
			j.commandPath(i, a.Value, accValue, dirs)
		}
	}
	for _, r := range c.Redirects {
		if !r.Read && !r.Write {
			continue
		}
		acc := accRead
		if r.Write {
			acc = accWrite
		}
		if r.Target.Literal {
			if h, ok := devTCP(r.Target.Text); ok {
				// bash opens the connection itself.
				j.addHost(h, i)
				continue
			}
		} else if strings.HasPrefix(r.Target.Prefix, "/dev/tcp/") || strings.HasPrefix(r.Target.Prefix, "/dev/udp/") {
			c.AddProblem(shellread.Problem{Rule: ruleDynamicTarget, Reason: "bash connects to a host only known when it runs (" + r.Src + ")", Hard: true})
		}
		if !r.Target.Literal {
			if r.Write {
				c.AddProblem(shellread.Problem{Rule: shellread.RuleDynamicPath, Reason: fmt.Sprintf("it writes to a file whose name is only known when it runs (%s)", r.Src), Hard: true})
			} else {
				c.AddProblem(shellread.Problem{Rule: shellread.RuleDynamicPath, Reason: fmt.Sprintf("it reads a file whose name is only known when it runs (%s), which may be a sensitive one", r.Src), Hard: true})
			}
			j.prefixPath(i, r.Target, acc, dirs)
			continue
		}
		j.commandPath(i, r.Target, acc, dirs)
	}
}

// argWord adds what an argument names: a path, a URL's host; for a word
// only known at run time, the directory its literal beginning names.
func (j *judgement) argWord(i int, w shellread.Word, acc access, dirs []string) {
	if !w.Literal {
		j.prefixPath(i, w, acc, dirs)
		return
	}
	for _, cand := range argCandidates(w.Text) {
		if h, ok := urlHost(cand); ok {
			j.addHost(h, i)
			continue
		}
		cw := shellread.Word{Text: cand, Literal: true, Glob: w.Glob, Src: w.Src}
		if isPathLike(cand) || w.Glob || j.existsIn(cand, dirs) {
			j.commandPath(i, cw, acc, dirs)
		}
	}
}

// devTCP returns the host of bash's /dev/tcp/HOST/PORT and
// /dev/udp/HOST/PORT redirections.
func devTCP(p string) (string, bool) {
	for _, pre := range []string{"/dev/tcp/", "/dev/udp/"} {
		if rest, ok := strings.CutPrefix(p, pre); ok {
			h, _, _ := strings.Cut(rest, "/")
			return h, h != ""
		}
	}
	return "", false
}

// prefixPath adds the directory named by the literal beginning of a word
// only known at run time: "$HOME/.ssh/$X" names ~/.ssh.
func (j *judgement) prefixPath(i int, w shellread.Word, acc access, dirs []string) {
	k := strings.LastIndexByte(w.Prefix, '/')
	if k < 0 {
		return
	}
	d := w.Prefix[:k]
	if d == "" {
		d = "/"
	}
	j.commandPath(i, shellread.Word{Text: d, Literal: true, Src: w.Src}, acc, dirs)
}

// argCandidates returns the texts in an argument that may be paths: the
// word, the value of --opt=VALUE or KEY=VALUE, what follows host: or REF:,
// and the file of @file (curl -d @file, response files).
func argCandidates(t string) []string {
	var out []string
	add := func(s string) {
		if s == "" {
			return
		}
		out = append(out, s)
		if len(s) > 1 && s[0] == '@' {
			out = append(out, s[1:])
		}
	}
	if strings.HasPrefix(t, "-") {
		if k := strings.IndexByte(t, '='); k > 0 {
			add(t[k+1:])
		} else if !strings.HasPrefix(t, "--") && len(t) > 2 && strings.Contains(t[2:], "/") {
			add(t[2:])
		}
		if k := strings.LastIndexByte(t, ':'); k > 0 && !strings.Contains(t, "://") {
			// git log -L1,+9:FILE, -L:FUNC:FILE
			add(t[k+1:])
		}
		return out
	}
	add(t)
	if k := strings.IndexByte(t, '='); k > 0 && !strings.Contains(t[:k], "/") {
		add(t[k+1:])
	}
	if !strings.Contains(t, "://") {
		if k := strings.LastIndexByte(t, ':'); k >= 0 {
			add(t[k+1:])
		}
	}
	return out
}

// existsIn reports whether name exists in one of dirs.
func (j *judgement) existsIn(name string, dirs []string) bool {
	for _, d := range dirs {
		if _, err := os.Lstat(filepath.Join(d, name)); err == nil {
			return true
		}
	}
	return false
}

// pseudoDevices are paths that read or write nothing on disk.
var pseudoDevices = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom",
	"/dev/stdin", "/dev/stdout", "/dev/stderr", "/dev/tty", "/dev/fd/0", "/dev/fd/1", "/dev/fd/2"}

// commandPath adds a path a command names, resolved from each directory
// the line may be in; a glob is expanded (bounded) and its fixed
// directory added.
func (j *judgement) commandPath(i int, w shellread.Word, acc access, dirs []string) {
	if w.Extglob {
		if i >= 0 && i < len(j.cmds) {
			j.cmds[i].AddProblem(shellread.Problem{Rule: shellread.RuleDynamicPath, Reason: "the pattern " + w.Src + " is an extended glob, whose matches cannot be judged", Hard: true})
		}
		return
	}
	t := j.expandHome(w.Text)
	if slices.Contains(pseudoDevices, path.Clean(t)) {
		return
	}
	if w.Glob {
		j.globPaths(i, t, acc, dirs)
		return
	}
	if filepath.IsAbs(t) {
		j.pathFacet(i, t, acc, w.Text)
		return
	}
	for _, d := range dirs {
		j.pathFacet(i, d+"/"+t, acc, w.Text)
	}
}

func (j *judgement) pathFacet(i int, p string, acc access, given string) {
	f := &facet{kind: facetPath, acc: acc, given: given, cmd: i, lexical: filepath.Clean(p)}
	f.loc, f.resolveErr = j.e.ws.Resolve(p)
	j.add(f)
}

// treeWriters are programs that write or delete whole trees, or extract
// into their directory: what they bring may land in a .git below.
var treeWriters = map[string]bool{"cp": true, "rsync": true, "tar": true, "bsdtar": true, "unzip": true,
	"rm": true, "ditto": true, "cpio": true, "patch": true, "7z": true}

// extractsHere are the tree writers that write into the directory they run
// in without naming it.
var extractsHere = map[string]bool{"tar": true, "bsdtar": true, "unzip": true, "patch": true, "cpio": true, "7z": true}

// treeWriters asks for a command that writes or deletes a whole tree that
// holds a .git (cp -r x/. ., rsync -a x/ ., rm -rf ws, tar x): git's
// internals below it are judged as written, so the git-internals rule
// applies as it does to a write that names them.
func (j *judgement) treeWriters(i int, c *shellread.Command, dirs []string) {
	name := c.Name()
	if c.WrapperOnly || !treeWriters[name] {
		return
	}
	if name == "cp" || name == "rm" {
		// Only recursively.
		sh := shellread.ShapeOf(c.Args())
		if !sh.HasFlag([]string{"-r", "-R", "-a", "--recursive", "--archive"}, true) {
			return
		}
	}
	var roots []string
	for _, f := range j.facets {
		if f.kind == facetPath && f.cmd == i && f.resolveErr == nil && f.loc.Exists && f.acc != accRead {
			roots = append(roots, f.loc.Abs)
		}
	}
	if extractsHere[name] {
		roots = append(roots, dirs...)
	}
	for _, r := range roots {
		g := filepath.Join(r, ".git")
		if _, err := os.Lstat(g); err == nil {
			j.pathFacet(i, g, accWrite, g)
		}
	}
}

// globbingPrograms expand glob patterns given as (quoted) arguments
// themselves, recursively: git pathspecs, find -name, rg -g, grep
// --include, fd.
var globbingPrograms = []string{"git", "find", "rg", "grep", "egrep", "fgrep", "fd", "fdfind", "ag", "ack", "tar", "zip", "rsync"}

// programGlobs adds, for a program that expands glob patterns itself, the
// files a quoted pattern argument matches in the directories the line may
// be in (recursively, dot files included, bounded), so that
// git grep --no-index -- '*.env' is judged as reading .env.
func (j *judgement) programGlobs(i int, c *shellread.Command, dirs []string) {
	if c.WrapperOnly || !slices.Contains(globbingPrograms, c.Name()) {
		return
	}
	var pats []string
	for _, w := range c.Args()[1:] {
		if !w.Literal || w.Glob {
			continue
		}
		for _, cand := range argCandidates(w.Text) {
			if strings.ContainsAny(cand, "*?[") {
				pats = append(pats, strings.TrimPrefix(cand, ":(glob)"))
			}
		}
	}
	if len(pats) == 0 {
		return
	}
	read := 0
	for _, d := range dirs {
		_ = filepath.WalkDir(d, func(p string, de os.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			if read++; read > maxGlobEntries {
				return filepath.SkipAll
			}
			rel, _ := filepath.Rel(d, p)
			for _, pat := range pats {
				if ok, _ := shellread.GlobMatch(pat, de.Name()); ok {
					j.pathFacet(i, p, accRead, pat)
				} else if ok, _ := path.Match(pat, rel); ok {
					j.pathFacet(i, p, accRead, pat)
				}
			}
			return nil
		})
	}
	if read > maxGlobEntries {
		c.AddProblem(shellread.Problem{Rule: ruleTooMany, Reason: "the patterns " + strings.Join(pats, " ") + " of " + c.Name() + " match in too many files to judge", Hard: false})
	}
}

// maxGlobEntries bounds the directory entries a glob may read.
const maxGlobEntries = 20000

// globPaths adds what a glob in a command matches now, and the directory
// before its first wildcard.
func (j *judgement) globPaths(i int, t string, acc access, dirs []string) {
	bases := dirs
	if filepath.IsAbs(t) {
		bases = []string{""}
	}
	for _, d := range bases {
		pattern := t
		if d != "" {
			pattern = d + "/" + t
		}
		k := strings.IndexAny(pattern, "*?[")
		if k < 0 {
			// A glob of bash's own (extglob) without * ? or [.
			k = len(pattern)
		}
		fixed := pattern[:k]
		if k := strings.LastIndexByte(fixed, '/'); k >= 0 {
			fd := fixed[:k]
			if fd == "" {
				fd = "/"
			}
			if fd != d {
				j.pathFacet(i, fd, acc, t)
			}
		}
		matches, complete, judged := boundedGlob(pattern, maxGlobEntries)
		if !judged && i >= 0 && i < len(j.cmds) {
			j.cmds[i].AddProblem(shellread.Problem{Rule: shellread.RuleDynamicPath, Reason: "the pattern " + t + " uses bracket forms the judge cannot match as bash does", Hard: true})
		}
		for _, m := range matches {
			j.pathFacet(i, m, acc, t)
		}
		if !complete && i >= 0 && i < len(j.cmds) {
			j.cmds[i].AddProblem(shellread.Problem{Rule: ruleTooMany, Reason: fmt.Sprintf("the pattern %s matches too many files to judge", t), Hard: false})
		}
	}
}

// boundedGlob expands an absolute glob as bash does (no dot files unless the
// pattern names them), reading at most limit directory entries.
func boundedGlob(pattern string, limit int) (matches []string, complete, judged bool) {
	parts := strings.Split(filepath.Clean(pattern), "/")
	cur := []string{"/"}
	read := 0
	for _, part := range parts[1:] {
		if part == "" {
			continue
		}
		var next []string
		if !strings.ContainsAny(part, "*?[") {
			for _, c := range cur {
				next = append(next, filepath.Join(c, part))
			}
			cur = next
			continue
		}
		re, ok := shellread.BashGlob(part)
		if !ok {
			return nil, true, false
		}
		for _, c := range cur {
			ents, err := os.ReadDir(c)
			if err != nil {
				continue
			}
			read += len(ents)
			if read > limit {
				return nil, false, true
			}
			for _, e := range ents {
				if strings.HasPrefix(e.Name(), ".") && !strings.HasPrefix(part, ".") {
					continue
				}
				if re.MatchString(e.Name()) {
					next = append(next, filepath.Join(c, e.Name()))
				}
			}
		}
		cur = next
		if len(cur) == 0 {
			return nil, true, true
		}
	}
	var out []string
	for _, c := range cur {
		if _, err := os.Lstat(c); err == nil {
			out = append(out, c)
		}
	}
	return out, true, true
}

func (j *judgement) addHost(h string, cmd int) {
	n := normalizeHost(h)
	if n == "" {
		return
	}
	j.add(&facet{kind: facetHost, host: n, given: h, cmd: cmd})
}

// ---- decisions ----

func (j *judgement) decideFacet(f *facet) {
	switch f.kind {
	case facetPath:
		j.decidePath(f)
	case facetCommand:
		j.decideCommand(f)
	case facetHost:
		j.decideHost(f)
	case facetEnv:
		j.decideEnv(f)
	default:
		j.decideCall(f)
	}
}

// strictest returns, for each decision, the first matching rule among the
// rules of kind (for which match is asked) and the rules that judge the
// call as a whole, which match every part of a call they match. A rule of
// the kind is preferred to a rule on the whole call: it names the part.
func (j *judgement) strictest(kind ruleKind, match func(*rule) bool) (deny, ask, allow *rule) {
	var found, general [Deny + 1]*rule
	for _, r := range j.e.rules {
		if !r.callMatches(j.req.Tool, j.req.Operation, j.req.Args) {
			continue
		}
		switch k := r.kind(); {
		case k == kindCall:
			if general[r.decision] == nil {
				general[r.decision] = r
			}
		case k == kind && found[r.decision] == nil && match(r):
			found[r.decision] = r
		}
	}
	pick := func(d Decision) *rule {
		if found[d] != nil {
			return found[d]
		}
		return general[d]
	}
	return pick(Deny), pick(Ask), pick(Allow)
}

// sensitiveAllow returns the first allow rule with sensitive: true that
// names abs.
func (j *judgement) sensitiveAllow(abs string, acc access) *rule {
	for _, r := range j.e.rules {
		if r.decision == Allow && r.sensitive && r.callMatches(j.req.Tool, j.req.Operation, j.req.Args) &&
			r.pathMatches([]string{abs}, acc, j.e.scope) {
			return r
		}
	}
	return nil
}

func (j *judgement) byRule(f *facet, r *rule, risk tools.Risk) {
	f.decision, f.rule, f.risk, f.byRule = r.decision, r.name, risk, true
	why := r.reason
	if why == "" {
		why = "rule " + r.name
	}
	switch r.decision {
	case Allow:
		f.reason = j.subject(f) + " is allowed: " + why
	case Ask:
		f.reason = j.subject(f) + " needs approval: " + why
	default:
		f.reason = j.subject(f) + " is denied: " + why
	}
}

func (j *judgement) set(f *facet, d Decision, rule, reason string, risk tools.Risk) {
	f.decision, f.rule, f.reason, f.risk = d, rule, reason, risk
}

// byMode lets the approval mode decide a part of the given risk.
func (j *judgement) byMode(f *facet, risk tools.Risk, why string) {
	rule := "mode:" + j.mode.String()
	switch j.mode {
	case ModeYOLO:
		j.set(f, Allow, rule, j.subject(f)+" is allowed in YOLO mode", risk)
	case ModeAuto:
		if risk <= tools.RiskLow {
			j.set(f, Allow, rule, j.subject(f)+" is low risk, allowed in AUTO mode", risk)
			return
		}
		j.set(f, Ask, rule, fmt.Sprintf("%s is %s risk (%s); AUTO mode asks", j.subject(f), risk, why), risk)
	default:
		j.set(f, Ask, rule, fmt.Sprintf("%s: ASK mode asks before anything a rule does not allow (%s)", j.subject(f), why), risk)
	}
}

// subject names a part of the call for reasons.
func (j *judgement) subject(f *facet) string {
	switch f.kind {
	case facetPath:
		s := fmt.Sprintf("%q", f.given)
		if f.loc.Abs != "" && f.loc.Abs != f.given {
			s += " (" + f.loc.Abs + ")"
		}
		return s
	case facetCommand:
		if f.cmd >= 0 {
			return "`" + tools.Clip(j.cmds[f.cmd].Src, 80) + "`"
		}
		return "the command line"
	case facetHost:
		return "host " + f.host
	case facetEnv:
		return "the environment variable " + tools.Clip(f.given, 60)
	}
	return j.req.Tool + "." + j.req.Operation
}

func (j *judgement) decidePath(f *facet) {
	e := j.e
	if f.resolveErr != nil {
		if errors.Is(f.resolveErr, errdefs.ErrInvalidArgument) {
			j.set(f, Deny, ruleInvalidPath, fmt.Sprintf("%q is not a valid path: %v", f.given, f.resolveErr), tools.RiskHigh)
			return
		}
		if errors.Is(f.resolveErr, syscall.ELOOP) {
			// A loop of symbolic links leads nowhere: the call could only
			// fail, so nobody is asked about it.
			j.set(f, Deny, ruleInvalidPath, fmt.Sprintf("%q cannot be used: %v", f.given, f.resolveErr), tools.RiskHigh)
			return
		}
		f.hard = true
		j.set(f, Ask, ruleUnresolvable, fmt.Sprintf("%q cannot be resolved, so where it leads cannot be judged (%v)", f.given, f.resolveErr), tools.RiskHigh)
		return
	}
	forms := []string{f.loc.Abs}
	if f.lexical != "" && f.lexical != f.loc.Abs {
		forms = append(forms, f.lexical)
	}
	sens := ""
	for _, p := range forms {
		if pat, ok := e.sensitive.Match(p); ok {
			sens = pat
			break
		}
	}
	deny, ask, allow := j.strictest(kindPath, func(r *rule) bool {
		if r.decision == Allow {
			// What the kernel will touch must be allowed.
			return r.pathMatches(forms[:1], f.acc, e.scope)
		}
		return r.pathMatches(forms, f.acc, e.scope)
	})
	outside := !f.loc.Inside
	risk := tools.RiskLow
	switch {
	case outside && f.acc != accValue:
		risk = tools.RiskHigh
	case f.acc == accWrite:
		risk = tools.RiskMedium
	}
	if f.cmd < 0 && !f.workdir {
		risk = max(risk, j.base)
	}
	if deny != nil {
		j.byRule(f, deny, risk)
		return
	}
	if sens != "" {
		sa := j.sensitiveAllow(f.loc.Abs, f.acc)
		if sa == nil {
			j.set(f, Deny, ruleSensitive, fmt.Sprintf("%s is a sensitive path (it matches %q); toold never lets a call read or write it (a policy rule with sensitive: true can allow it)", j.subject(f), sens), tools.RiskHigh)
			return
		}
		if ask == nil {
			allow = sa
		}
	}
	if ask != nil {
		j.byRule(f, ask, risk)
		return
	}
	if allow != nil && (!outside || allow.kind() == kindPath) {
		j.byRule(f, allow, risk)
		return
	}
	if !outside {
		if (f.cmd >= 0 && f.acc != accWrite) || f.workdir {
			f.neutral = true
			j.set(f, Allow, ruleCommandArg, j.subject(f)+" is inside the workspace; its command decides", tools.RiskLow)
			return
		}
		what := "reads inside the workspace"
		if f.acc == accWrite {
			what = "writes inside the workspace"
		}
		j.byMode(f, risk, what)
		return
	}
	switch f.acc {
	case accValue:
		f.neutral = true
		j.set(f, Allow, ruleCommandArg, j.subject(f)+" is only named, not opened", tools.RiskLow)
	case accRead, accExec:
		switch {
		case j.mode == ModeAuto && e.readRoot(f.loc.Abs):
			j.set(f, Allow, ruleReadRoot, j.subject(f)+" is under a read root, readable in AUTO mode", risk)
		default:
			j.byMode(f, risk, "it reads outside the workspace")
		}
	default:
		what := "the call writes " + f.loc.Abs
		switch {
		case f.workdir:
			what = "the command runs in " + f.loc.Abs
		case f.cmd >= 0 && f.acc == accArg:
			what = "`" + tools.Clip(j.cmds[f.cmd].Src, 80) + "` may write " + f.loc.Abs
		case f.cmd >= 0:
			what = "`" + tools.Clip(j.cmds[f.cmd].Src, 80) + "` writes " + f.loc.Abs
		}
		j.set(f, Ask, ruleOutsideWrite, what+", outside the workspace; that needs a person's approval in every mode", tools.RiskHigh)
	}
}

func (j *judgement) decideCommand(f *facet) {
	c := j.cmds[f.cmd]
	f.grantable = len(c.Problems) == 0 && len(c.Env) == 0 && len(c.Layers) == 1 && len(c.Wrappers) == 0 &&
		!c.WrapperOnly && !c.DynArgs && !c.Privileged && len(j.req.Effect.Env) == 0 && allLiteral(c.Args())
	deny, ask, allow := j.strictest(kindCommand, func(r *rule) bool { return r.commandMatches(c, j.e.home) })
	if deny != nil {
		j.byRule(f, deny, tools.RiskHigh)
		return
	}
	if r := j.runtimeRule(c); r != nil {
		f.hard = true
		j.set(f, Ask, ruleDynamicTarget, j.subject(f)+": "+runtimeReason(r), tools.RiskHigh)
		return
	}
	if p, ok := c.HardProblem(); ok {
		f.hard = true
		j.set(f, Ask, p.Rule, fmt.Sprintf("%s cannot be judged: %s", j.subject(f), p.Reason), tools.RiskHigh)
		return
	}
	if ask != nil {
		j.byRule(f, ask, tools.RiskHigh)
		return
	}
	soft, hasSoft := c.SoftProblem()
	if c.WrapperOnly && !hasSoft {
		f.neutral = true
		j.set(f, Allow, ruleWrapper, j.subject(f)+" runs the commands judged after it", tools.RiskLow)
		return
	}
	if len(c.Args()) == 0 {
		if !hasSoft {
			f.neutral = true
			j.set(f, Allow, ruleNoCommand, j.subject(f)+" runs no command", tools.RiskLow)
			return
		}
	} else if allow != nil && !hasSoft {
		j.byRule(f, allow, tools.RiskLow)
		return
	}
	if j.mode == ModeYOLO {
		j.byMode(f, tools.RiskHigh, "")
		return
	}
	rule := "mode:" + j.mode.String()
	why := "no rule allows it"
	if hasSoft {
		rule, why = soft.Rule, soft.Reason
		if allow != nil {
			why += "; so rule " + allow.name + " does not allow it"
		}
	}
	modeWhy := "AUTO mode asks before commands no rule allows"
	if j.mode == ModeAsk {
		modeWhy = "ASK mode asks before anything a rule does not allow"
	}
	j.set(f, Ask, rule, fmt.Sprintf("%s needs approval: %s (%s)", j.subject(f), why, modeWhy), tools.RiskHigh)
}

func (j *judgement) decideHost(f *facet) {
	deny, ask, allow := j.strictest(kindHost, func(r *rule) bool { return r.hostMatches(f.host) })
	risk := j.base
	if f.cmd >= 0 {
		risk = tools.RiskLow
	}
	switch {
	case deny != nil:
		j.byRule(f, deny, tools.RiskHigh)
	case ask != nil:
		j.byRule(f, ask, risk)
	case allow != nil:
		j.byRule(f, allow, risk)
	case f.cmd >= 0:
		f.neutral = true
		j.set(f, Allow, ruleCommandArg, j.subject(f)+" is reached by a command; the command decides", tools.RiskLow)
	default:
		j.byMode(f, risk, "it reaches the network")
	}
}

func (j *judgement) decideCall(f *facet) {
	deny, ask, allow := j.strictest(kindCall, func(*rule) bool { return false })
	switch {
	case deny != nil:
		j.byRule(f, deny, j.base)
	case ask != nil:
		j.byRule(f, ask, j.base)
	case allow != nil:
		j.byRule(f, allow, j.base)
	default:
		j.byMode(f, j.base, "the tool's risk")
	}
}

// applyGrants turns the asks of a call into allows when live grants of the
// conversation cover every one of them; with consume, one-time grants used
// are removed.
func (j *judgement) applyGrants(consume bool) {
	var asks []*facet
	for _, f := range j.facets {
		switch f.decision {
		case Deny:
			return
		case Ask:
			asks = append(asks, f)
		}
	}
	if len(asks) == 0 {
		return
	}
	args := argsKey(j.req.Args)
	if j.req.Effect.Interactive {
		// Typed input is judged with what earlier input left on the line,
		// which its arguments do not show: no exact-call grant covers it.
		args = "interactive"
	}
	used, ok := j.e.grants.cover(j.req.ConversationID, j.req.Tool, j.req.Operation, args, asks, consume, j.e.now())
	if !ok {
		return
	}
	for i, f := range asks {
		g := used[i]
		f.decision, f.rule, f.grant = Allow, "grant:"+g.ID, &g
		what := g.Scope.Description
		if what == "" {
			what = describeScope(g.Scope)
		}
		f.reason = fmt.Sprintf("%s is allowed by grant %s (%s, granted by %s)", j.subject(f), g.ID, what, g.GrantedBy)
	}
}

// ---- the verdict ----

func (j *judgement) verdict() Verdict {
	v := Verdict{Decision: Allow, Risk: tools.RiskLow}
	for _, f := range j.facets {
		v.Decision = max(v.Decision, f.decision)
		v.Risk = max(v.Risk, f.risk)
	}
	d := j.deciding(j.facets, v.Decision)
	v.Rule, v.Reason = d.rule, d.reason
	if v.Decision == Ask {
		var reasons []string
		for _, f := range j.facets {
			if f.decision == Ask && !slices.Contains(reasons, f.reason) && len(reasons) < 3 {
				reasons = append(reasons, f.reason)
			}
		}
		v.Reason = strings.Join(reasons, "; ")
	}
	for _, f := range j.facets {
		if f.grant != nil {
			v.Grant = f.grant
			break
		}
	}
	v.Commands = j.parsedCommands()
	v.Summary = j.summary()
	if v.Decision != Deny {
		v.Outside = j.outside()
	}
	if v.Decision == Ask {
		v.Scopes = j.scopes()
	}
	return v
}

// deciding picks the facet that names a decision: for deny the first
// denied; for ask the first asked by a rule or a check rather than by the
// mode; for allow the first allowed by a grant, then by a policy rule, then
// any that is not neutral.
func (j *judgement) deciding(fs []*facet, d Decision) *facet {
	switch d {
	case Deny:
		for _, f := range fs {
			if f.decision == d {
				return f
			}
		}
	case Ask:
		for _, f := range fs {
			if f.decision == d && !strings.HasPrefix(f.rule, "mode:") {
				return f
			}
		}
		for _, f := range fs {
			if f.decision == d {
				return f
			}
		}
	}
	for _, pick := range []func(*facet) bool{
		func(f *facet) bool { return f.grant != nil },
		func(f *facet) bool { return f.byRule },
		func(f *facet) bool { return !f.neutral },
		func(*facet) bool { return true },
	} {
		for _, f := range fs {
			if f.decision == d && pick(f) {
				return f
			}
		}
	}
	return &facet{rule: "mode:" + j.mode.String(), reason: "nothing to judge"}
}

func (j *judgement) parsedCommands() []ParsedCommand {
	if len(j.cmds) == 0 {
		return nil
	}
	out := make([]ParsedCommand, 0, len(j.cmds))
	for i, c := range j.cmds {
		pc := ParsedCommand{Wrappers: c.Wrappers}
		for _, w := range c.Args() {
			pc.Args = append(pc.Args, w.String())
		}
		for _, r := range c.Redirects {
			pc.Redirects = append(pc.Redirects, r.Src)
		}
		for _, a := range c.Env {
			pc.Env = append(pc.Env, a.Src)
		}
		var fs []*facet
		d := Allow
		for _, f := range j.facets {
			if f.cmd == i {
				fs = append(fs, f)
				d = max(d, f.decision)
			}
		}
		df := j.deciding(fs, d)
		pc.Decision, pc.Rule, pc.Reason = d.String(), df.rule, df.reason
		out = append(out, pc)
	}
	return out
}

// outside lists the resolved paths outside the workspace the call touches.
func (j *judgement) outside() []string {
	var out []string
	for _, f := range j.facets {
		if f.kind == facetPath && f.resolveErr == nil && !f.loc.Inside && f.loc.Abs != "" && f.acc != accValue && !slices.Contains(out, f.loc.Abs) {
			out = append(out, f.loc.Abs)
		}
	}
	return out
}

func (j *judgement) summary() string {
	var s string
	switch {
	case j.req.Effect.Command != "":
		s = "Run `" + tools.Clip(strings.TrimSpace(j.req.Effect.Command), 100) + "`"
		if n := len(j.cmds); n > 1 {
			s += fmt.Sprintf(" (%d commands)", n)
		}
	case j.req.Effect.Display != "":
		s = j.req.Effect.Display
	default:
		s = "Call " + j.req.Tool
		if j.req.Operation != "" && j.req.Operation != j.req.Tool {
			s += "." + j.req.Operation
		}
	}
	if out := j.outside(); len(out) > 0 {
		more := ""
		if len(out) > 2 {
			more = fmt.Sprintf(" and %d more", len(out)-2)
			out = out[:2]
		}
		s += " — outside the workspace: " + strings.Join(out, ", ") + more
	}
	return s
}

// maxScopes bounds the conversation scopes offered.
const maxScopes = 4

// scopes offers approving this call once, and, for each part that asks
// and may be granted, a conversation grant narrowed to the tool, the
// operation and the part's directory or command prefix.
func (j *judgement) scopes() []Scope {
	tool, op := j.req.Tool, j.req.Operation
	out := []Scope{{ID: "once", Tool: tool, Operation: op, Description: "this call only"}}
	seen := map[string]bool{}
	ttl := j.e.defaultTTL
	for _, f := range j.facets {
		if f.decision != Ask || f.hard || f.kind == facetEnv || len(out) > maxScopes {
			continue
		}
		s := Scope{Conversation: true, Tool: tool, Operation: op, TTL: ttl}
		switch f.kind {
		case facetPath:
			if s.PathPrefix = j.scopeDir(f); s.PathPrefix == "" {
				continue
			}
		case facetCommand:
			// A command grant covers only commands written out in full:
			// offering one for this command would promise what it cannot keep.
			if !f.grantable {
				continue
			}
			if s.CommandPrefix = commandPrefix(f.words); s.CommandPrefix == "" {
				continue
			}
		case facetHost:
			s.Host = f.host
		}
		key := s.PathPrefix + "\x00" + s.CommandPrefix + "\x00" + s.Host
		if seen[key] {
			continue
		}
		seen[key] = true
		s.Description = describeScope(s)
		s.ID = fmt.Sprintf("conversation-%d", len(out))
		out = append(out, s)
	}
	return out
}

// describeScope says in words what a grant of s covers.
func describeScope(s Scope) string {
	target := s.Tool
	if s.Operation != "" && s.Operation != s.Tool {
		target += "." + s.Operation
	}
	var what string
	switch {
	case s.PathPrefix != "":
		what = fmt.Sprintf("%s on paths under %s", target, s.PathPrefix)
	case s.CommandPrefix != "":
		what = fmt.Sprintf("%s running commands that start with %q, written out in full (no variables, substitutions, wrappers or environment)", target, s.CommandPrefix)
	case s.Arguments != "":
		what = fmt.Sprintf("%s with exactly the arguments %s", target, tools.Clip(s.Arguments, 200))
	case s.Host != "":
		what = fmt.Sprintf("%s reaching host %s", target, s.Host)
	default:
		what = "every " + target + " call"
	}
	if !s.Conversation {
		return what + ", once"
	}
	return fmt.Sprintf("%s, in this conversation for %s (deny rules, sensitive paths and what asks in every mode still apply)", what, s.TTL)
}

// scopeDir is the directory a path grant is narrowed to: the path itself
// when it is a directory, else its parent; never / or the home directory.
func (j *judgement) scopeDir(f *facet) string {
	if f.resolveErr != nil || f.loc.Abs == "" {
		return ""
	}
	d := f.loc.Abs
	if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
		d = filepath.Dir(d)
	}
	if d == "/" || d == j.e.home {
		return ""
	}
	return d
}

// subcommandTools are programs whose first argument is a subcommand, so
// that a grant for "git push" does not cover "git reset".
var subcommandTools = []string{
	"git", "go", "npm", "pnpm", "yarn", "bun", "deno", "cargo", "rustup", "docker", "podman", "kubectl",
	"helm", "make", "pip", "pip3", "uv", "poetry", "pdm", "gh", "glab", "terraform", "tofu", "systemctl",
	"apt", "apt-get", "brew", "dotnet", "mvn", "gradle", "gradlew", "bazel", "nix", "conda", "aws",
	"gcloud", "az", "composer", "bundle", "rake", "mix", "stack", "cabal", "dune", "opam", "swift",
	"flutter", "dart", "just", "task", "nx", "turbo", "lerna", "vagrant", "ansible-galaxy", "hg", "svn",
}

// commandPrefix is what a command grant is narrowed to: the command name,
// and for programs with subcommands the subcommand ("git push").
func commandPrefix(words []string) string {
	if len(words) == 0 || words[0] == "" || strings.ContainsAny(words[0], "$`*?[") {
		return ""
	}
	name := words[0]
	if shellread.InSystemBin(name) {
		name = path.Base(name)
	}
	if len(words) > 1 && slices.Contains(subcommandTools, path.Base(name)) && isSubcommand(words[1]) {
		return name + " " + words[1]
	}
	if b := path.Base(name); slices.Contains(shellread.ShellNames, b) || shellread.IsInterpreter(b) {
		// A grant for an interpreter is for the script it was shown
		// running, never for any program it may be given.
		if len(words) < 2 || strings.HasPrefix(words[1], "-") || shellread.StdinFile(words[1]) {
			return ""
		}
		return name + " " + words[1]
	}
	return name
}

// allLiteral reports whether every word is known before the command runs
// and is no glob.
func allLiteral(ws []shellread.Word) bool {
	for _, w := range ws {
		if !w.Literal || w.Glob {
			return false
		}
	}
	return true
}

// argsKey is the canonical JSON of a call's arguments, which a grant bound
// to one exact call compares.
func argsKey(args map[string]any) string {
	b, err := json.Marshal(args)
	if err != nil {
		return ""
	}
	return string(b)
}

func isSubcommand(s string) bool {
	if s == "" || len(s) > 32 || !(s[0] >= 'a' && s[0] <= 'z') {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}
