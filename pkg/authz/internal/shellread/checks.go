package shellread

import (
	"fmt"
	"slices"
	"strings"
)

// execOptions are options and subcommands that make a program run another
// program or load code chosen on the command line, in the syntax of command
// patterns. A command that has one is not allowed by a rule: rg is safe to
// allow, rg --pre=./x is not.
var execOptions = []*CmdPattern{
	mustCmdPattern("rg --pre|--pre-glob"),
	mustCmdPattern("sort --compress-program"),
	mustCmdPattern("tar -I|-F|--use-compress-program|--to-command|--checkpoint-action|--info-script|--new-volume-script|--rsh-command|--rmt-command"),
	mustCmdPattern("rsync -e|--rsh|--rsync-path"),
	mustCmdPattern("zip -TT|--unzip-command"),
	mustCmdPattern("man -P|-H|--pager|--html"),
	mustCmdPattern("less -o|-O|--log-file|--LOG-FILE"),
	mustCmdPattern("go -exec|-toolexec|-overlay|-vettool|-ldflags|-modfile|-pgo"),
	mustCmdPattern("go env -w|-u"),
	mustCmdPattern("go generate"),
	mustCmdPattern("go tool"),
	mustCmdPattern("pylint --init-hook|--load-plugins|--rcfile"),
	mustCmdPattern("mypy --python-executable|--config-file"),
	mustCmdPattern("pytest|py.test -p|-c|-o|--override-ini|--rootdir|--confcutdir|--pyargs"),
	mustCmdPattern("npm|pnpm|yarn --userconfig|--globalconfig|--prefix|--node-options|--shell"),
	mustCmdPattern("make -f|--file|--makefile"),
	mustCmdPattern("ssh -o|-F|-D|-L|-R|-w"),
	mustCmdPattern("scp|sftp|rsync -S|-o|-F|-e|--rsh|--rsync-path"),
	mustCmdPattern("git log|show|diff|format-patch --ext-diff|--textconv"),
	mustCmdPattern("xz|gzip|zstd|bzip2 --files-from"),
	mustCmdPattern("cmake -P|-D|-C"),
	mustCmdPattern("node|deno|bun --require|-r|--import|--loader|--experimental-loader"),
	// Options that take the names of files or hosts from a file or stdin:
	// what they reach is only known when they run.
	mustCmdPattern("sort|du|wc --files0-from"),
	mustCmdPattern("tar|bsdtar -T|--files-from|-X|--exclude-from"),
	mustCmdPattern("rsync|cpio --files-from|--include-from|--exclude-from"),
	mustCmdPattern("zip -@|--names-stdin"),
	mustCmdPattern("curl -K|--config"),
	mustCmdPattern("wget|wget2|aria2c -i|--input-file"),
	mustCmdPattern("git --stdin|--pathspec-from-file"),
	mustCmdPattern("grep|egrep|fgrep|rg -f|--file"),
	mustCmdPattern("cargo --config"),
	mustCmdPattern("make --eval|-E"),
	mustCmdPattern("git grep -O|--open-files-in-pager"),
	mustCmdPattern("git fetch|pull|clone|ls-remote|archive|submodule --upload-pack|--exec|-u"),
	mustCmdPattern("git push --receive-pack|--exec"),
	mustCmdPattern("git rebase|pull -x|--exec"),
	mustCmdPattern("git difftool|mergetool"),
	mustCmdPattern("git submodule foreach"),
	mustCmdPattern("git bisect run"),
	mustCmdPattern("git filter-branch|filter-repo"),
	mustCmdPattern("git -c|--config-env"),
	mustCmdPattern("npm|pnpm|yarn --script-shell"),
	mustCmdPattern("jq|yq --from-file|-f"),
	mustCmdPattern("vim|vi|nvim|ex -c|-S|--cmd"),
	mustCmdPattern("tree -o"),
	mustCmdPattern("file -C|-m|--compile|--magic-file"),
	mustCmdPattern("diff|git --ext-diff|--external-diff"),
}

// readOnly lists commands whose path arguments are only read, with the
// options that make them write (or run something). Path arguments of every
// other command may be written: outside the workspace they need a person
// in every mode.
var readOnly = map[string][]string{
	"cat": nil, "tac": nil, "head": nil, "tail": nil, "less": {"-o", "-O", "--log-file", "--LOG-FILE"},
	"more": nil, "ls": nil, "tree": {"-o"}, "stat": nil, "file": {"-C", "--compile"}, "wc": nil,
	"du": nil, "df": nil, "grep": nil, "egrep": nil, "fgrep": nil, "rg": {"--pre"}, "ag": nil,
	"find": {"-delete", "-fprint", "-fprint0", "-fprintf", "-fls", "-exec", "-execdir", "-ok", "-okdir"},
	"diff": nil, "cmp": nil, "md5sum": nil, "sha1sum": nil, "sha256sum": nil, "sha512sum": nil,
	"b2sum": nil, "cksum": nil, "readlink": nil, "realpath": nil, "basename": nil, "dirname": nil,
	"test": nil, "[": nil, "echo": nil, "printf": nil, "which": nil, "type": nil, "jq": nil,
	"sort": {"-o", "--output"}, "cut": nil, "nl": nil, "od": nil, "hexdump": nil, "strings": nil,
	"column": nil, "comm": nil, "pwd": nil, "ldd": nil, "nm": nil, "objdump": nil, "readelf": nil,
	"bat": nil, "batcat": nil, "fd": {"-x", "-X", "--exec", "--exec-batch"}, "fdfind": {"-x", "-X", "--exec", "--exec-batch"},
	"zcat": nil, "bzcat": nil, "xzcat": nil, "zgrep": nil, "lsattr": nil, "getfacl": nil,
}

// noPathArgs are commands that never open a file named by an argument:
// an argument only known at run time cannot make them touch a sensitive
// path.
var noPathArgs = []string{
	"echo", "printf", "true", "false", "test", "[", "exit", "return", "shift", "break", "continue", "sleep",
	"kill", "wait", "expr", "seq", "let", "local", "read", "unset", "basename", "dirname", "export", "readonly",
	"declare", "typeset", "tput", "jobs", "times", "umask", "ulimit", ":",
}

// ReadOnlyArgs reports whether c's path arguments are only read.
func ReadOnlyArgs(c *Command) bool {
	writing, ok := readOnly[c.Name()]
	if !ok {
		return false
	}
	for _, w := range c.Args()[1:] {
		if !w.Literal {
			continue
		}
		for _, o := range writing {
			if w.Text == o || strings.HasPrefix(w.Text, o+"=") || (len(o) == 2 && o[1] != '-' && strings.HasPrefix(w.Text, o)) {
				return false
			}
		}
	}
	return true
}

// checkCommand records the problems of c's innermost command.
func checkCommand(c *Command) {
	if c.Privileged {
		c.AddProblem(Problem{Rule: RulePrivileged, Reason: "it runs with raised privileges (" + strings.Join(c.Wrappers, ", ") + "), where no path check holds", Hard: true})
	}
	if c.WrapperOnly {
		return
	}
	args := c.Args()
	if len(args) == 0 {
		return
	}
	name := c.Name()
	switch name {
	case "source", ".":
		c.AddProblem(Problem{Rule: RuleUnparseable, Reason: "it runs the commands of a file (" + name + "), which cannot be judged", Hard: true})
	case "cd", "pushd":
		judgeCd(c, args)
	case "alias", "bind", "enable":
		if len(args) > 1 {
			c.AddProblem(Problem{Rule: ruleExecOption, Reason: name + " changes what later commands run, where the judge cannot follow", Hard: true})
		}
	case "complete":
		c.AddProblem(Problem{Rule: ruleExecOption, Reason: name + " changes what later commands run", Hard: false})
	case "hash":
		for _, w := range args[1:] {
			if !w.Literal || strings.HasPrefix(w.Text, "-p") || (strings.HasPrefix(w.Text, "-") && strings.Contains(w.Text, "p")) {
				c.AddProblem(Problem{Rule: ruleExecOption, Reason: "hash -p makes a command name run another program", Hard: true})
				break
			}
		}
	case "git":
		judgeGitConfig(c, args)
	case "fc", "history", "shopt", "set":
		judgeShellState(c, name, args)
	case "awk", "gawk", "mawk", "nawk", "busybox awk":
		judgeAwk(c, args)
	case "make", "gmake", "bmake":
		for i, w := range args[1:] {
			t := w.Text
			if t == "-f-" || t == "--file=-" || t == "--makefile=-" || t == "-f/dev/stdin" ||
				((t == "-f" || t == "--file" || t == "--makefile") && i+2 < len(args) && (args[i+2].Text == "-" || args[i+2].Text == "/dev/stdin")) {
				c.AddProblem(Problem{Rule: RuleUnparseable, Reason: "make runs a makefile it reads from stdin, which cannot be judged", Hard: true})
			}
		}
	case "sed", "gsed":
		judgeSed(c, args)
	}
	if name == "git" && gitTemplate.Match(args, false, "") {
		c.AddProblem(Problem{Rule: RuleGitConfig, Reason: "git init or clone with --template or --separate-git-dir installs hooks or moves the repository's internals, which git runs later", Hard: true, Lasting: true})
	}
	for _, p := range execOptions {
		if p.Match(args, false, "") {
			// What the option runs is not on the line for the judge to see:
			// a person decides, in every mode.
			c.AddProblem(Problem{Rule: ruleExecOption, Reason: fmt.Sprintf("%q can make %s run other programs or write files, which the judge cannot see", p.Src, name), Hard: true})
			break
		}
	}
	if IsInterpreter(name) && !slices.Contains(ShellNames, name) && readsProgram(c) {
		for _, r := range c.Redirects {
			if r.hasBody || r.Read {
				c.AddProblem(Problem{Rule: ruleExecOption, Reason: name + " runs a program it reads from stdin (" + r.Src + "), which toold cannot judge", Hard: true})
				break
			}
		}
	}
	if IsInterpreter(name) && inlineCode(args) {
		c.AddProblem(Problem{Rule: ruleExecOption, Reason: name + " runs code given on the command line, which toold cannot judge (it judges shell)", Hard: true})
	}
	for _, w := range args[1:] {
		if !w.Literal {
			// A path only known at run time may be a sensitive one, which
			// is denied in every mode: unless the command never opens its
			// arguments, a person decides, in every mode.
			hard := !slices.Contains(noPathArgs, name)
			why := fmt.Sprintf("the argument %s is only known when it runs", w.Src)
			if hard {
				why += "; it may name a sensitive path or one outside the workspace"
			}
			c.AddProblem(Problem{Rule: ruleDynamicArgs, Reason: why, Hard: hard})
			break
		}
	}
	if c.DynArgs {
		// Arguments a wrapper adds when it runs (xargs, find -exec {}) may
		// name any file, a sensitive one too.
		c.AddProblem(Problem{Rule: ruleDynamicArgs, Reason: "its arguments are only known when it runs (" + strings.Join(c.Wrappers, ", ") + ")", Hard: !slices.Contains(noPathArgs, name)})
	}
}

// gitTemplate is git init or clone with a template (hooks copied into the
// new repository) or with the internals elsewhere.
var gitTemplate = mustCmdPattern("git init|clone --template|--separate-git-dir")

// judgeGitConfig asks for git config writing a key that makes git run
// programs later (core.fsmonitor, alias.*, core.pager, ...), in every mode.
func judgeGitConfig(c *Command, args []Word) {
	if len(args) < 2 || args[1].Text != "config" {
		return
	}
	key := ""
	for _, w := range args[2:] {
		t := w.Text
		if !w.Literal {
			c.AddProblem(Problem{Rule: RuleGitConfig, Reason: "git config with a value only known when it runs", Hard: true, Lasting: true})
			return
		}
		switch {
		case t == "--get" || t == "--get-all" || t == "--get-regexp" || t == "-l" || t == "--list" ||
			t == "--show-origin" || t == "--get-urlmatch" || t == "get" || t == "list":
			return
		case strings.HasPrefix(t, "-"):
		case key == "":
			key = strings.ToLower(t)
		}
	}
	if key != "" && !safeGitConfig(key) {
		c.AddProblem(Problem{Rule: RuleGitConfig, Reason: "git config sets " + key + ", which can make git run other programs later (also a person's own git, outside any sandbox)", Hard: true, Lasting: true})
	}
}

// safeShopt are shell options that change nothing the judge relies on;
// others (dotglob, nocaseglob, cdable_vars, expand_aliases, ...) change
// which files a glob names, where cd goes or what a name runs.
var safeShopt = []string{"nullglob", "failglob", "inherit_errexit", "lastpipe", "nocasematch",
	"checkwinsize", "histappend", "cmdhist", "lithist", "pipefail", "errexit", "nounset", "xtrace", "verbose",
	"noclobber", "errtrace", "functrace", "vi", "emacs", "posix", "notify", "monitor", "ignoreeof", "huponexit"}

// safeSetFlags are set's single-letter options that change nothing the
// judge relies on.
const safeSetFlags = "euxvCETbm"

// judgeShellState asks for builtins that change how later commands are
// read or rerun what was typed before: fc and history -s (a command from
// history runs unjudged), shopt -s dotglob/cdable_vars/expand_aliases, set
// -k (arguments become environment), set -a, set +B.
func judgeShellState(c *Command, name string, args []Word) {
	hard := func(why string) {
		c.AddProblem(Problem{Rule: ruleExecOption, Reason: why, Hard: true})
	}
	for _, w := range args[1:] {
		if !w.Literal {
			hard(name + " has an argument only known when it runs")
			return
		}
	}
	switch name {
	case "fc":
		for _, w := range args[1:] {
			if w.Text == "-l" || (strings.HasPrefix(w.Text, "-") && strings.Contains(w.Text, "l")) {
				return
			}
		}
		hard("fc runs commands from the shell's history, which cannot be judged")
	case "history":
		for _, w := range args[1:] {
			if strings.HasPrefix(w.Text, "-") && strings.ContainsAny(w.Text, "srnp") {
				hard("history " + w.Text + " puts commands into the shell's history, to be run later unjudged")
				return
			}
		}
	case "shopt":
		set := false
		for _, w := range args[1:] {
			t := w.Text
			switch {
			case strings.HasPrefix(t, "-"):
				set = set || strings.ContainsAny(t, "su")
			case set && !slices.Contains(safeShopt, t):
				hard("shopt " + t + " changes how the shell reads later commands (globs, cd, aliases), which the judge cannot follow")
				return
			}
		}
	case "set":
		for i := 1; i < len(args); i++ {
			t := args[i].Text
			if t == "--" || t == "-" || len(t) < 2 || (t[0] != '-' && t[0] != '+') {
				return // positional parameters follow
			}
			for _, ch := range t[1:] {
				if ch == 'o' {
					if i+1 < len(args) && !slices.Contains(safeShopt, args[i+1].Text) {
						hard("set -o " + args[i+1].Text + " changes how the shell reads later commands, which the judge cannot follow")
						return
					}
					i++
					continue
				}
				if !strings.ContainsRune(safeSetFlags, ch) {
					hard(fmt.Sprintf("set %c%c changes how the shell reads later commands, which the judge cannot follow", t[0], ch))
					return
				}
			}
		}
	}
}

// judgeCd asks for a directory change that cannot be followed: to a place
// only known at run time, home, or the previous directory.
func judgeCd(c *Command, args []Word) {
	var target []Word
	for _, w := range args[1:] {
		if w.Literal && strings.HasPrefix(w.Text, "-") && w.Text != "-" {
			continue
		}
		target = append(target, w)
	}
	switch {
	case len(target) == 0:
		c.AddProblem(Problem{Rule: RuleCd, Reason: "cd without a directory goes to the home directory, outside the workspace", Hard: true})
	case !target[0].Literal:
		c.AddProblem(Problem{Rule: RuleCd, Reason: "it changes to a directory only known when it runs (" + target[0].Src + "), so later paths cannot be judged", Hard: true})
	case target[0].Text == "-":
		c.AddProblem(Problem{Rule: RuleCd, Reason: "cd - changes to the previous directory, which cannot be judged", Hard: true})
	}
}

// judgeAwk flags awk programs that can run commands or write files:
// system(), pipes, getline, output redirection, gawk's @load and @include,
// programs and extensions from files (-f, -E, -l, -i and their long
// forms). Each asks in every mode: what runs is not shell for the judge.
func judgeAwk(c *Command, args []Word) {
	prog := ""
	for i := 1; i < len(args); i++ {
		t := args[i].Text
		long := strings.HasPrefix(t, "--")
		switch {
		case long && (prefixOfAny(t, "--file", "--exec", "--load", "--include", "--source") || strings.HasPrefix(t, "--file=") || strings.HasPrefix(t, "--exec=")):
			c.AddProblem(Problem{Rule: ruleExecOption, Reason: "awk " + t + " runs a program or extension from a file, which cannot be judged", Hard: true})
			return
		case !long && len(t) > 1 && t[0] == '-' && strings.ContainsAny(t[1:2], "fEliv") && t[1] != 'v':
			c.AddProblem(Problem{Rule: ruleExecOption, Reason: "awk " + t + " runs a program or extension from a file, which cannot be judged", Hard: true})
			return
		case t == "-v" || t == "-F" || t == "--assign" || t == "--field-separator":
			i++
		case strings.HasPrefix(t, "-"):
		default:
			if prog == "" {
				prog = t
			}
		}
		if prog != "" {
			break
		}
	}
	for _, s := range []string{"system", "|", ">", "getline", "close(", "fflush", "ENVIRON", "@load", "@include", "@namespace", "PROCINFO"} {
		if strings.Contains(prog, s) {
			c.AddProblem(Problem{Rule: ruleExecOption, Reason: fmt.Sprintf("the awk program uses %q, so it may run commands, read or write files", s), Hard: true})
			return
		}
	}
}

// prefixOfAny reports whether the long option t (without =value) is one
// of names or an abbreviation of one.
func prefixOfAny(t string, names ...string) bool {
	t, _, _ = strings.Cut(t, "=")
	if len(t) <= 2 {
		return false
	}
	for _, n := range names {
		if strings.HasPrefix(n, t) {
			return true
		}
	}
	return false
}

// inlineCode reports an interpreter given its program on the command line
// (python -c, perl -e, node -e/-p, ruby -e, php -r, lua -e, ...).
func inlineCode(args []Word) bool {
	for _, w := range args[1:] {
		t := w.Text
		if !strings.HasPrefix(t, "-") || t == "-" || t == "--" {
			return false // the script operand (or stdin) comes first
		}
		if strings.HasPrefix(t, "--") {
			if prefixOfAny(t, "--eval", "--print", "--command", "--exec", "--execute", "--require", "--import") {
				return true
			}
			continue
		}
		if strings.ContainsAny(t[1:], "ceEpr") {
			return true
		}
	}
	return false
}

// judgeSed flags sed scripts with commands that run programs (e, s///e) or
// read and write files (r, R, w, W, s///w), and scripts from files. Short
// options are read as getopt does (-nes/x/y/e is -n -e 's/x/y/e'), long
// ones also abbreviated (--exp=...). Running a program asks in every mode.
func judgeSed(c *Command, args []Word) {
	var scripts []string
	explicit := false
	var rest []string
	fromFile := func(t string) {
		c.AddProblem(Problem{Rule: ruleExecOption, Reason: "sed " + t + " runs a script from a file, which cannot be judged", Hard: true})
	}
	for i := 1; i < len(args); i++ {
		t := args[i].Text
		switch {
		case t == "--":
			rest = append(rest, textsOf(args[i+1:])...)
			i = len(args)
		case strings.HasPrefix(t, "--"):
			name, val, hasVal := strings.Cut(t, "=")
			switch {
			case prefixOfAny(name, "--expression"):
				if !hasVal && i+1 < len(args) {
					i++
					val = args[i].Text
				}
				scripts, explicit = append(scripts, val), true
			case prefixOfAny(name, "--file"):
				fromFile(t)
				return
			case prefixOfAny(name, "--line-length", "--separate", "--in-place", "--null-data", "--zero-terminated",
				"--quiet", "--silent", "--regexp-extended", "--unbuffered", "--posix", "--sandbox", "--debug",
				"--follow-symlinks", "--binary", "--help", "--version"):
			default:
				c.AddProblem(Problem{Rule: ruleExecOption, Reason: "sed has an option toold does not know (" + t + ")", Hard: true})
				return
			}
		case len(t) > 1 && t[0] == '-':
			for j := 1; j < len(t); j++ {
				switch t[j] {
				case 'e':
					val := t[j+1:]
					if val == "" && i+1 < len(args) {
						i++
						val = args[i].Text
					}
					scripts, explicit = append(scripts, val), true
					j = len(t)
				case 'f':
					fromFile(t)
					return
				case 'l':
					if j+1 == len(t) {
						i++
					}
					j = len(t)
				case 'i':
					j = len(t) // -i[SUFFIX]
				case 'n', 'r', 'E', 's', 'u', 'z':
				default:
					c.AddProblem(Problem{Rule: ruleExecOption, Reason: "sed has an option toold does not know (" + t + ")", Hard: true})
					return
				}
			}
		default:
			rest = append(rest, t)
		}
	}
	if !explicit && len(rest) > 0 {
		scripts = append(scripts, rest[0])
	}
	for _, s := range scripts {
		if cmd, bad := sedUnsafe(s); bad {
			c.AddProblem(Problem{Rule: ruleExecOption, Reason: fmt.Sprintf("the sed script uses %q, which runs commands or reads and writes files", cmd), Hard: true})
			return
		}
	}
}

func textsOf(ws []Word) []string {
	out := make([]string, 0, len(ws))
	for _, w := range ws {
		out = append(out, w.Text)
	}
	return out
}

// sedUnsafe scans a sed script for the commands e, r, R, w, W and the s
// flags e and w. A script it cannot follow counts as unsafe.
func sedUnsafe(s string) (string, bool) {
	i := 0
	skipRegex := func(delim byte) bool {
		for i < len(s) {
			switch s[i] {
			case '\\':
				i += 2
				continue
			case delim:
				i++
				return true
			}
			i++
		}
		return false
	}
	for i < len(s) {
		// Address: numbers, $, /re/, \cREc, ranges, steps, !.
		for i < len(s) {
			ch := s[i]
			switch {
			case ch == ' ' || ch == '\t' || ch == '\n' || ch == ';' || ch == ',' || ch == '!' || ch == '~' || ch == '$' || ch == '+' || (ch >= '0' && ch <= '9'):
				i++
				continue
			case ch == '/':
				i++
				if !skipRegex('/') {
					return "/", true
				}
				for i < len(s) && (s[i] == 'I' || s[i] == 'M') {
					i++
				}
				continue
			case ch == '\\' && i+1 < len(s):
				d := s[i+1]
				i += 2
				if !skipRegex(d) {
					return "\\", true
				}
				continue
			}
			break
		}
		if i >= len(s) {
			return "", false
		}
		cmd := s[i]
		i++
		switch cmd {
		case 'e', 'r', 'R', 'w', 'W':
			return string(cmd), true
		case '{', '}', '=', 'd', 'D', 'g', 'G', 'h', 'H', 'l', 'n', 'N', 'p', 'P', 'x', 'z', 'F', 'q', 'Q', 'L':
			// Optional exit code of q/Q, line length of l.
			for i < len(s) && s[i] >= '0' && s[i] <= '9' {
				i++
			}
		case ':', 'b', 't', 'T':
			for i < len(s) && s[i] != ';' && s[i] != '\n' {
				i++
			}
		case 'a', 'i', 'c':
			for i < len(s) && s[i] != '\n' {
				if s[i] == '\\' {
					i++
				}
				i++
			}
		case 'y':
			if i >= len(s) {
				return "y", true
			}
			d := s[i]
			i++
			if !skipRegex(d) || !skipRegex(d) {
				return "y", true
			}
		case 's':
			if i >= len(s) {
				return "s", true
			}
			d := s[i]
			if d == '\\' || d == '\n' {
				return "s", true
			}
			i++
			if !skipRegex(d) || !skipRegex(d) {
				return "s", true
			}
			for i < len(s) && s[i] != ';' && s[i] != '\n' && s[i] != '}' {
				switch s[i] {
				case 'e':
					return "s///e", true
				case 'w', 'W':
					return "s///w", true
				}
				i++
			}
		default:
			return string(cmd), true
		}
	}
	return "", false
}
