package authz

// Taking a command line apart into the facets it is judged by: its
// commands, the directories it may run in, the paths and hosts its words
// name.

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/toold/toold/pkg/authz/internal/shellread"
	"github.com/toold/toold/pkg/tools"
)

// commandLine adds the commands of a command line and what they touch.
func (j *judgement) commandLine(line string) {
	pl := j.e.lines.parse(line, j.e.home, j.req.Effect.Interactive)
	for _, pr := range pl.Problems {
		if j.relaxed {
			// A line the judge cannot read runs in the sandbox all the
			// same (bash refuses a line that does not parse).
			break
		}
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
