package shellread

import (
	"fmt"
	"path"
	"slices"
	"strings"
)

// Wrappers: commands that run another command. Unwrapping peels them off so
// that rules judge the command that runs, and records what the wrapper adds
// (privilege, arguments computed at run time, its own files).

// unwrapped is what a wrapper runs.
type unwrapped struct {
	// self: the command is not used as a wrapper here (sudo -l, command
	// -v x, find without -exec); it is judged as it is.
	self bool
	// Own are the wrapper's Own words: options and their values.
	Own []Word
	// inner is the command the wrapper runs.
	inner []Word
	// display is the wrapper as people see it ("timeout 10").
	display string
	// script is a shell string the wrapper runs (bash -c, eval).
	script *Word
	// extra are further commands the wrapper runs besides (find -exec),
	// shown with extraDisplay.
	extra        [][]Word
	extraDisplay string
	Env          []Assignment
	cwd          []Word
	Privileged   bool
	DynArgs      bool
	problem      *Problem
}

// wrapperFunc unwraps args, whose first word names the wrapper.
type wrapperFunc func(c *Command, args []Word) unwrapped

// wrappers maps a command's base name to its unwrapper.
var wrappers = buildWrappers()

func buildWrappers() map[string]wrapperFunc {
	wrappers := map[string]wrapperFunc{
		"sudo": unwrapSudo, "doas": unwrapDoas, "su": unwrapSu, "pkexec": unwrapPkexec, "run0": unwrapRun0,
		"chroot": unwrapChroot,
		"env":    unwrapEnv, "nice": unwrapNice, "nohup": simpleWrapper, "timeout": unwrapTimeout,
		"command": unwrapCommand, "builtin": simpleWrapper, "exec": unwrapExec, "time": unwrapTime,
		"stdbuf": unwrapStdbuf, "ionice": unwrapIonice, "setsid": unwrapSetsid, "chrt": unwrapChrt,
		"taskset": unwrapTaskset, "watch": unwrapWatch, "flock": unwrapFlock, "xargs": unwrapXargs,
		"busybox": simpleWrapper, "toybox": simpleWrapper, "eval": unwrapEval, "trap": unwrapTrap,
		"find": unwrapFind, "fd": unwrapFd, "fdfind": unwrapFd, "git": unwrapGit,
		"strace": unwrapStrace, "ltrace": unwrapStrace, "unbuffer": simpleWrapper, "script": unwrapScript,
		"torsocks": simpleWrapper, "proxychains": simpleWrapper, "proxychains4": simpleWrapper,
		"catchsegv": simpleWrapper, "valgrind": unwrapValgrind, "caffeinate": simpleWrapper,
		"uv": unwrapSubcommand("run"), "poetry": unwrapSubcommand("run"), "pipenv": unwrapSubcommand("run"),
		"pdm": unwrapSubcommand("run"), "rye": unwrapSubcommand("run"), "hatch": unwrapSubcommand("run"),
		"bundle": unwrapSubcommand("exec"), "mise": unwrapSubcommand("exec", "x"),
		"direnv": unwrapDirenv, "nix-shell": unwrapNixShell, "ssh": unwrapSSH,
		"ssh-agent": unwrapOptions("a:E:t:", false), "dbus-run-session": unwrapOptions("", false),
		"xvfb-run": unwrapOptions("n:l:f:e:p:s:w:", false), "rlwrap": unwrapOptions("a:b:C:D:e:f:F:g:H:I:l:M:m:N:o:O:p:P:q:r:s:S:t:w:z:", false),
		"eatmydata": simpleWrapper, "nocache": simpleWrapper, "fakeroot": unwrapOptions("l:s:i:", false),
		"faketime": unwrapOptions("f:", true), "numactl": unwrapOptions("C:N:m:p:i:l:", false),
		"prlimit": unwrapOptions("p:", false), "cgexec": unwrapOptions("g:", false), "chpst": unwrapOptions("u:U:e:/:n:l:L:m:d:o:p:f:c:r:t:", false),
		"setpriv": privilegedWrapper, "unshare": privilegedWrapper, "nsenter": privilegedWrapper, "runuser": privilegedWrapper,
		"sg": privilegedWrapper, "capsh": privilegedWrapper, "firejail": privilegedWrapper, "bwrap": privilegedWrapper,
		"systemd-run": privilegedWrapper, "flatpak-spawn": privilegedWrapper, "machinectl": privilegedWrapper,
		"parallel": unwrapParallel, "sem": unwrapParallel,
	}
	for _, sh := range ShellNames {
		wrappers[sh] = unwrapShell
	}
	return wrappers
}

// opt is one parsed option.
type opt struct {
	Name, Value string
}

// optSpec says which options of a wrapper take a value. Letters and names
// not listed at all are unknown: a wrapper with an unknown option is not
// trusted to be unwrapped right.
type optSpec struct {
	valued     string   // short options that take a value
	Flags      string   // short options without a value
	long       []string // long options that take a value (without --)
	longFlags  []string // long options without a value
	numeric    bool     // -10 is an option (nice)
	plusOption bool     // +o name (shells)
}

// parse consumes the options of args from index start. It returns the
// index of the first word after them, the options, and an unknown option.
func (s optSpec) parse(args []Word, start int) (next int, opts []opt, unknown string) {
	i := start
	for i < len(args) {
		w := args[i]
		if !w.Literal {
			return i, opts, unknown
		}
		t := w.Text
		if t == "--" {
			return i + 1, opts, unknown
		}
		if len(t) < 2 || (t[0] != '-' && !(s.plusOption && t[0] == '+')) {
			return i, opts, unknown
		}
		if strings.HasPrefix(t, "--") {
			name, val, hasVal := strings.Cut(t[2:], "=")
			switch {
			case slices.Contains(s.long, name):
				if !hasVal && i+1 < len(args) {
					i++
					val = args[i].Text
				}
			case slices.Contains(s.longFlags, name):
			default:
				unknown = t
			}
			opts = append(opts, opt{"--" + name, val})
			i++
			continue
		}
		if s.numeric && IsNumber(strings.TrimPrefix(t[1:], "+")) {
			opts = append(opts, opt{t, ""})
			i++
			continue
		}
		for j := 1; j < len(t); j++ {
			ch := t[j]
			if strings.IndexByte(s.valued, ch) >= 0 {
				val := t[j+1:]
				if val == "" && i+1 < len(args) {
					i++
					val = args[i].Text
				}
				opts = append(opts, opt{t[:1] + string(ch), val})
				break
			}
			if strings.IndexByte(s.Flags, ch) < 0 {
				unknown = t
			}
			opts = append(opts, opt{t[:1] + string(ch), ""})
		}
		i++
	}
	return i, opts, unknown
}

func IsNumber(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

func hasOpt(opts []opt, names ...string) bool {
	for _, o := range opts {
		if slices.Contains(names, o.Name) {
			return true
		}
	}
	return false
}

func optValues(opts []opt, names ...string) []string {
	var out []string
	for _, o := range opts {
		if slices.Contains(names, o.Name) && o.Value != "" {
			out = append(out, o.Value)
		}
	}
	return out
}

// wrap builds the usual result: options then the command at index next.
func wrap(args []Word, next int, unknown string) unwrapped {
	// own is capped: callers append to it, which must not overwrite the
	// inner command that shares args' array.
	u := unwrapped{Own: args[1:next:next], display: layerDisplay(args[:next])}
	if next < len(args) {
		u.inner = args[next:]
	} else {
		u.self = true
	}
	if unknown != "" {
		u.problem = &Problem{Rule: ruleWrapperOpt, Reason: fmt.Sprintf("%s has an option toold does not know (%s), so what it runs cannot be told for sure", args[0].Text, unknown), Hard: false}
	}
	return u
}

func textWord(s string) Word { return Word{Text: s, Literal: true, Src: s} }

// valueWords returns the values of opts as words, for path checks.
func valueWords(vals []string) []Word {
	out := make([]Word, 0, len(vals))
	for _, v := range vals {
		out = append(out, textWord(v))
	}
	return out
}

// simpleWrapper runs its first word as a command: nohup, builtin, busybox.
func simpleWrapper(_ *Command, args []Word) unwrapped {
	next := 1
	if len(args) > 1 && args[1].Literal && args[1].Text == "--" {
		next = 2
	}
	if len(args) > next && args[next].Literal && strings.HasPrefix(args[next].Text, "-") {
		return unwrapped{self: true}
	}
	return wrap(args, next, "")
}

var sudoSpec = optSpec{
	valued:    "ugphCDrtTUR",
	Flags:     "AbEHiKklnPSsVveBN",
	long:      []string{"user", "group", "host", "prompt", "close-from", "chdir", "role", "type", "command-timeout", "other-user", "chroot"},
	longFlags: []string{"askpass", "background", "preserve-env", "edit", "help", "set-home", "login", "remove-timestamp", "reset-timestamp", "list", "non-interactive", "preserve-groups", "shell", "stdin", "validate", "version", "bell"},
}

func unwrapSudo(_ *Command, args []Word) unwrapped {
	next, opts, unknown := sudoSpec.parse(args, 1)
	if hasOpt(opts, "-e", "--edit") {
		// sudoedit: edits the files as root.
		u := unwrapped{display: "sudo -e", Privileged: true, inner: append([]Word{textWord("sudoedit")}, args[next:]...)}
		return u
	}
	u := wrap(args, next, unknown)
	u.Privileged = true
	u.cwd = valueWords(optValues(opts, "-D", "--chdir"))
	if u.self {
		// sudo -i / -s without a command: a root shell; sudo -l, -v, -k:
		// sudo itself.
		u.self = false
		u.inner = []Word{textWord("sudo")}
		for _, o := range opts {
			if o.Name == "-i" || o.Name == "-s" || o.Name == "--login" || o.Name == "--shell" {
				u.inner = []Word{textWord("sh")}
			}
		}
		if len(u.inner) == 1 && u.inner[0].Text == "sudo" {
			return unwrapped{self: true, problem: &Problem{Rule: RulePrivileged, Reason: "it runs sudo", Hard: true}}
		}
	}
	return u
}

func unwrapDoas(_ *Command, args []Word) unwrapped {
	next, _, unknown := optSpec{valued: "uC", Flags: "nsL"}.parse(args, 1)
	u := wrap(args, next, unknown)
	u.Privileged = true
	if u.self {
		return unwrapped{self: true, problem: &Problem{Rule: RulePrivileged, Reason: "it runs doas", Hard: true}}
	}
	return u
}

func unwrapSu(_ *Command, args []Word) unwrapped {
	spec := optSpec{valued: "cgGsw", Flags: "flmpP", long: []string{"command", "group", "supp-group", "shell", "whitelist-environment", "session-command"},
		longFlags: []string{"login", "preserve-environment", "fast", "pty", "help", "version"}}
	_, opts, _ := spec.parse(args, 1)
	cmds := optValues(opts, "-c", "--command", "--session-command")
	if len(cmds) == 0 {
		return unwrapped{self: true, problem: &Problem{Rule: RulePrivileged, Reason: "it runs su", Hard: true}}
	}
	for i := 1; i < len(args); i++ {
		if args[i].Text == cmds[0] && (args[i-1].Text == "-c" || args[i-1].Text == "--command" || args[i-1].Text == "--session-command") {
			w := args[i]
			return unwrapped{script: &w, display: "su -c", Privileged: true}
		}
	}
	w := textWord(cmds[0])
	return unwrapped{script: &w, display: "su -c", Privileged: true}
}

func unwrapPkexec(_ *Command, args []Word) unwrapped {
	next, _, unknown := optSpec{long: []string{"user"}, longFlags: []string{"disable-internal-agent", "keep-cwd", "help", "version"}}.parse(args, 1)
	u := wrap(args, next, unknown)
	u.Privileged = true
	if u.self {
		return unwrapped{self: true, problem: &Problem{Rule: RulePrivileged, Reason: "it runs pkexec", Hard: true}}
	}
	return u
}

func unwrapRun0(_ *Command, args []Word) unwrapped {
	next, opts, unknown := optSpec{valued: "ugD", long: []string{"user", "group", "nice", "chdir", "setenv", "unit", "property", "description", "slice", "slice-inherit", "background", "machine", "area"},
		longFlags: []string{"no-ask-password", "pty", "pipe", "via-shell", "empower", "help", "version"}}.parse(args, 1)
	u := wrap(args, next, unknown)
	u.Privileged = true
	u.cwd = valueWords(optValues(opts, "-D", "--chdir"))
	if u.self {
		u.self = false
		u.inner = []Word{textWord("sh")}
	}
	return u
}

func unwrapChroot(_ *Command, args []Word) unwrapped {
	next, _, unknown := optSpec{long: []string{"userspec", "groups"}, longFlags: []string{"skip-chdir", "help", "version"}}.parse(args, 1)
	if next >= len(args) {
		return unwrapped{self: true, problem: &Problem{Rule: RulePrivileged, Reason: "it runs chroot", Hard: true}}
	}
	// NEWROOT then the command (default: a shell).
	u := unwrapped{Own: args[1 : next+1], display: layerDisplay(args[:next+1]), Privileged: true}
	if next+1 < len(args) {
		u.inner = args[next+1:]
	} else {
		u.inner = []Word{textWord("sh")}
	}
	if unknown != "" {
		u.problem = &Problem{Rule: ruleWrapperOpt, Reason: "chroot has an option toold does not know (" + unknown + ")", Hard: false}
	}
	return u
}

var envSpec = optSpec{valued: "uCSP", Flags: "i0v", long: []string{"unset", "chdir", "split-string", "block-signal", "default-signal", "ignore-signal"},
	longFlags: []string{"ignore-environment", "null", "debug", "list-signal-handling", "help", "version"}}

func unwrapEnv(c *Command, args []Word) unwrapped {
	next, opts, unknown := envSpec.parse(args, 1)
	// "env -" is env -i.
	for next < len(args) && args[next].Literal && args[next].Text == "-" {
		next++
	}
	u := unwrapped{Own: args[1:next:next], cwd: valueWords(optValues(opts, "-C", "--chdir"))}
	for next < len(args) {
		w := args[next]
		// env takes every NAME=VALUE word before the command as an
		// assignment, whatever the name (BASH_FUNC_ls%%=...).
		name, _, ok := strings.Cut(w.Text, "=")
		if !w.Literal || !ok || name == "" || strings.Contains(name, "/") {
			break
		}
		val := w
		val.Text = w.Text[len(name)+1:]
		if w.Literal {
			val.Prefix = ""
		}
		u.Env = append(u.Env, Assignment{Name: name, Value: val, Src: w.Src})
		next++
	}
	u.display = layerDisplay(args[:next])
	if unknown != "" {
		u.problem = &Problem{Rule: ruleWrapperOpt, Reason: "env has an option toold does not know (" + unknown + ")", Hard: false}
	}
	if split := optValues(opts, "-S", "--split-string"); len(split) > 0 {
		// env -S "cmd args": the string is split into words (a shell
		// parse is stricter and finds the same command).
		s := strings.Join(split, " ")
		for _, w := range args[next:] {
			s += " " + shellQuote(w.Text)
		}
		w := textWord(s)
		for _, o := range args[1:next] {
			if !o.Literal {
				w.Literal = false
			}
		}
		u.script = &w
		u.display = "env -S"
		return u
	}
	if next >= len(args) {
		// env alone prints the environment: judge it as env.
		if len(u.Env) == 0 && len(opts) == 0 {
			return unwrapped{self: true}
		}
		u.inner = []Word{textWord("env")}
		return u
	}
	u.inner = args[next:]
	return u
}

func isName(s string) bool {
	for i, r := range s {
		if r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && r >= '0' && r <= '9' {
			continue
		}
		return false
	}
	return s != ""
}

// shellQuote quotes s for a shell.
func shellQuote(s string) string {
	if s != "" && !strings.ContainsAny(s, " \t\n'\"\\$`;&|<>()*?[]{}~#!") {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func unwrapNice(_ *Command, args []Word) unwrapped {
	next, _, unknown := optSpec{valued: "n", long: []string{"adjustment"}, longFlags: []string{"help", "version"}, numeric: true}.parse(args, 1)
	return wrap(args, next, unknown)
}

func unwrapTimeout(_ *Command, args []Word) unwrapped {
	next, _, unknown := optSpec{valued: "sk", Flags: "v", long: []string{"signal", "kill-after"}, longFlags: []string{"preserve-status", "foreground", "verbose", "help", "version"}}.parse(args, 1)
	if next < len(args) {
		next++ // the duration
	}
	return wrap(args, next, unknown)
}

func unwrapCommand(_ *Command, args []Word) unwrapped {
	next, opts, unknown := optSpec{Flags: "pvV"}.parse(args, 1)
	if hasOpt(opts, "-v", "-V") {
		return unwrapped{self: true}
	}
	return wrap(args, next, unknown)
}

func unwrapExec(_ *Command, args []Word) unwrapped {
	next, _, unknown := optSpec{valued: "a", Flags: "cl"}.parse(args, 1)
	return wrap(args, next, unknown)
}

func unwrapTime(_ *Command, args []Word) unwrapped {
	next, opts, unknown := optSpec{valued: "of", Flags: "apqv", long: []string{"output", "format"}, longFlags: []string{"append", "portability", "verbose", "quiet", "help", "version"}}.parse(args, 1)
	u := wrap(args, next, unknown)
	u.Own = append(u.Own, valueWords(optValues(opts, "-o", "--output"))...)
	return u
}

func unwrapStdbuf(_ *Command, args []Word) unwrapped {
	next, _, unknown := optSpec{valued: "ioe", long: []string{"input", "output", "error"}, longFlags: []string{"help", "version"}}.parse(args, 1)
	return wrap(args, next, unknown)
}

func unwrapIonice(_ *Command, args []Word) unwrapped {
	next, opts, unknown := optSpec{valued: "cnpPu", Flags: "t", long: []string{"class", "classdata", "pid", "pgid", "uid"}, longFlags: []string{"ignore", "help", "version"}}.parse(args, 1)
	if hasOpt(opts, "-p", "-P", "-u", "--pid", "--pgid", "--uid") {
		return unwrapped{self: true}
	}
	return wrap(args, next, unknown)
}

// unwrapOptions handles a wrapper whose options are given getopt-style in
// spec ("a:b" - a takes a value); then one positional word when skipOne
// (faketime's time), then the command. Long options are skipped with their
// =value; a long option taking a separate value cannot be told, so the
// command found is not trusted for rules.
func unwrapOptions(spec string, skipOne bool) wrapperFunc {
	var valued, flags strings.Builder
	for i := 0; i < len(spec); i++ {
		if i+1 < len(spec) && spec[i+1] == ':' {
			valued.WriteByte(spec[i])
			i++
			continue
		}
		flags.WriteByte(spec[i])
	}
	os := optSpec{valued: valued.String(), Flags: flags.String()}
	return func(_ *Command, args []Word) unwrapped {
		next, opts, unknown := os.parse(args, 1)
		for _, o := range opts {
			if strings.HasPrefix(o.Name, "--") {
				unknown = o.Name
			}
		}
		if skipOne && next < len(args) {
			next++
		}
		return wrap(args, next, unknown)
	}
}

// privilegedWrapper handles programs that run a command in another user,
// namespace, sandbox or service (setpriv, unshare, nsenter, runuser,
// systemd-run, ...): they run what follows their options, and what that
// may do cannot be judged by paths, so it asks in every mode.
func privilegedWrapper(_ *Command, args []Word) unwrapped {
	i := 1
	for i < len(args) && args[i].Literal && strings.HasPrefix(args[i].Text, "-") {
		if args[i].Text == "--" {
			i++
			break
		}
		i++
	}
	u := wrap(args, i, "")
	u.Privileged = true
	if u.self {
		return unwrapped{self: true, problem: &Problem{Rule: RulePrivileged, Reason: "it runs " + args[0].Text, Hard: true}}
	}
	return u
}

// unwrapParallel handles GNU parallel: like xargs, the command gets its
// arguments when it runs; without a command, it runs the lines it reads
// as commands.
func unwrapParallel(_ *Command, args []Word) unwrapped {
	i := 1
	for i < len(args) && args[i].Literal && strings.HasPrefix(args[i].Text, "-") {
		i++
	}
	if i >= len(args) || (args[i].Literal && (args[i].Text == ":::" || args[i].Text == "::::")) {
		return unwrapped{self: true, problem: &Problem{Rule: RuleUnparseable, Reason: "parallel runs the commands it reads, which cannot be judged", Hard: true}}
	}
	u := wrap(args, i, "ignored")
	u.problem = &Problem{Rule: ruleDynamicArgs, Reason: "parallel gives the command arguments when it runs", Hard: true}
	u.DynArgs = true
	return u
}

// unwrapSSH handles ssh HOST COMMAND...: the remote shell runs the words
// joined as a command line (on this machine when the host is this one), so
// they are judged as one.
func unwrapSSH(_ *Command, args []Word) unwrapped {
	next, _, unknown := optSpec{valued: "BbcDEeFIiJLlmOopQRSWw", Flags: "46AaCfGgKkMNnqsTtVvXxYy"}.parse(args, 1)
	if next+1 >= len(args) {
		return unwrapped{self: true}
	}
	s := textWord("")
	var parts []string
	for _, w := range args[next+1:] {
		if !w.Literal {
			s.Literal = false
		}
		parts = append(parts, w.Text)
	}
	s.Text = strings.Join(parts, " ")
	u := unwrapped{Own: args[1 : next+1 : next+1], script: &s, display: layerDisplay(args[:next+1])}
	if unknown != "" {
		u.problem = &Problem{Rule: ruleWrapperOpt, Reason: "ssh has an option toold does not know (" + unknown + ")", Hard: false}
	}
	return u
}

func unwrapSetsid(_ *Command, args []Word) unwrapped {
	next, _, unknown := optSpec{Flags: "cfw", longFlags: []string{"ctty", "fork", "wait", "help", "version"}}.parse(args, 1)
	return wrap(args, next, unknown)
}

func unwrapChrt(_ *Command, args []Word) unwrapped {
	next, opts, unknown := optSpec{valued: "TPD", Flags: "abdfiormRvep", long: []string{"sched-runtime", "sched-period", "sched-deadline"},
		longFlags: []string{"all-tasks", "batch", "deadline", "fifo", "idle", "other", "rr", "reset-on-fork", "max", "verbose", "ext", "pid", "help", "version"}}.parse(args, 1)
	if hasOpt(opts, "-p", "--pid", "-m", "--max") {
		return unwrapped{self: true}
	}
	if next < len(args) {
		next++ // the priority
	}
	return wrap(args, next, unknown)
}

func unwrapTaskset(_ *Command, args []Word) unwrapped {
	next, opts, unknown := optSpec{Flags: "acp", longFlags: []string{"all-tasks", "cpu-list", "pid", "help", "version"}}.parse(args, 1)
	if hasOpt(opts, "-p", "--pid") {
		return unwrapped{self: true}
	}
	if next < len(args) {
		next++ // the mask
	}
	return wrap(args, next, unknown)
}

func unwrapWatch(_ *Command, args []Word) unwrapped {
	next, opts, unknown := optSpec{valued: "nq", Flags: "bcdegprtwx", long: []string{"interval", "equexit", "shotsdir", "differences"},
		longFlags: []string{"beep", "color", "no-color", "errexit", "chgexit", "exec", "precise", "no-rerun", "no-title", "no-wrap", "no-linewrap", "help", "version"}}.parse(args, 1)
	if next >= len(args) {
		return unwrapped{self: true}
	}
	if hasOpt(opts, "-x", "--exec") {
		return wrap(args, next, unknown)
	}
	// Without -x, watch joins its arguments and runs them with sh -c.
	s := textWord("")
	var parts []string
	for _, w := range args[next:] {
		if !w.Literal {
			s.Literal = false
		}
		parts = append(parts, w.Text)
	}
	s.Text = strings.Join(parts, " ")
	u := unwrapped{Own: args[1:next:next], script: &s, display: "watch"}
	if unknown != "" {
		u.problem = &Problem{Rule: ruleWrapperOpt, Reason: "watch has an option toold does not know (" + unknown + ")", Hard: false}
	}
	return u
}

func unwrapFlock(_ *Command, args []Word) unwrapped {
	next, opts, unknown := optSpec{valued: "wEc", Flags: "sexunoFv", long: []string{"timeout", "conflict-exit-code", "command"},
		longFlags: []string{"shared", "exclusive", "unlock", "nonblock", "close", "no-fork", "verbose", "help", "version"}}.parse(args, 1)
	if next >= len(args) {
		return unwrapped{self: true}
	}
	// The lock file (or a descriptor number), then the command.
	lock := args[next]
	own := append(append([]Word(nil), args[1:next]...), lock)
	if cmds := optValues(opts, "-c", "--command"); len(cmds) > 0 {
		w := textWord(cmds[0])
		for i := 1; i < len(args); i++ {
			if args[i].Text == cmds[0] {
				w = args[i]
			}
		}
		return unwrapped{Own: own, script: &w, display: "flock -c"}
	}
	rest := next + 1
	for rest < len(args) && args[rest].Literal && strings.HasPrefix(args[rest].Text, "-") {
		// Options may also follow the lock file.
		var more []opt
		rest, more, _ = optSpec{valued: "wEc", Flags: "sexunoFv"}.parse(args, rest)
		if cmds := optValues(more, "-c", "--command"); len(cmds) > 0 {
			w := textWord(cmds[0])
			return unwrapped{Own: own, script: &w, display: "flock -c"}
		}
	}
	u := unwrapped{Own: own, display: layerDisplay(args[:next+1])}
	if rest >= len(args) {
		return unwrapped{self: true}
	}
	u.inner = args[rest:]
	if unknown != "" {
		u.problem = &Problem{Rule: ruleWrapperOpt, Reason: "flock has an option toold does not know (" + unknown + ")", Hard: false}
	}
	return u
}

var xargsSpec = optSpec{valued: "adEILnPs", Flags: "0prtxeil", long: []string{"arg-file", "delimiter", "eof", "replace", "max-lines", "max-args", "max-procs", "max-chars", "process-slot-var"},
	longFlags: []string{"null", "interactive", "no-run-if-empty", "verbose", "exit", "open-tty", "show-limits", "help", "version"}}

func unwrapXargs(_ *Command, args []Word) unwrapped {
	next, opts, unknown := xargsSpec.parse(args, 1)
	u := wrap(args, next, unknown)
	u.DynArgs = true
	u.Own = append(u.Own, valueWords(optValues(opts, "-a", "--arg-file"))...)
	if u.self {
		u.self = false
		u.inner = []Word{textWord("echo")}
	}
	return u
}

// unwrapEval parses the joined arguments of eval as shell code.
func unwrapEval(_ *Command, args []Word) unwrapped {
	if len(args) == 1 {
		return unwrapped{self: true}
	}
	s := textWord("")
	var parts []string
	for _, w := range args[1:] {
		if !w.Literal {
			s.Literal = false
		}
		parts = append(parts, w.Text)
	}
	s.Text = strings.Join(parts, " ")
	return unwrapped{script: &s, display: "eval"}
}

// unwrapTrap parses trap's action as shell code.
func unwrapTrap(_ *Command, args []Word) unwrapped {
	next, opts, _ := optSpec{Flags: "lpP"}.parse(args, 1)
	if len(opts) > 0 || next >= len(args)-1 {
		return unwrapped{self: true}
	}
	w := args[next]
	if w.Literal && (w.Text == "-" || w.Text == "") {
		return unwrapped{self: true}
	}
	return unwrapped{script: &w, display: "trap"}
}

// unwrapShell handles sh, bash and the other shells: -c STRING runs STRING;
// no script file means the script comes from stdin (a here-document is
// parsed; a pipe is left to rules on piped shells).
func unwrapShell(c *Command, args []Word) unwrapped {
	i := 1
	cflag := false
	for i < len(args) {
		a := args[i]
		if !a.Literal {
			break
		}
		t := a.Text
		if t == "--" || t == "-" {
			i++
			break
		}
		if strings.HasPrefix(t, "--") {
			i++
			if t == "--rcfile" || t == "--init-file" || strings.HasPrefix(t, "--rcfile=") || strings.HasPrefix(t, "--init-file=") {
				return unwrapped{self: true, problem: &Problem{Rule: RuleUnparseable, Reason: args[0].Text + " " + t + " runs the commands of a file, which cannot be judged", Hard: true}}
			}
			continue
		}
		if len(t) > 1 && (t[0] == '-' || t[0] == '+') {
			letters := t[1:]
			if t[0] == '-' && strings.ContainsRune(letters, 'c') {
				cflag = true
			}
			i++
			if strings.ContainsAny(letters, "oO") && i < len(args) {
				// -O shopt / -o option change how the shell reads what it
				// runs (dotglob, nocaseglob, expand_aliases...).
				if opt := args[i].Text; !args[i].Literal || !slices.Contains(safeShopt, opt) {
					return unwrapped{self: true, problem: &Problem{Rule: RuleUnparseable, Reason: args[0].Text + " " + t + " " + args[i].Src + " changes how the shell reads the commands it runs, which the judge cannot follow", Hard: true}}
				}
				i++
			}
			if strings.ContainsAny(letters, "kaBfPTHh") && t[0] == '-' && !cflag {
				// The shell's own set options, as with set.
				for _, ch := range letters {
					if !strings.ContainsRune(safeSetFlags+"cilrsv", ch) {
						return unwrapped{self: true, problem: &Problem{Rule: RuleUnparseable, Reason: fmt.Sprintf("%s -%c changes how the shell reads the commands it runs, which the judge cannot follow", args[0].Text, ch), Hard: true}}
					}
				}
			}
			continue
		}
		break
	}
	name := path.Base(args[0].Text)
	if cflag {
		if i >= len(args) {
			if c.DynArgs {
				return unwrapped{self: true, problem: &Problem{Rule: RuleUnparseable, Reason: name + " -c runs a string given when it runs", Hard: true}}
			}
			return unwrapped{self: true}
		}
		if c.DynArgs {
			// xargs sh -c '...{}...': the string or its arguments come
			// when it runs.
			return unwrapped{self: true, problem: &Problem{Rule: RuleUnparseable, Reason: name + " -c runs with arguments given when it runs (" + strings.Join(c.Wrappers, ", ") + ")", Hard: true}}
		}
		s := args[i]
		return unwrapped{Own: args[1:i], script: &s, display: name + " -c"}
	}
	if i < len(args) && args[i].Literal && StdinFile(args[i].Text) {
		// bash /dev/stdin: the script is stdin, as with no file.
		i = len(args)
	}
	if i < len(args) {
		// A script file: judged as the shell running it; one named only
		// when it runs (bash <(...), bash $F) cannot be judged.
		if !args[i].Literal {
			return unwrapped{self: true, problem: &Problem{Rule: RuleUnparseable, Reason: name + " runs a script named by " + args[i].Src + ", which is only known when it runs", Hard: true}}
		}
		return unwrapped{self: true}
	}
	for _, r := range c.Redirects {
		if r.hasBody {
			b := r.body
			return unwrapped{Own: args[1:i], script: &b, display: name + " " + r.op}
		}
	}
	return unwrapped{self: true}
}

// StdinFile reports a path that names the process's own stdin.
func StdinFile(p string) bool {
	switch path.Clean(p) {
	case "/dev/stdin", "/dev/fd/0", "/proc/self/fd/0", "/proc/thread-self/fd/0":
		return true
	}
	return false
}

// findExec lists find's primaries that run a command.
var findExec = []string{"-exec", "-execdir", "-ok", "-okdir"}

// unwrapFind extracts the commands of -exec, -execdir, -ok and -okdir; find
// itself is judged too.
func unwrapFind(_ *Command, args []Word) unwrapped {
	u := unwrapped{extraDisplay: "find -exec"}
	for i := 1; i < len(args); i++ {
		if !args[i].Literal || !slices.Contains(findExec, args[i].Text) {
			continue
		}
		j := i + 1
		for j < len(args) && !(args[j].Literal && (args[j].Text == ";" || args[j].Text == "+")) {
			j++
		}
		if j > i+1 {
			u.extra = append(u.extra, args[i+1:j])
		}
		i = j
	}
	if len(u.extra) == 0 {
		return unwrapped{self: true}
	}
	return u
}

// unwrapFd extracts the command of fd -x / -X.
func unwrapFd(_ *Command, args []Word) unwrapped {
	u := unwrapped{extraDisplay: "fd --exec"}
	for i := 1; i < len(args); i++ {
		t := args[i].Text
		if !args[i].Literal || !(t == "-x" || t == "-X" || t == "--exec" || t == "--exec-batch") {
			continue
		}
		j := i + 1
		for j < len(args) && !(args[j].Literal && args[j].Text == ";") {
			j++
		}
		if j > i+1 {
			u.extra = append(u.extra, args[i+1:j])
		}
		i = j
	}
	if len(u.extra) == 0 {
		return unwrapped{self: true}
	}
	return u
}

// unwrapGit removes git's global options (-C DIR, -c KEY=VALUE, --git-dir,
// ...) so that rules see "git SUBCOMMAND ...". -c and --config-env can
// make git run programs (core.pager, alias.*, core.sshCommand), so a
// command with them is not allowed by a rule.
func unwrapGit(_ *Command, args []Word) unwrapped {
	i := 1
	var own, cwd []Word
	var prob *Problem
	for i < len(args) && args[i].Literal && strings.HasPrefix(args[i].Text, "-") {
		t := args[i].Text
		name, _, hasVal := strings.Cut(t, "=")
		switch name {
		case "-C", "-c", "--git-dir", "--work-tree", "--namespace", "--config-env", "--super-prefix", "--attr-source", "--list-cmds", "--exec-path":
			own = append(own, args[i])
			if !hasVal && name != "--exec-path" {
				if i+1 < len(args) {
					i++
					own = append(own, args[i])
					if name == "-C" {
						cwd = append(cwd, args[i])
					}
				}
			}
			switch {
			case name == "-c" && safeGitConfig(gitConfigKey(args[i].Text, hasVal)):
			case name == "-c" || name == "--config-env" || name == "--exec-path":
				prob = &Problem{Rule: ruleExecOption, Reason: "git " + name + " changes git's configuration, which can make it run other programs (core.pager, alias.*, core.sshCommand, core.fsmonitor)", Hard: true}
			}
		default:
			if strings.HasPrefix(t, "-c") && len(t) > 2 && !safeGitConfig(gitConfigKey(t[2:], true)) {
				prob = &Problem{Rule: ruleExecOption, Reason: "git -c changes git's configuration, which can make it run other programs", Hard: true}
			}
			own = append(own, args[i])
		}
		i++
	}
	if i == 1 {
		return unwrapped{self: true}
	}
	return unwrapped{Own: own, cwd: cwd, inner: append([]Word{args[0]}, args[i:]...), display: layerDisplay(args[:i]), problem: prob}
}

// gitConfigKey returns the key of a -c KEY=VALUE argument (given as the
// option's value, or in the word itself when inline).
func gitConfigKey(v string, inline bool) string {
	if inline {
		if _, after, ok := strings.Cut(v, "-c"); ok && strings.HasPrefix(v, "-c") {
			v = after
		}
	}
	k, _, _ := strings.Cut(v, "=")
	return strings.ToLower(k)
}

// safeGitConfig lists configuration keys that make git run nothing and
// read or write no other file.
func safeGitConfig(key string) bool {
	switch key {
	case "user.name", "user.email", "color.ui", "color.diff", "color.status", "color.branch", "core.quotepath",
		"core.autocrlf", "core.safecrlf", "init.defaultbranch", "advice.detachedhead", "log.showsignature",
		"diff.renames", "diff.noprefix", "merge.conflictstyle", "pull.rebase", "pull.ff", "fetch.prune",
		"push.default", "column.ui", "pager.branch", "pager.log", "pager.diff", "pager.show", "pager.status",
		"commit.gpgsign", "tag.gpgsign", "protocol.version", "grep.linenumber", "format.pretty", "log.decorate",
		"status.short", "status.branch", "blame.date", "diff.algorithm", "gc.auto", "maintenance.auto":
		return true
	}
	return false
}

func unwrapStrace(_ *Command, args []Word) unwrapped {
	next, opts, unknown := optSpec{valued: "abeEIopPsSuXO", Flags: "cCdDfFhikqrtTvVwxyzZn", long: []string{"output", "trace", "signal", "status", "user", "attach", "string-limit"}}.parse(args, 1)
	if hasOpt(opts, "-p", "--attach") {
		return unwrapped{self: true}
	}
	u := wrap(args, next, "")
	_ = unknown
	u.Own = append(u.Own, valueWords(optValues(opts, "-o", "--output"))...)
	return u
}

func unwrapValgrind(_ *Command, args []Word) unwrapped {
	i := 1
	for i < len(args) && args[i].Literal && strings.HasPrefix(args[i].Text, "-") {
		i++
	}
	return wrap(args, i, "")
}

// unwrapScript handles script -c CMD [FILE]: it runs CMD with sh -c and
// writes FILE.
func unwrapScript(_ *Command, args []Word) unwrapped {
	next, opts, _ := optSpec{valued: "cEIOBTm", Flags: "aefqh", long: []string{"command", "echo", "log-in", "log-out", "log-io", "log-timing", "logging-format", "output-limit"},
		longFlags: []string{"append", "return", "flush", "force", "quiet", "help", "version"}}.parse(args, 1)
	cmds := optValues(opts, "-c", "--command")
	own := append([]Word(nil), args[next:]...)
	if len(cmds) == 0 {
		return unwrapped{self: true}
	}
	w := textWord(cmds[0])
	for i := 1; i < len(args); i++ {
		if args[i].Text == cmds[0] {
			w = args[i]
		}
	}
	return unwrapped{Own: own, script: &w, display: "script -c"}
}

// unwrapSubcommand handles "uv run CMD", "bundle exec CMD" and the like.
func unwrapSubcommand(subs ...string) wrapperFunc {
	return func(_ *Command, args []Word) unwrapped {
		if len(args) < 2 || !args[1].Literal || !slices.Contains(subs, args[1].Text) {
			return unwrapped{self: true}
		}
		i := 2
		for i < len(args) && args[i].Literal && strings.HasPrefix(args[i].Text, "-") {
			if args[i].Text == "--" {
				i++
				break
			}
			i++
		}
		if i >= len(args) {
			return unwrapped{self: true}
		}
		u := wrap(args, i, "")
		if i > 2 {
			// Options of these runners may take values (uv run --with
			// x cmd): the command found may be a value.
			u.problem = &Problem{Rule: ruleWrapperOpt, Reason: args[0].Text + " " + args[1].Text + " has options, so the command it runs is not certain", Hard: false}
		}
		return u
	}
}

func unwrapDirenv(_ *Command, args []Word) unwrapped {
	if len(args) < 4 || !args[1].Literal || args[1].Text != "exec" {
		return unwrapped{self: true}
	}
	return unwrapped{Own: args[2:3], cwd: args[2:3], inner: args[3:], display: layerDisplay(args[:3])}
}

func unwrapNixShell(_ *Command, args []Word) unwrapped {
	for i := 1; i+1 < len(args); i++ {
		if args[i].Literal && (args[i].Text == "--run" || args[i].Text == "--command") {
			w := args[i+1]
			return unwrapped{script: &w, display: "nix-shell --run"}
		}
	}
	return unwrapped{self: true}
}

// unwrap peels the wrappers off c and returns it with the further commands
// its wrappers run.
func (p *lineParser) unwrap(c *Command, depth int) []*Command {
	out := []*Command{c}
	for range 64 {
		args := c.Args()
		if len(args) == 0 {
			break
		}
		w0 := args[0]
		if !w0.Literal || w0.Glob || w0.Text == "" {
			c.AddProblem(Problem{Rule: ruleDynamicName, Reason: fmt.Sprintf("the command name %s is only known when it runs", w0.Src), Hard: true})
			break
		}
		fn := wrappers[path.Base(w0.Text)]
		if fn == nil {
			break
		}
		u := fn(c, args)
		if u.problem != nil {
			c.AddProblem(*u.problem)
		}
		if u.self {
			break
		}
		c.Own = append(c.Own, u.Own...)
		c.Cwds = append(c.Cwds, u.cwd...)
		c.Privileged = c.Privileged || u.Privileged
		c.DynArgs = c.DynArgs || u.DynArgs
		for _, a := range u.Env {
			c.Env = append(c.Env, a)
			checkEnv(c, a)
		}
		if u.script != nil {
			c.WrapperOnly = true
			c.script = u.display
			if !u.script.Literal {
				c.AddProblem(Problem{Rule: RuleUnparseable, Reason: fmt.Sprintf("the string that %s runs is only known when it runs", u.display), Hard: true})
				break
			}
			out = append(out, p.parse(u.script.Text, depth+1, c)...)
			break
		}
		for _, x := range u.extra {
			e := &Command{
				Layers:     [][]Word{x},
				Src:        layerDisplay(x),
				Wrappers:   append(append([]string(nil), c.Wrappers...), u.extraDisplay),
				Privileged: c.Privileged,
				Env:        c.Env,
				Cwds:       c.Cwds,
			}
			for _, w := range x {
				if w.Literal && strings.Contains(w.Text, "{}") {
					e.DynArgs = true
				}
			}
			out = append(out, p.unwrap(e, depth)...)
		}
		if u.inner == nil {
			break
		}
		c.Wrappers = append(c.Wrappers, u.display)
		c.Layers = append(c.Layers, u.inner)
	}
	out = append(out, p.optionScripts(c, depth)...)
	checkCommand(c)
	return out
}

// scriptOptions are options whose value is shell code the command runs
// later (mapfile -C callback).
var scriptOptions = map[string][]string{
	"mapfile": {"-C"}, "readarray": {"-C"}, "complete": {"-C", "-W"}, "compgen": {"-C", "-W"},
}

// optionScripts parses the shell code given to c's script options.
func (p *lineParser) optionScripts(c *Command, depth int) []*Command {
	opts := scriptOptions[c.Name()]
	if len(opts) == 0 || c.WrapperOnly {
		return nil
	}
	var out []*Command
	args := c.Args()
	for i := 1; i < len(args); i++ {
		for _, o := range opts {
			var val Word
			switch {
			case args[i].Literal && args[i].Text == o && i+1 < len(args):
				val = args[i+1]
			case args[i].Literal && strings.HasPrefix(args[i].Text, o) && len(args[i].Text) > len(o):
				val = textWord(args[i].Text[len(o):])
			default:
				continue
			}
			display := c.Name() + " " + o
			if o == "-W" {
				// A word list: expanded as the words of a command are.
				val.Text = "echo " + val.Text
			}
			if !val.Literal {
				c.AddProblem(Problem{Rule: RuleUnparseable, Reason: "the code that " + display + " runs is only known when it runs", Hard: true})
				continue
			}
			holder := &Command{Wrappers: c.Wrappers, script: display, Privileged: c.Privileged, Env: c.Env, Cwds: c.Cwds}
			out = append(out, p.parse(val.Text, depth+1, holder)...)
			for _, pr := range holder.Problems {
				c.AddProblem(pr)
			}
		}
	}
	return out
}
