package authz

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
	// own are the wrapper's own words: options and their values.
	own []Word
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
	env          []Assignment
	cwd          []Word
	privileged   bool
	dynArgs      bool
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
	name, value string
}

// optSpec says which options of a wrapper take a value. Letters and names
// not listed at all are unknown: a wrapper with an unknown option is not
// trusted to be unwrapped right.
type optSpec struct {
	valued     string   // short options that take a value
	flags      string   // short options without a value
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
		if !w.literal {
			return i, opts, unknown
		}
		t := w.text
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
					val = args[i].text
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
					val = args[i].text
				}
				opts = append(opts, opt{t[:1] + string(ch), val})
				break
			}
			if strings.IndexByte(s.flags, ch) < 0 {
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
		if slices.Contains(names, o.name) {
			return true
		}
	}
	return false
}

func optValues(opts []opt, names ...string) []string {
	var out []string
	for _, o := range opts {
		if slices.Contains(names, o.name) && o.value != "" {
			out = append(out, o.value)
		}
	}
	return out
}

// wrap builds the usual result: options then the command at index next.
func wrap(args []Word, next int, unknown string) unwrapped {
	// own is capped: callers append to it, which must not overwrite the
	// inner command that shares args' array.
	u := unwrapped{own: args[1:next:next], display: layerDisplay(args[:next])}
	if next < len(args) {
		u.inner = args[next:]
	} else {
		u.self = true
	}
	if unknown != "" {
		u.problem = &Problem{ruleWrapperOpt, fmt.Sprintf("%s has an option toold does not know (%s), so what it runs cannot be told for sure", args[0].text, unknown), false}
	}
	return u
}

func textWord(s string) Word { return Word{text: s, literal: true, src: s} }

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
	if len(args) > 1 && args[1].literal && args[1].text == "--" {
		next = 2
	}
	if len(args) > next && args[next].literal && strings.HasPrefix(args[next].text, "-") {
		return unwrapped{self: true}
	}
	return wrap(args, next, "")
}

var sudoSpec = optSpec{
	valued:    "ugphCDrtTUR",
	flags:     "AbEHiKklnPSsVveBN",
	long:      []string{"user", "group", "host", "prompt", "close-from", "chdir", "role", "type", "command-timeout", "other-user", "chroot"},
	longFlags: []string{"askpass", "background", "preserve-env", "edit", "help", "set-home", "login", "remove-timestamp", "reset-timestamp", "list", "non-interactive", "preserve-groups", "shell", "stdin", "validate", "version", "bell"},
}

func unwrapSudo(_ *Command, args []Word) unwrapped {
	next, opts, unknown := sudoSpec.parse(args, 1)
	if hasOpt(opts, "-e", "--edit") {
		// sudoedit: edits the files as root.
		u := unwrapped{display: "sudo -e", privileged: true, inner: append([]Word{textWord("sudoedit")}, args[next:]...)}
		return u
	}
	u := wrap(args, next, unknown)
	u.privileged = true
	u.cwd = valueWords(optValues(opts, "-D", "--chdir"))
	if u.self {
		// sudo -i / -s without a command: a root shell; sudo -l, -v, -k:
		// sudo itself.
		u.self = false
		u.inner = []Word{textWord("sudo")}
		for _, o := range opts {
			if o.name == "-i" || o.name == "-s" || o.name == "--login" || o.name == "--shell" {
				u.inner = []Word{textWord("sh")}
			}
		}
		if len(u.inner) == 1 && u.inner[0].text == "sudo" {
			return unwrapped{self: true, problem: &Problem{rulePrivileged, "it runs sudo", true}}
		}
	}
	return u
}

func unwrapDoas(_ *Command, args []Word) unwrapped {
	next, _, unknown := optSpec{valued: "uC", flags: "nsL"}.parse(args, 1)
	u := wrap(args, next, unknown)
	u.privileged = true
	if u.self {
		return unwrapped{self: true, problem: &Problem{rulePrivileged, "it runs doas", true}}
	}
	return u
}

func unwrapSu(_ *Command, args []Word) unwrapped {
	spec := optSpec{valued: "cgGsw", flags: "flmpP", long: []string{"command", "group", "supp-group", "shell", "whitelist-environment", "session-command"},
		longFlags: []string{"login", "preserve-environment", "fast", "pty", "help", "version"}}
	_, opts, _ := spec.parse(args, 1)
	cmds := optValues(opts, "-c", "--command", "--session-command")
	if len(cmds) == 0 {
		return unwrapped{self: true, problem: &Problem{rulePrivileged, "it runs su", true}}
	}
	for i := 1; i < len(args); i++ {
		if args[i].text == cmds[0] && (args[i-1].text == "-c" || args[i-1].text == "--command" || args[i-1].text == "--session-command") {
			w := args[i]
			return unwrapped{script: &w, display: "su -c", privileged: true}
		}
	}
	w := textWord(cmds[0])
	return unwrapped{script: &w, display: "su -c", privileged: true}
}

func unwrapPkexec(_ *Command, args []Word) unwrapped {
	next, _, unknown := optSpec{long: []string{"user"}, longFlags: []string{"disable-internal-agent", "keep-cwd", "help", "version"}}.parse(args, 1)
	u := wrap(args, next, unknown)
	u.privileged = true
	if u.self {
		return unwrapped{self: true, problem: &Problem{rulePrivileged, "it runs pkexec", true}}
	}
	return u
}

func unwrapRun0(_ *Command, args []Word) unwrapped {
	next, opts, unknown := optSpec{valued: "ugD", long: []string{"user", "group", "nice", "chdir", "setenv", "unit", "property", "description", "slice", "slice-inherit", "background", "machine", "area"},
		longFlags: []string{"no-ask-password", "pty", "pipe", "via-shell", "empower", "help", "version"}}.parse(args, 1)
	u := wrap(args, next, unknown)
	u.privileged = true
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
		return unwrapped{self: true, problem: &Problem{rulePrivileged, "it runs chroot", true}}
	}
	// NEWROOT then the command (default: a shell).
	u := unwrapped{own: args[1 : next+1], display: layerDisplay(args[:next+1]), privileged: true}
	if next+1 < len(args) {
		u.inner = args[next+1:]
	} else {
		u.inner = []Word{textWord("sh")}
	}
	if unknown != "" {
		u.problem = &Problem{ruleWrapperOpt, "chroot has an option toold does not know (" + unknown + ")", false}
	}
	return u
}

var envSpec = optSpec{valued: "uCSP", flags: "i0v", long: []string{"unset", "chdir", "split-string", "block-signal", "default-signal", "ignore-signal"},
	longFlags: []string{"ignore-environment", "null", "debug", "list-signal-handling", "help", "version"}}

func unwrapEnv(c *Command, args []Word) unwrapped {
	next, opts, unknown := envSpec.parse(args, 1)
	// "env -" is env -i.
	for next < len(args) && args[next].literal && args[next].text == "-" {
		next++
	}
	u := unwrapped{own: args[1:next:next], cwd: valueWords(optValues(opts, "-C", "--chdir"))}
	for next < len(args) {
		w := args[next]
		// env takes every NAME=VALUE word before the command as an
		// assignment, whatever the name (BASH_FUNC_ls%%=...).
		name, _, ok := strings.Cut(w.text, "=")
		if !w.literal || !ok || name == "" || strings.Contains(name, "/") {
			break
		}
		val := w
		val.text = w.text[len(name)+1:]
		if w.literal {
			val.prefix = ""
		}
		u.env = append(u.env, Assignment{name: name, value: val, src: w.src})
		next++
	}
	u.display = layerDisplay(args[:next])
	if unknown != "" {
		u.problem = &Problem{ruleWrapperOpt, "env has an option toold does not know (" + unknown + ")", false}
	}
	if split := optValues(opts, "-S", "--split-string"); len(split) > 0 {
		// env -S "cmd args": the string is split into words (a shell
		// parse is stricter and finds the same command).
		s := strings.Join(split, " ")
		for _, w := range args[next:] {
			s += " " + shellQuote(w.text)
		}
		w := textWord(s)
		for _, o := range args[1:next] {
			if !o.literal {
				w.literal = false
			}
		}
		u.script = &w
		u.display = "env -S"
		return u
	}
	if next >= len(args) {
		// env alone prints the environment: judge it as env.
		if len(u.env) == 0 && len(opts) == 0 {
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
	next, _, unknown := optSpec{valued: "sk", flags: "v", long: []string{"signal", "kill-after"}, longFlags: []string{"preserve-status", "foreground", "verbose", "help", "version"}}.parse(args, 1)
	if next < len(args) {
		next++ // the duration
	}
	return wrap(args, next, unknown)
}

func unwrapCommand(_ *Command, args []Word) unwrapped {
	next, opts, unknown := optSpec{flags: "pvV"}.parse(args, 1)
	if hasOpt(opts, "-v", "-V") {
		return unwrapped{self: true}
	}
	return wrap(args, next, unknown)
}

func unwrapExec(_ *Command, args []Word) unwrapped {
	next, _, unknown := optSpec{valued: "a", flags: "cl"}.parse(args, 1)
	return wrap(args, next, unknown)
}

func unwrapTime(_ *Command, args []Word) unwrapped {
	next, opts, unknown := optSpec{valued: "of", flags: "apqv", long: []string{"output", "format"}, longFlags: []string{"append", "portability", "verbose", "quiet", "help", "version"}}.parse(args, 1)
	u := wrap(args, next, unknown)
	u.own = append(u.own, valueWords(optValues(opts, "-o", "--output"))...)
	return u
}

func unwrapStdbuf(_ *Command, args []Word) unwrapped {
	next, _, unknown := optSpec{valued: "ioe", long: []string{"input", "output", "error"}, longFlags: []string{"help", "version"}}.parse(args, 1)
	return wrap(args, next, unknown)
}

func unwrapIonice(_ *Command, args []Word) unwrapped {
	next, opts, unknown := optSpec{valued: "cnpPu", flags: "t", long: []string{"class", "classdata", "pid", "pgid", "uid"}, longFlags: []string{"ignore", "help", "version"}}.parse(args, 1)
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
	os := optSpec{valued: valued.String(), flags: flags.String()}
	return func(_ *Command, args []Word) unwrapped {
		next, opts, unknown := os.parse(args, 1)
		for _, o := range opts {
			if strings.HasPrefix(o.name, "--") {
				unknown = o.name
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
	for i < len(args) && args[i].literal && strings.HasPrefix(args[i].text, "-") {
		if args[i].text == "--" {
			i++
			break
		}
		i++
	}
	u := wrap(args, i, "")
	u.privileged = true
	if u.self {
		return unwrapped{self: true, problem: &Problem{rulePrivileged, "it runs " + args[0].text, true}}
	}
	return u
}

// unwrapParallel handles GNU parallel: like xargs, the command gets its
// arguments when it runs; without a command, it runs the lines it reads
// as commands.
func unwrapParallel(_ *Command, args []Word) unwrapped {
	i := 1
	for i < len(args) && args[i].literal && strings.HasPrefix(args[i].text, "-") {
		i++
	}
	if i >= len(args) || (args[i].literal && (args[i].text == ":::" || args[i].text == "::::")) {
		return unwrapped{self: true, problem: &Problem{RuleUnparseable, "parallel runs the commands it reads, which cannot be judged", true}}
	}
	u := wrap(args, i, "ignored")
	u.problem = &Problem{ruleDynamicArgs, "parallel gives the command arguments when it runs", true}
	u.dynArgs = true
	return u
}

// unwrapSSH handles ssh HOST COMMAND...: the remote shell runs the words
// joined as a command line (on this machine when the host is this one), so
// they are judged as one.
func unwrapSSH(_ *Command, args []Word) unwrapped {
	next, _, unknown := optSpec{valued: "BbcDEeFIiJLlmOopQRSWw", flags: "46AaCfGgKkMNnqsTtVvXxYy"}.parse(args, 1)
	if next+1 >= len(args) {
		return unwrapped{self: true}
	}
	s := textWord("")
	var parts []string
	for _, w := range args[next+1:] {
		if !w.literal {
			s.literal = false
		}
		parts = append(parts, w.text)
	}
	s.text = strings.Join(parts, " ")
	u := unwrapped{own: args[1 : next+1 : next+1], script: &s, display: layerDisplay(args[:next+1])}
	if unknown != "" {
		u.problem = &Problem{ruleWrapperOpt, "ssh has an option toold does not know (" + unknown + ")", false}
	}
	return u
}

func unwrapSetsid(_ *Command, args []Word) unwrapped {
	next, _, unknown := optSpec{flags: "cfw", longFlags: []string{"ctty", "fork", "wait", "help", "version"}}.parse(args, 1)
	return wrap(args, next, unknown)
}

func unwrapChrt(_ *Command, args []Word) unwrapped {
	next, opts, unknown := optSpec{valued: "TPD", flags: "abdfiormRvep", long: []string{"sched-runtime", "sched-period", "sched-deadline"},
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
	next, opts, unknown := optSpec{flags: "acp", longFlags: []string{"all-tasks", "cpu-list", "pid", "help", "version"}}.parse(args, 1)
	if hasOpt(opts, "-p", "--pid") {
		return unwrapped{self: true}
	}
	if next < len(args) {
		next++ // the mask
	}
	return wrap(args, next, unknown)
}

func unwrapWatch(_ *Command, args []Word) unwrapped {
	next, opts, unknown := optSpec{valued: "nq", flags: "bcdegprtwx", long: []string{"interval", "equexit", "shotsdir", "differences"},
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
		if !w.literal {
			s.literal = false
		}
		parts = append(parts, w.text)
	}
	s.text = strings.Join(parts, " ")
	u := unwrapped{own: args[1:next:next], script: &s, display: "watch"}
	if unknown != "" {
		u.problem = &Problem{ruleWrapperOpt, "watch has an option toold does not know (" + unknown + ")", false}
	}
	return u
}

func unwrapFlock(_ *Command, args []Word) unwrapped {
	next, opts, unknown := optSpec{valued: "wEc", flags: "sexunoFv", long: []string{"timeout", "conflict-exit-code", "command"},
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
			if args[i].text == cmds[0] {
				w = args[i]
			}
		}
		return unwrapped{own: own, script: &w, display: "flock -c"}
	}
	rest := next + 1
	for rest < len(args) && args[rest].literal && strings.HasPrefix(args[rest].text, "-") {
		// Options may also follow the lock file.
		var more []opt
		rest, more, _ = optSpec{valued: "wEc", flags: "sexunoFv"}.parse(args, rest)
		if cmds := optValues(more, "-c", "--command"); len(cmds) > 0 {
			w := textWord(cmds[0])
			return unwrapped{own: own, script: &w, display: "flock -c"}
		}
	}
	u := unwrapped{own: own, display: layerDisplay(args[:next+1])}
	if rest >= len(args) {
		return unwrapped{self: true}
	}
	u.inner = args[rest:]
	if unknown != "" {
		u.problem = &Problem{ruleWrapperOpt, "flock has an option toold does not know (" + unknown + ")", false}
	}
	return u
}

var xargsSpec = optSpec{valued: "adEILnPs", flags: "0prtxeil", long: []string{"arg-file", "delimiter", "eof", "replace", "max-lines", "max-args", "max-procs", "max-chars", "process-slot-var"},
	longFlags: []string{"null", "interactive", "no-run-if-empty", "verbose", "exit", "open-tty", "show-limits", "help", "version"}}

func unwrapXargs(_ *Command, args []Word) unwrapped {
	next, opts, unknown := xargsSpec.parse(args, 1)
	u := wrap(args, next, unknown)
	u.dynArgs = true
	u.own = append(u.own, valueWords(optValues(opts, "-a", "--arg-file"))...)
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
		if !w.literal {
			s.literal = false
		}
		parts = append(parts, w.text)
	}
	s.text = strings.Join(parts, " ")
	return unwrapped{script: &s, display: "eval"}
}

// unwrapTrap parses trap's action as shell code.
func unwrapTrap(_ *Command, args []Word) unwrapped {
	next, opts, _ := optSpec{flags: "lpP"}.parse(args, 1)
	if len(opts) > 0 || next >= len(args)-1 {
		return unwrapped{self: true}
	}
	w := args[next]
	if w.literal && (w.text == "-" || w.text == "") {
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
		if !a.literal {
			break
		}
		t := a.text
		if t == "--" || t == "-" {
			i++
			break
		}
		if strings.HasPrefix(t, "--") {
			i++
			if t == "--rcfile" || t == "--init-file" || strings.HasPrefix(t, "--rcfile=") || strings.HasPrefix(t, "--init-file=") {
				return unwrapped{self: true, problem: &Problem{RuleUnparseable, args[0].text + " " + t + " runs the commands of a file, which cannot be judged", true}}
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
				if opt := args[i].text; !args[i].literal || !slices.Contains(safeShopt, opt) {
					return unwrapped{self: true, problem: &Problem{RuleUnparseable, args[0].text + " " + t + " " + args[i].src + " changes how the shell reads the commands it runs, which the judge cannot follow", true}}
				}
				i++
			}
			if strings.ContainsAny(letters, "kaBfPTHh") && t[0] == '-' && !cflag {
				// The shell's own set options, as with set.
				for _, ch := range letters {
					if !strings.ContainsRune(safeSetFlags+"cilrsv", ch) {
						return unwrapped{self: true, problem: &Problem{RuleUnparseable, fmt.Sprintf("%s -%c changes how the shell reads the commands it runs, which the judge cannot follow", args[0].text, ch), true}}
					}
				}
			}
			continue
		}
		break
	}
	name := path.Base(args[0].text)
	if cflag {
		if i >= len(args) {
			if c.dynArgs {
				return unwrapped{self: true, problem: &Problem{RuleUnparseable, name + " -c runs a string given when it runs", true}}
			}
			return unwrapped{self: true}
		}
		if c.dynArgs {
			// xargs sh -c '...{}...': the string or its arguments come
			// when it runs.
			return unwrapped{self: true, problem: &Problem{RuleUnparseable, name + " -c runs with arguments given when it runs (" + strings.Join(c.wrappers, ", ") + ")", true}}
		}
		s := args[i]
		return unwrapped{own: args[1:i], script: &s, display: name + " -c"}
	}
	if i < len(args) && args[i].literal && StdinFile(args[i].text) {
		// bash /dev/stdin: the script is stdin, as with no file.
		i = len(args)
	}
	if i < len(args) {
		// A script file: judged as the shell running it; one named only
		// when it runs (bash <(...), bash $F) cannot be judged.
		if !args[i].literal {
			return unwrapped{self: true, problem: &Problem{RuleUnparseable, name + " runs a script named by " + args[i].src + ", which is only known when it runs", true}}
		}
		return unwrapped{self: true}
	}
	for _, r := range c.redirects {
		if r.hasBody {
			b := r.body
			return unwrapped{own: args[1:i], script: &b, display: name + " " + r.op}
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
		if !args[i].literal || !slices.Contains(findExec, args[i].text) {
			continue
		}
		j := i + 1
		for j < len(args) && !(args[j].literal && (args[j].text == ";" || args[j].text == "+")) {
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
		t := args[i].text
		if !args[i].literal || !(t == "-x" || t == "-X" || t == "--exec" || t == "--exec-batch") {
			continue
		}
		j := i + 1
		for j < len(args) && !(args[j].literal && args[j].text == ";") {
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
	for i < len(args) && args[i].literal && strings.HasPrefix(args[i].text, "-") {
		t := args[i].text
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
			case name == "-c" && safeGitConfig(gitConfigKey(args[i].text, hasVal)):
			case name == "-c" || name == "--config-env" || name == "--exec-path":
				prob = &Problem{ruleExecOption, "git " + name + " changes git's configuration, which can make it run other programs (core.pager, alias.*, core.sshCommand, core.fsmonitor)", true}
			}
		default:
			if strings.HasPrefix(t, "-c") && len(t) > 2 && !safeGitConfig(gitConfigKey(t[2:], true)) {
				prob = &Problem{ruleExecOption, "git -c changes git's configuration, which can make it run other programs", true}
			}
			own = append(own, args[i])
		}
		i++
	}
	if i == 1 {
		return unwrapped{self: true}
	}
	return unwrapped{own: own, cwd: cwd, inner: append([]Word{args[0]}, args[i:]...), display: layerDisplay(args[:i]), problem: prob}
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
	next, opts, unknown := optSpec{valued: "abeEIopPsSuXO", flags: "cCdDfFhikqrtTvVwxyzZn", long: []string{"output", "trace", "signal", "status", "user", "attach", "string-limit"}}.parse(args, 1)
	if hasOpt(opts, "-p", "--attach") {
		return unwrapped{self: true}
	}
	u := wrap(args, next, "")
	_ = unknown
	u.own = append(u.own, valueWords(optValues(opts, "-o", "--output"))...)
	return u
}

func unwrapValgrind(_ *Command, args []Word) unwrapped {
	i := 1
	for i < len(args) && args[i].literal && strings.HasPrefix(args[i].text, "-") {
		i++
	}
	return wrap(args, i, "")
}

// unwrapScript handles script -c CMD [FILE]: it runs CMD with sh -c and
// writes FILE.
func unwrapScript(_ *Command, args []Word) unwrapped {
	next, opts, _ := optSpec{valued: "cEIOBTm", flags: "aefqh", long: []string{"command", "echo", "log-in", "log-out", "log-io", "log-timing", "logging-format", "output-limit"},
		longFlags: []string{"append", "return", "flush", "force", "quiet", "help", "version"}}.parse(args, 1)
	cmds := optValues(opts, "-c", "--command")
	own := append([]Word(nil), args[next:]...)
	if len(cmds) == 0 {
		return unwrapped{self: true}
	}
	w := textWord(cmds[0])
	for i := 1; i < len(args); i++ {
		if args[i].text == cmds[0] {
			w = args[i]
		}
	}
	return unwrapped{own: own, script: &w, display: "script -c"}
}

// unwrapSubcommand handles "uv run CMD", "bundle exec CMD" and the like.
func unwrapSubcommand(subs ...string) wrapperFunc {
	return func(_ *Command, args []Word) unwrapped {
		if len(args) < 2 || !args[1].literal || !slices.Contains(subs, args[1].text) {
			return unwrapped{self: true}
		}
		i := 2
		for i < len(args) && args[i].literal && strings.HasPrefix(args[i].text, "-") {
			if args[i].text == "--" {
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
			u.problem = &Problem{ruleWrapperOpt, args[0].text + " " + args[1].text + " has options, so the command it runs is not certain", false}
		}
		return u
	}
}

func unwrapDirenv(_ *Command, args []Word) unwrapped {
	if len(args) < 4 || !args[1].literal || args[1].text != "exec" {
		return unwrapped{self: true}
	}
	return unwrapped{own: args[2:3], cwd: args[2:3], inner: args[3:], display: layerDisplay(args[:3])}
}

func unwrapNixShell(_ *Command, args []Word) unwrapped {
	for i := 1; i+1 < len(args); i++ {
		if args[i].literal && (args[i].text == "--run" || args[i].text == "--command") {
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
		args := c.args()
		if len(args) == 0 {
			break
		}
		w0 := args[0]
		if !w0.literal || w0.glob || w0.text == "" {
			c.addProblem(Problem{ruleDynamicName, fmt.Sprintf("the command name %s is only known when it runs", w0.src), true})
			break
		}
		fn := wrappers[path.Base(w0.text)]
		if fn == nil {
			break
		}
		u := fn(c, args)
		if u.problem != nil {
			c.addProblem(*u.problem)
		}
		if u.self {
			break
		}
		c.own = append(c.own, u.own...)
		c.cwds = append(c.cwds, u.cwd...)
		c.privileged = c.privileged || u.privileged
		c.dynArgs = c.dynArgs || u.dynArgs
		for _, a := range u.env {
			c.env = append(c.env, a)
			checkEnv(c, a)
		}
		if u.script != nil {
			c.wrapperOnly = true
			c.script = u.display
			if !u.script.literal {
				c.addProblem(Problem{RuleUnparseable, fmt.Sprintf("the string that %s runs is only known when it runs", u.display), true})
				break
			}
			out = append(out, p.parse(u.script.text, depth+1, c)...)
			break
		}
		for _, x := range u.extra {
			e := &Command{
				layers:     [][]Word{x},
				src:        layerDisplay(x),
				wrappers:   append(append([]string(nil), c.wrappers...), u.extraDisplay),
				privileged: c.privileged,
				env:        c.env,
				cwds:       c.cwds,
			}
			for _, w := range x {
				if w.literal && strings.Contains(w.text, "{}") {
					e.dynArgs = true
				}
			}
			out = append(out, p.unwrap(e, depth)...)
		}
		if u.inner == nil {
			break
		}
		c.wrappers = append(c.wrappers, u.display)
		c.layers = append(c.layers, u.inner)
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
	opts := scriptOptions[c.name()]
	if len(opts) == 0 || c.wrapperOnly {
		return nil
	}
	var out []*Command
	args := c.args()
	for i := 1; i < len(args); i++ {
		for _, o := range opts {
			var val Word
			switch {
			case args[i].literal && args[i].text == o && i+1 < len(args):
				val = args[i+1]
			case args[i].literal && strings.HasPrefix(args[i].text, o) && len(args[i].text) > len(o):
				val = textWord(args[i].text[len(o):])
			default:
				continue
			}
			display := c.name() + " " + o
			if o == "-W" {
				// A word list: expanded as the words of a command are.
				val.text = "echo " + val.text
			}
			if !val.literal {
				c.addProblem(Problem{RuleUnparseable, "the code that " + display + " runs is only known when it runs", true})
				continue
			}
			holder := &Command{wrappers: c.wrappers, script: display, privileged: c.privileged, env: c.env, cwds: c.cwds}
			out = append(out, p.parse(val.text, depth+1, holder)...)
			for _, pr := range holder.problems {
				c.addProblem(pr)
			}
		}
	}
	return out
}
