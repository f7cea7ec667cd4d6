package shellread

import (
	"path"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Text piped or fed into a shell or an interpreter is the program it runs:
// "echo 'rm -rf /' | sh" runs rm -rf /. A shell whose program comes from a
// pipe or a process substitution is judged on that text when it is written
// out in the line (echo or printf of literal words); otherwise, like an
// interpreter reading its program from a pipe, it asks in every mode.

// ShellNames are the shells toold unwraps (bash -c STRING, here-documents).
var ShellNames = []string{"sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "fish", "rbash", "yash", "posh", "csh", "tcsh", "pdksh", "oksh", "loksh", "nu", "xonsh", "elvish"}

// interpreterNames are programs that run a program read from stdin when
// given none, including tools with a shell escape in their input
// (sqlite3 .shell, ed !, psql \!, dc !).
var interpreterNames = []string{
	"python", "python2", "python3", "pypy", "pypy3", "perl", "ruby", "irb", "node", "nodejs", "deno", "bun", "php",
	"lua", "luajit", "tclsh", "wish", "expect", "Rscript", "R", "julia", "pwsh", "powershell", "osascript", "jshell",
	"groovy", "scala", "ghci", "guile", "racket", "sbcl", "clisp", "ocaml", "swift", "erl", "elixir", "iex",
	"sqlite3", "psql", "mysql", "mariadb", "ed", "ex", "vi", "vim", "nvim", "dc", "gdb", "lldb", "awk", "gawk",
	"mawk", "nawk", "busybox", "ssh", "at", "batch", "crontab", "nsenter", "unshare", "sudo", "su", "doas",
	"script", "m4", "parallel", "env", "xargs", "expect", "tmux", "screen", "sh-agent", "make", "gmake",
}

// IsInterpreter reports a program that reads a program from stdin.
func IsInterpreter(name string) bool {
	if slices.Contains(interpreterNames, name) {
		return true
	}
	for _, p := range []string{"python", "pypy", "perl", "ruby", "php", "lua", "node", "tclsh", "wish"} {
		if strings.HasPrefix(name, p) && isVersion(name[len(p):]) {
			return true
		}
	}
	return false
}

func isVersion(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if !(r >= '0' && r <= '9' || r == '.') {
			return false
		}
	}
	return true
}

// codeFlags are options by which an interpreter takes its program on the
// command line, so it does not read one from stdin.
var codeFlags = []string{"-c", "-e", "-E", "-m", "-r", "-x", "--eval", "--command", "--print", "-p", "--exec", "-f", "--file", "-cmd", "-s"}

// readsProgram reports whether c is a shell or interpreter that takes its
// program from stdin: no script file, no -c STRING (a shell's -s reads
// stdin even with arguments after it).
func readsProgram(c *Command) bool {
	if c.WrapperOnly {
		return false
	}
	args := c.Args()
	if len(args) == 0 || !args[0].Literal {
		return false
	}
	name := path.Base(args[0].Text)
	shell := slices.Contains(ShellNames, name)
	if !shell && !IsInterpreter(name) {
		return false
	}
	switch name {
	case "script":
		// script runs a shell on the commands it reads, unless -c names one.
		return !slices.ContainsFunc(args[1:], func(w Word) bool {
			return !w.Literal || w.Text == "-c" || strings.HasPrefix(w.Text, "--command") || (strings.HasPrefix(w.Text, "-") && !strings.HasPrefix(w.Text, "--") && strings.ContainsRune(w.Text, 'c'))
		})
	case "at", "batch":
		// They read the commands to run from stdin unless -f names a file.
		return !slices.ContainsFunc(args[1:], func(w Word) bool { return !w.Literal || strings.HasPrefix(w.Text, "-f") })
	case "ssh":
		// ssh HOST runs what it reads from stdin on HOST; ssh HOST CMD
		// runs CMD.
		next, _, _ := optSpec{valued: "BbcDEeFIiJLlmOopQRSWw", Flags: "46AaCfGgKkMNnqsTtVvXxYy"}.parse(args, 1)
		return len(args)-next <= 1
	}
	for _, w := range args[1:] {
		t := w.Text
		if !w.Literal {
			return false
		}
		switch {
		case t == "-" || StdinFile(t):
			return true
		case shell && len(t) > 1 && t[0] == '-' && t[1] != '-' && strings.ContainsRune(t[1:], 's'):
			return true
		case shell && len(t) > 1 && t[0] == '-' && t[1] != '-' && strings.ContainsRune(t[1:], 'c'):
			return false
		case !shell && slices.Contains(codeFlags, t), !shell && strings.HasPrefix(t, "-") && len(t) > 1 && slices.Contains(codeFlags, t[:2]):
			return false
		case strings.HasPrefix(t, "-") || strings.HasPrefix(t, "+"):
		default:
			return false // a script file or other operand
		}
	}
	return true
}

// writtenText returns the text that the statement st writes to its stdout
// when the line spells it out: echo or printf of literal words, or cat of a
// literal here-document.
func (b *blockParser) writtenText(st *syntax.Stmt) (string, bool) {
	cmds := b.byStmt[st]
	if len(cmds) != 1 || len(cmds[0].Layers) != 1 {
		return "", false
	}
	c := cmds[0]
	args := c.Args()
	for _, w := range args {
		if !w.Literal || w.Glob {
			return "", false
		}
	}
	switch c.Name() {
	case "echo":
		i, nl := 1, true
		for ; i < len(args); i++ {
			t := args[i].Text
			if t == "-n" {
				nl = false
				continue
			}
			if t == "-E" {
				continue
			}
			if t == "-e" || strings.HasPrefix(t, "-") && len(t) > 1 && strings.Trim(t[1:], "neE") == "" {
				return "", false
			}
			break
		}
		var parts []string
		for _, w := range args[i:] {
			parts = append(parts, w.Text)
		}
		s := strings.Join(parts, " ")
		if nl {
			s += "\n"
		}
		return s, true
	case "printf":
		if len(args) != 2 || strings.ContainsAny(args[1].Text, `%\`) {
			return "", false
		}
		return args[1].Text, true
	case "cat":
		if len(args) != 1 {
			return "", false
		}
		for _, r := range c.Redirects {
			if r.hasBody && r.body.Literal {
				return r.body.Text, true
			}
		}
	}
	return "", false
}

// fedPrograms judges what shells and interpreters of the line read as their
// program from a pipe or a process substitution.
func (b *blockParser) fedPrograms(f *syntax.File) {
	feed := func(readers syntax.Node, writer []*syntax.Stmt) {
		text, known := "", len(writer) == 1
		if known {
			text, known = b.writtenText(writer[0])
		}
		syntax.Walk(readers, func(m syntax.Node) bool {
			st, ok := m.(*syntax.Stmt)
			if !ok {
				return true
			}
			for _, c := range b.byStmt[st] {
				if !readsProgram(c) {
					continue
				}
				name := c.Name()
				switch {
				case known && slices.Contains(ShellNames, name):
					c.script = name + " < pipe"
					b.order = append(b.order, b.p.parse(text, b.depth+1, c)...)
				case !known:
					c.AddProblem(Problem{Rule: RuleUnparseable, Reason: name + " runs a program it reads from a pipe, which cannot be judged", Hard: true})
				default:
					c.AddProblem(Problem{Rule: RuleUnparseable, Reason: name + " runs the program piped into it, which toold cannot judge (it judges shell, not " + name + ")", Hard: true})
				}
			}
			return true
		})
	}
	syntax.Walk(f, func(n syntax.Node) bool {
		switch x := n.(type) {
		case *syntax.BinaryCmd:
			if x.Op == syntax.Pipe || x.Op == syntax.PipeAll {
				feed(x.Y, []*syntax.Stmt{x.X})
			}
		case *syntax.Stmt:
			for _, ps := range stdinProcSubsts(x) {
				feed(x, ps.Stmts)
			}
		}
		return true
	})
}

// stdinProcSubsts returns the process substitutions a statement reads on
// stdin (< <(cmd)).
func stdinProcSubsts(st *syntax.Stmt) []*syntax.ProcSubst {
	var out []*syntax.ProcSubst
	for _, r := range st.Redirs {
		if r.Op != syntax.RdrIn || r.Word == nil {
			continue
		}
		for _, part := range r.Word.Parts {
			if ps, ok := part.(*syntax.ProcSubst); ok && ps.Op == syntax.CmdIn {
				out = append(out, ps)
			}
		}
	}
	return out
}
