package shellread

import (
	"fmt"
	"os/user"
	"path"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
)

// How a command line is judged.
//
// A command line (run_command's command, or text typed into a terminal
// session) is parsed with mvdan.cc/sh as bash. Every simple command found
// anywhere in it — through &&, ||, ;, newlines, pipes, &, subshells, { }
// blocks, if/while/for/case, function bodies, $(...), backticks, <(...),
// >(...), parameter expansions such as ${x:-$(cmd)}, arithmetic and [[ ]] —
// becomes one shellCommand. Each is then unwrapped: wrappers that run
// another command (sudo, env, timeout, xargs, bash -c "...", eval, find
// -exec, ...) are peeled off layer by layer, so that the command that
// actually runs is what rules see. A string that a wrapper runs as shell
// code (bash -c, eval, watch, su -c, trap) is parsed recursively.
//
// What cannot be judged is recorded as a problem on the command instead of
// being guessed: a line that does not parse, a command name that is only
// known at run time ($CMD, $(...), a glob), eval of a non-literal string,
// source, a redirect to a file whose name is computed. Hard problems ask in
// every mode; soft problems (arguments computed at run time, options that
// make a program run other programs, assignments to variables such as
// LD_PRELOAD or PATH) only stop a rule from allowing the command.

// Limits of the parser.
const (
	// maxLineBytes bounds a command line that is judged; a longer one asks.
	maxLineBytes = 256 << 10
	// maxParseDepth bounds strings parsed within strings (bash -c "bash -c
	// '...'"); deeper nesting asks.
	maxParseDepth = 8
	// maxNodeDepth bounds the syntax tree's nesting.
	maxNodeDepth = 512
	// maxWords bounds the words that brace expansion may produce.
	maxWords = 1024
	// maxCommands bounds the simple commands of one line.
	maxCommands = 512
)

// Word is one Word of a command after brace expansion and quote removal.
type Word struct {
	// Text is the value with quotes removed, a leading ~ and $HOME
	// expanded; in a word that is not literal, each expansion stays as
	// written.
	Text string
	// Literal is false when the word has a part only known at run time: a
	// parameter expansion, command or process substitution, arithmetic.
	Literal bool
	// Glob reports unquoted Glob characters (* ? [ or an extended Glob).
	Glob bool
	// Prefix is the literal text before the first run-time part of a word
	// that is not literal; Suffix the literal text after its last one.
	Prefix, Suffix string
	// Src is the word as written.
	Src string
	// subst reports a command or process substitution in the word.
	subst bool
	// Extglob reports an extended glob (@(...), ?(...), +(...), *(...),
	// !(...)), which the judge cannot expand.
	Extglob bool
}

func (w Word) String() string {
	if w.Literal {
		return w.Text
	}
	return w.Src
}

// Problem is why a command cannot be judged or cannot be allowed by a rule.
type Problem struct {
	Rule   string
	Reason string
	// Hard problems ask in every mode and no rule lifts them; soft ones
	// only keep an allow rule from allowing.
	Hard bool
	// Lasting problems leave something behind that runs later outside
	// any sandbox the command runs in: git configuration or hooks that a
	// person's own git (an editor's, a shell prompt's) runs in the
	// repository. The policy engine asks for them even where a kernel
	// sandbox holds the command's own effects.
	Lasting bool
}

// Redirect is one redirection of a command.
type Redirect struct {
	op     string
	Target Word
	// Read and Write say what the redirect does to the file target; both
	// are false for a duplication of a descriptor (2>&1) or a here-doc.
	Read, Write bool
	// body is the here-document or here-string, for a shell that reads its
	// script from stdin.
	body    Word
	hasBody bool
	Src     string
}

// Assignment is NAME=VALUE before a command, through env, or alone.
type Assignment struct {
	Name  string
	Value Word
	Src   string
}

// Command is one simple command of a line, after unwrapping.
type Command struct {
	// Layers are the command's words, outermost wrapper first; the last
	// layer is the command that runs. A layer of a wrapper that runs a
	// shell string (bash -c) is the last one and wrapperOnly is set: the
	// commands of the string are commands of their own.
	Layers      [][]Word
	WrapperOnly bool
	// script describes the wrapper that runs a shell string ("bash -c").
	script string
	// Wrappers describe the outer layers for people ("sudo -u bob").
	Wrappers []string
	// Own are the option words wrappers consumed (sudo -D DIR, time -o
	// FILE): checked as paths.
	Own       []Word
	Redirects []Redirect
	Env       []Assignment
	// Piped reports that stdin is a pipe; pipedFrom names the commands
	// (every layer) that write to it.
	Piped     bool
	PipedFrom []string
	// Privileged reports a privilege-raising wrapper (sudo, doas, su,
	// pkexec, run0, chroot).
	Privileged bool
	// DynArgs reports arguments added at run time (xargs, find -exec {}).
	DynArgs  bool
	Problems []Problem
	// Cwds are directories the command changes to for itself (git -C,
	// env -C, sudo -D): relative paths are also resolved from them.
	Cwds []Word
	Src  string
}

// Args returns the words of the command that runs.
func (c *Command) Args() []Word { return c.Layers[len(c.Layers)-1] }

// Name returns the base Name of the command that runs, or "".
func (c *Command) Name() string {
	a := c.Args()
	if len(a) == 0 || !a[0].Literal {
		return ""
	}
	return path.Base(a[0].Text)
}

func (c *Command) AddProblem(p Problem) {
	for _, q := range c.Problems {
		if q == p {
			return
		}
	}
	c.Problems = append(c.Problems, p)
}

func (c *Command) HardProblem() (Problem, bool) {
	for _, p := range c.Problems {
		if p.Hard {
			return p, true
		}
	}
	return Problem{}, false
}

func (c *Command) SoftProblem() (Problem, bool) {
	for _, p := range c.Problems {
		if !p.Hard {
			return p, true
		}
	}
	return Problem{}, false
}

// ParsedLine is a command line taken apart.
type ParsedLine struct {
	Commands []*Command
	// Problems of the line itself (does not parse, too long).
	Problems []Problem
}

// Clone returns a copy of pl that a judge may change as it does (AddProblem
// on its commands) without changing pl: the line's and each command's
// Problems are its own; everything else (words, layers, redirects) is
// shared and must not be written. ParseLine's result is never changed after
// it returns, so a parsed line can be kept and cloned for each judgement.
func (pl *ParsedLine) Clone() *ParsedLine {
	out := &ParsedLine{Problems: slices.Clip(pl.Problems), Commands: make([]*Command, len(pl.Commands))}
	cs := make([]Command, len(pl.Commands))
	for i, c := range pl.Commands {
		cs[i] = *c
		// Clipped, an append to the copy's Problems allocates: it never
		// writes into pl's array.
		cs[i].Problems = slices.Clip(c.Problems)
		out.Commands[i] = &cs[i]
	}
	return out
}

// Rule names of the checks on command lines.
const (
	RuleUnparseable  = "builtin:unparseable-command"
	ruleDynamicName  = "builtin:dynamic-command"
	ruleDynamicArgs  = "builtin:dynamic-arguments"
	RuleDynamicPath  = "builtin:dynamic-redirect"
	ruleExecOption   = "builtin:exec-option"
	RuleDangerousEnv = "builtin:dangerous-env"
	RulePrivileged   = "builtin:privileged"
	// RuleGitConfig names git configuration (or templated hooks) that
	// make git run programs later.
	RuleGitConfig  = "builtin:git-config"
	ruleWrapperOpt = "builtin:unknown-wrapper-option"
	RuleCd         = "builtin:change-directory"
)

// lineParser parses one command line and the strings inside it.
type lineParser struct {
	home     string
	Commands []*Command
	Problems []Problem
	// interactive: the line is typed into an interactive shell (a
	// terminal session), where history expansion, aliases and completion
	// apply.
	interactive bool
}

// addHard records a problem of the whole line that asks in every mode.
func (p *lineParser) addHard(pr Problem) {
	for _, q := range p.Problems {
		if q == pr {
			return
		}
	}
	p.Problems = append(p.Problems, pr)
}

// ParseCommandLine takes a command line apart; home expands ~.
func ParseCommandLine(line, home string) *ParsedLine {
	return ParseLine(line, home, false)
}

// ParseLine takes a command line apart; home expands ~; interactive says
// the line is typed into an interactive shell.
func ParseLine(line, home string, interactive bool) *ParsedLine {
	p := &lineParser{home: home, interactive: interactive}
	if interactive {
		p.interactiveChecks(line)
	}
	cmds := p.parse(line, 0, nil)
	if len(cmds) > maxCommands {
		p.Problems = append(p.Problems, Problem{Rule: RuleUnparseable, Reason: fmt.Sprintf("the command line has more than %d commands", maxCommands), Hard: true})
	}
	return &ParsedLine{Commands: cmds, Problems: p.Problems}
}

// Keys typed into a terminal that the judge follows: ^C (interrupt) and ^U
// (discard the line) throw away what was typed before them on the line —
// the terminal session's record of the typed line does the same — and ^D
// (end of input, or delete), ^Z (suspend) and ^\ (quit) send a signal or
// end input without adding to the line. None of them runs anything.
const (
	keyInterrupt = 0x03
	keyEOF       = 0x04
	keyDiscard   = 0x15
	keySuspend   = 0x1a
	keyQuit      = 0x1c
)

// withoutLineKeys returns typed input as the shell's line editor leaves it
// after the keys above.
func withoutLineKeys(s string) string {
	var b strings.Builder
	lineStart := 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case keyInterrupt, keyDiscard:
			out := b.String()[:lineStart]
			b.Reset()
			b.WriteString(out)
		case keyEOF, keySuspend, keyQuit:
		case '\n':
			b.WriteByte(c)
			lineStart = b.Len()
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// SignalKeysOnly reports whether typed input, after the line keys above,
// adds nothing to the terminal's line: it only interrupts, suspends or
// ends input of the program in the foreground, or discards the line (a
// lone ^C). keys names the keys it sends ("^C").
func SignalKeysOnly(s string) (keys string, ok bool) {
	if strings.TrimSpace(withoutLineKeys(strings.ReplaceAll(s, "\r", "\n"))) != "" || strings.ContainsAny(s, "\r\n") {
		return "", false
	}
	var names []string
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case keyInterrupt, keyEOF, keyDiscard, keySuspend, keyQuit:
			if n := "^" + string(rune(c+'@')); !slices.Contains(names, n) {
				names = append(names, n)
			}
		}
	}
	return strings.Join(names, " "), len(names) > 0
}

// controlChars reports characters a terminal acts on (escape sequences,
// ^C, ^U, ^R history search) that the line cannot be judged with.
func controlChars(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < 0x20 && c != '\n' && c != '\t') || c == 0x7f {
			return true
		}
	}
	return false
}

// parse parses src (the line, or a string inside it at depth > 0) and
// returns its commands; parent, when set, is the wrapper whose string it
// is, and gets the problems of a string that cannot be judged.
func (p *lineParser) parse(src string, depth int, parent *Command) []*Command {
	fail := func(reason string) []*Command {
		pr := Problem{Rule: RuleUnparseable, Reason: reason, Hard: true}
		if parent != nil {
			parent.AddProblem(pr)
			return nil
		}
		p.Problems = append(p.Problems, pr)
		return nil
	}
	if depth > maxParseDepth {
		return fail(fmt.Sprintf("shell strings are nested more than %d deep", maxParseDepth))
	}
	if len(src) > maxLineBytes {
		return fail(fmt.Sprintf("the command is longer than %d bytes", maxLineBytes))
	}
	// A terminal ends a line at a carriage return, so treat one as a
	// newline: both halves are judged.
	src = strings.ReplaceAll(src, "\r\n", "\n")
	src = strings.ReplaceAll(src, "\r", "\n")
	if strings.IndexByte(src, 0) >= 0 {
		return fail("it contains a NUL byte")
	}
	if p.interactive && depth == 0 {
		src = withoutLineKeys(src)
	}
	if controlChars(src) {
		return fail("it contains control characters (terminal keys such as escape sequences or ^C) whose effect cannot be judged")
	}
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(src), "")
	if err != nil {
		return fail(fmt.Sprintf("it cannot be parsed as a shell command (%v)", err))
	}
	// Nesting depth.
	d, deepest := 0, 0
	syntax.Walk(f, func(n syntax.Node) bool {
		if n == nil {
			d--
			return true
		}
		d++
		deepest = max(deepest, d)
		return d <= maxNodeDepth
	})
	if deepest > maxNodeDepth {
		return fail("it is nested too deeply to judge")
	}

	bp := &blockParser{p: p, Src: src, depth: depth, byStmt: map[*syntax.Stmt][]*Command{}}
	bp.homeChanges(f)
	bp.subscripts(f)
	bp.evaluations(f)
	bp.collect(f)
	bp.pipes(f)
	bp.fedPrograms(f)
	bp.functions(f)
	if parent != nil {
		for _, c := range bp.order {
			inherit(c, parent)
		}
	}
	return bp.order
}

// homeChanges asks when the line assigns a variable in a way other than
// NAME=VALUE (which checkEnv sees) and the variable makes programs run code
// or moves ~ (HOME, PATH, PS4, PROMPT_COMMAND, BASH_CMDS, ...): read,
// printf -v, mapfile, getopts, for NAME in, ${NAME:=...}, (( NAME=... )),
// unset, export/declare of a name. A nameref (declare -n) or a name only
// known at run time can assign any variable, so it asks too. Bash also
// evaluates array subscripts in names (test -v 'a[$(cmd)]', printf -v
// 'a[$(cmd)]'): a literal name with a substitution in it asks.
func (b *blockParser) homeChanges(f *syntax.File) {
	hard := func(how string) {
		b.p.addHard(Problem{Rule: RuleDangerousEnv, Reason: how + ", which the judge cannot follow", Hard: true})
	}
	name := func(lit, how string) {
		n := lit
		if i := strings.IndexAny(n, "=[+"); i >= 0 {
			n = n[:i]
		}
		if strings.ContainsAny(lit, "$`") {
			hard(how + " names " + lit + ": bash evaluates what is in it")
			return
		}
		if isName(n) && CodeEnv(n) {
			hard(how + " assigns " + n)
		}
	}
	syntax.Walk(f, func(n syntax.Node) bool {
		switch x := n.(type) {
		case *syntax.WordIter:
			if x.Name != nil {
				name(x.Name.Value, "for "+x.Name.Value+" in")
			}
		case *syntax.ParamExp:
			if x.Param != nil && x.Exp != nil && (x.Exp.Op == syntax.AssignUnset || x.Exp.Op == syntax.AssignUnsetOrNull) {
				name(x.Param.Value, "${"+x.Param.Value+":=...}")
			}
			if x.Excl && x.Param != nil {
				// ${!x}: indirect expansion names a variable at run time.
				hard("${!" + x.Param.Value + "} expands a variable named only when it runs")
			}
		case *syntax.BinaryArithm:
			switch x.Op {
			case syntax.Assgn, syntax.AddAssgn, syntax.SubAssgn, syntax.MulAssgn, syntax.QuoAssgn, syntax.RemAssgn,
				syntax.AndAssgn, syntax.OrAssgn, syntax.XorAssgn, syntax.ShlAssgn, syntax.ShrAssgn:
				if w, ok := x.X.(*syntax.Word); ok {
					name(w.Lit(), "an arithmetic assignment")
				}
			}
		case *syntax.DeclClause:
			for _, a := range x.Args {
				if a.Naked && a.Value != nil {
					if l := a.Value.Lit(); strings.HasPrefix(l, "-") && strings.ContainsRune(l, 'n') {
						hard(x.Variant.Value + " -n makes a name refer to another variable")
					}
				}
			}
		case *syntax.CallExpr:
			if len(x.Args) < 2 {
				return true
			}
			cmd := x.Args[0].Lit()
			switch cmd {
			case "read", "unset", "printf", "getopts", "mapfile", "readarray", "let", "test", "[", "export", "readonly", "local", "declare", "typeset", "wait":
			default:
				return true
			}
			for i, w := range x.Args[1:] {
				lit := w.Lit()
				if lit == "" {
					// Quoted or computed: its value.
					ev := b.evalWord(w, false)
					if !ev.Literal {
						if cmd == "printf" && i > 0 && x.Args[i].Lit() == "-v" || cmd == "read" || cmd == "unset" || cmd == "mapfile" || cmd == "readarray" {
							hard(cmd + " assigns a variable named only when it runs (" + ev.Src + ")")
						}
						continue
					}
					lit = ev.Text
				}
				if strings.HasPrefix(lit, "-") {
					if (cmd == "declare" || cmd == "local" || cmd == "typeset") && strings.ContainsRune(lit, 'n') {
						hard(cmd + " -n makes a name refer to another variable")
					}
					continue
				}
				name(lit, cmd)
			}
		}
		return true
	})
}

// subscripts asks when the line evaluates text as arithmetic or as a
// variable name with a subscript and a literal of the line holds a command
// substitution: bash runs it ('a[$(cmd)]' in test -v, [[ -v ]], -eq, $((x)),
// (( ))). The judge sees such text as a plain string.
func (b *blockParser) subscripts(f *syntax.File) {
	subst := false
	arith := false
	syntax.Walk(f, func(n syntax.Node) bool {
		switch x := n.(type) {
		case *syntax.SglQuoted:
			subst = subst || strings.Contains(x.Value, "$(") || strings.Contains(x.Value, "`")
		case *syntax.Lit:
			subst = subst || strings.Contains(x.Value, "$(") || strings.Contains(x.Value, "`")
		case *syntax.DblQuoted:
			for _, p := range x.Parts {
				if l, ok := p.(*syntax.Lit); ok && (strings.Contains(l.Value, `\$(`) || strings.Contains(l.Value, "\\`")) {
					subst = true
				}
			}
		case *syntax.ArithmExp, *syntax.ArithmCmd, *syntax.LetClause:
			arith = true
		case *syntax.TestClause:
			arith = true
		case *syntax.CallExpr:
			if len(x.Args) > 0 {
				switch x.Args[0].Lit() {
				case "test", "[", "printf", "read", "declare", "local", "typeset", "export", "readonly", "unset", "let", "mapfile", "readarray", "getopts", "wait", "printf -v":
					arith = true
				}
			}
		}
		return true
	})
	if subst && arith {
		b.p.addHard(Problem{Rule: RuleUnparseable, Reason: "a string of the line holds a command substitution and the line evaluates text as arithmetic or a variable name, where bash would run it", Hard: true})
	}
}

// evaluations asks for what makes bash run a value as code that the line
// does not show: ${x@P} (prompt expansion runs the value's command
// substitutions), arithmetic on a variable whose value is not known to be a
// number (bash evaluates a value such as 'a[$(cmd)]' recursively:
// ${s:x}, ${b[x]}, b[x]=1, $((x)), (( )), let, for ((;;)), declare -i), and
// declare/export/local/readonly/typeset of a name computed at run time.
func (b *blockParser) evaluations(f *syntax.File) {
	hard := func(why string) {
		b.p.addHard(Problem{Rule: RuleUnparseable, Reason: why, Hard: true})
	}
	numeric := func(w *syntax.Word) bool {
		if w == nil {
			return false
		}
		l := w.Lit()
		if l == "" {
			return false
		}
		for i, r := range l {
			if !(r >= '0' && r <= '9' || i == 0 && r == '-') {
				return false
			}
		}
		return true
	}
	safe := map[string]bool{}
	unsafe := map[string]bool{}
	integerNames := map[string]bool{} // declared -i: what is assigned is evaluated
	var refs []string
	var arith func(syntax.ArithmExpr)
	arith = func(x syntax.ArithmExpr) {
		if x == nil {
			return
		}
		syntax.Walk(x, func(n syntax.Node) bool {
			switch y := n.(type) {
			case *syntax.BinaryArithm:
				switch y.Op {
				case syntax.Assgn, syntax.AddAssgn, syntax.SubAssgn, syntax.MulAssgn, syntax.QuoAssgn, syntax.RemAssgn,
					syntax.AndAssgn, syntax.OrAssgn, syntax.XorAssgn, syntax.ShlAssgn, syntax.ShrAssgn:
					if w, ok := y.X.(*syntax.Word); ok && isName(w.Lit()) {
						safe[w.Lit()] = true
					}
				}
			case *syntax.Word:
				if l := y.Lit(); isName(l) {
					refs = append(refs, l)
				}
			case *syntax.ParamExp:
				if y.Param != nil {
					refs = append(refs, y.Param.Value)
				}
			}
			return true
		})
	}
	syntax.Walk(f, func(n syntax.Node) bool {
		switch x := n.(type) {
		case *syntax.ParamExp:
			if x.Exp != nil && x.Exp.Op == syntax.OtherParamOps && x.Exp.Word != nil && strings.ContainsAny(x.Exp.Word.Lit(), "P") {
				hard("${" + paramName(x) + "@P} expands a value as a prompt, which runs the command substitutions in it")
			}
			if x.Index != nil {
				arith(x.Index)
			}
			if x.Slice != nil {
				arith(x.Slice.Offset)
				arith(x.Slice.Length)
			}
		case *syntax.ArithmExp:
			arith(x.X)
		case *syntax.ArithmCmd:
			arith(x.X)
		case *syntax.LetClause:
			for _, e := range x.Exprs {
				arith(e)
			}
		case *syntax.CStyleLoop:
			arith(x.Init)
			arith(x.Cond)
			arith(x.Post)
		case *syntax.Assign:
			if x.Index != nil {
				arith(x.Index)
			}
			if x.Name != nil {
				if x.Value != nil && numeric(x.Value) {
					safe[x.Name.Value] = true
				} else if x.Value != nil || x.Array != nil {
					unsafe[x.Name.Value] = true
					if integerNames[x.Name.Value] && !x.Naked {
						hard(x.Name.Value + " was declared -i, so what is assigned to it is evaluated as arithmetic")
					}
				}
			}
		case *syntax.WordIter:
			if x.Name != nil {
				for _, it := range x.Items {
					if !numeric(it) {
						unsafe[x.Name.Value] = true
					}
				}
				if len(x.Items) > 0 && !unsafe[x.Name.Value] {
					safe[x.Name.Value] = true
				}
			}
		case *syntax.DeclClause:
			integer := false
			intNames := integerNames
			for _, a := range x.Args {
				if a.Naked && a.Value != nil {
					if l := a.Value.Lit(); strings.HasPrefix(l, "-") {
						integer = integer || strings.ContainsRune(l, 'i')
						continue
					}
					if l := a.Value.Lit(); integer && isName(l) {
						intNames[l] = true
					}
					if ev := b.evalWord(a.Value, false); !ev.Literal {
						hard(x.Variant.Value + " " + ev.Src + " declares a variable named only when it runs")
					}
				}
				if integer && a.Name != nil {
					integerNames[a.Name.Value] = true
				}
				if integer && a.Value != nil && !numeric(a.Value) && !a.Naked {
					if l := a.Value.Lit(); isName(l) {
						refs = append(refs, l)
					} else {
						hard(x.Variant.Value + " -i evaluates " + b.Text(a.Value) + " as arithmetic")
					}
				}
			}
		case *syntax.CallExpr:
			if len(x.Args) > 1 {
				switch x.Args[0].Lit() {
				case "read", "mapfile", "readarray", "getopts", "printf":
					for _, w := range x.Args[1:] {
						if l := w.Lit(); isName(l) {
							unsafe[l] = true
						}
					}
				}
			}
		}
		return true
	})
	for _, r := range refs {
		switch {
		case r == "#" || r == "?" || r == "$" || r == "!" || r == "RANDOM" || r == "SECONDS" || r == "LINENO" || r == "BASHPID" || r == "PPID" || r == "EPOCHSECONDS":
		case safe[r] && !unsafe[r]:
		default:
			hard("arithmetic evaluates " + r + ", whose value bash evaluates as an expression (a value such as a[$(cmd)] runs cmd); its value is not known to be a number")
			return
		}
	}
}

func paramName(pe *syntax.ParamExp) string {
	if pe.Param == nil {
		return ""
	}
	return pe.Param.Value
}

// interactiveChecks asks for what an interactive shell does to a typed line
// before parsing it: history expansion (!!, !rm, ^old^new) runs commands
// typed earlier, and a tab completes words the judge never sees.
func (p *lineParser) interactiveChecks(line string) {
	if strings.IndexByte(line, '\t') >= 0 {
		p.addHard(Problem{Rule: RuleUnparseable, Reason: "it contains a tab, which an interactive shell completes into text that cannot be judged", Hard: true})
	}
	for _, l := range strings.Split(line, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "^") {
			p.addHard(Problem{Rule: RuleUnparseable, Reason: "^old^new reruns the previous command changed, which cannot be judged", Hard: true})
		}
	}
	inSingle := false
	for i := 0; i < len(line); i++ {
		switch c := line[i]; {
		case c == '\\' && !inSingle:
			i++
		case c == '\'':
			inSingle = !inSingle
		case c == '!' && !inSingle && i+1 < len(line) && !strings.ContainsRune(" \t\n=(", rune(line[i+1])):
			p.addHard(Problem{Rule: RuleUnparseable, Reason: "history expansion (" + line[i:min(len(line), i+4)] + "…) reruns commands typed earlier, which cannot be judged", Hard: true})
			return
		}
	}
}

// inherit applies what the wrapper parent implies to c, a command of the
// string it runs. Pipes are marked later, on the whole statement.
func inherit(c *Command, parent *Command) {
	c.Wrappers = append(append(append([]string(nil), parent.Wrappers...), parent.script), c.Wrappers...)
	c.Privileged = c.Privileged || parent.Privileged
	c.Env = append(append([]Assignment(nil), parent.Env...), c.Env...)
	for _, a := range parent.Env {
		checkEnv(c, a)
	}
	c.Cwds = append(append([]Word(nil), parent.Cwds...), c.Cwds...)
}

// blockParser collects the commands of one parsed string.
type blockParser struct {
	p      *lineParser
	Src    string
	depth  int
	byStmt map[*syntax.Stmt][]*Command
	order  []*Command
}

func (b *blockParser) Text(n syntax.Node) string {
	return b.span(n.Pos(), n.End())
}

func (b *blockParser) span(start, end syntax.Pos) string {
	s, e := int(start.Offset()), int(end.Offset())
	if s < 0 || e > len(b.Src) || s > e {
		return ""
	}
	return b.Src[s:e]
}

// stmtText is a statement without its terminator (; or &).
func (b *blockParser) stmtText(st *syntax.Stmt) string {
	if st.Cmd == nil {
		return b.Text(st)
	}
	end := st.Cmd.End()
	for _, r := range st.Redirs {
		if r.End().After(end) {
			end = r.End()
		}
	}
	return strings.TrimSpace(b.span(st.Pos(), end))
}

// collect builds a shellCommand for every simple command in the tree.
func (b *blockParser) collect(f *syntax.File) {
	syntax.Walk(f, func(n syntax.Node) bool {
		st, ok := n.(*syntax.Stmt)
		if !ok {
			return true
		}
		var cmds []*Command
		switch x := st.Cmd.(type) {
		case *syntax.CallExpr:
			cmds = b.call(st, x)
		case *syntax.DeclClause:
			cmds = b.decl(st, x)
		default:
			if len(st.Redirs) > 0 {
				// Redirections of a compound command ({ ...; } > f).
				c := &Command{Layers: [][]Word{nil}, Src: b.stmtText(st)}
				b.Redirects(c, st)
				cmds = []*Command{c}
			}
		}
		b.byStmt[st] = cmds
		b.order = append(b.order, cmds...)
		return true
	})
}

// pipes marks the commands that read a pipe, and what writes to it.
func (b *blockParser) pipes(f *syntax.File) {
	names := func(n syntax.Node) []string {
		var out []string
		syntax.Walk(n, func(m syntax.Node) bool {
			if st, ok := m.(*syntax.Stmt); ok {
				for _, c := range b.byStmt[st] {
					out = append(out, c.layerNames()...)
				}
			}
			return true
		})
		return out
	}
	mark := func(n syntax.Node, from []string) {
		syntax.Walk(n, func(m syntax.Node) bool {
			if st, ok := m.(*syntax.Stmt); ok {
				for _, c := range b.byStmt[st] {
					c.Piped = true
					c.PipedFrom = append(c.PipedFrom, from...)
				}
			}
			return true
		})
	}
	syntax.Walk(f, func(n syntax.Node) bool {
		switch x := n.(type) {
		case *syntax.BinaryCmd:
			if x.Op == syntax.Pipe || x.Op == syntax.PipeAll {
				mark(x.Y, names(x.X))
			}
		case *syntax.Stmt:
			// < <(cmd): the command reads cmd's output on stdin.
			for _, ps := range stdinProcSubsts(x) {
				for _, c := range b.byStmt[x] {
					c.Piped = true
					c.PipedFrom = append(c.PipedFrom, names(ps)...)
				}
			}
			// <(cmd) as an argument: the command reads cmd's output.
			// >(cmd): cmd reads the command's output.
			for _, c := range b.byStmt[x] {
				if ce, ok := x.Cmd.(*syntax.CallExpr); ok {
					for _, w := range ce.Args {
						for _, part := range w.Parts {
							ps, ok := part.(*syntax.ProcSubst)
							if !ok {
								continue
							}
							if ps.Op == syntax.CmdIn {
								c.Piped = true
								c.PipedFrom = append(c.PipedFrom, names(ps)...)
							} else {
								mark(ps, c.layerNames())
							}
						}
					}
				}
			}
		}
		return true
	})
}

// functions flags functions that call themselves (:(){ :|:& };:).
func (b *blockParser) functions(f *syntax.File) {
	syntax.Walk(f, func(n syntax.Node) bool {
		fd, ok := n.(*syntax.FuncDecl)
		if !ok || fd.Name == nil {
			return true
		}
		syntax.Walk(fd.Body, func(m syntax.Node) bool {
			st, ok := m.(*syntax.Stmt)
			if !ok {
				return true
			}
			for _, c := range b.byStmt[st] {
				if c.Name() == fd.Name.Value {
					c.AddProblem(Problem{Rule: RuleUnparseable, Reason: fmt.Sprintf("function %q calls itself (a fork bomb?)", fd.Name.Value), Hard: true})
				}
			}
			return true
		})
		return true
	})
}

// layerNames returns the command names of every layer.
func (c *Command) layerNames() []string {
	var out []string
	for _, l := range c.Layers {
		if len(l) > 0 && l[0].Literal {
			out = append(out, path.Base(l[0].Text))
		}
	}
	return out
}

// call builds the commands of one simple command.
func (b *blockParser) call(st *syntax.Stmt, ce *syntax.CallExpr) []*Command {
	c := &Command{Src: b.stmtText(st)}
	for _, a := range ce.Assigns {
		c.Env = append(c.Env, b.assign(a))
	}
	var words []Word
	for _, w := range ce.Args {
		ws, ok := b.words(w)
		if !ok {
			c.AddProblem(Problem{Rule: RuleUnparseable, Reason: fmt.Sprintf("brace expansion of %s yields more than %d words", b.Text(w), maxWords), Hard: true})
		}
		words = append(words, ws...)
	}
	c.Layers = [][]Word{words}
	b.Redirects(c, st)
	for _, a := range c.Env {
		checkEnv(c, a)
	}
	if len(words) == 0 {
		return []*Command{c}
	}
	return b.p.unwrap(c, b.depth)
}

// decl builds the command of export, declare, local, readonly, typeset.
func (b *blockParser) decl(st *syntax.Stmt, dc *syntax.DeclClause) []*Command {
	c := &Command{Src: b.stmtText(st)}
	words := []Word{{Text: dc.Variant.Value, Literal: true, Src: dc.Variant.Value}}
	for _, a := range dc.Args {
		if a.Name == nil || a.Naked && a.Value == nil && a.Array == nil {
			if a.Value != nil {
				ws, _ := b.words(a.Value)
				words = append(words, ws...)
			} else if a.Name != nil {
				words = append(words, Word{Text: a.Name.Value, Literal: true, Src: a.Name.Value})
			}
			continue
		}
		as := b.assign(a)
		c.Env = append(c.Env, as)
		words = append(words, Word{Text: as.Src, Literal: as.Value.Literal, Src: as.Src})
		checkEnv(c, as)
	}
	c.Layers = [][]Word{words}
	b.Redirects(c, st)
	return []*Command{c}
}

func (b *blockParser) assign(a *syntax.Assign) Assignment {
	as := Assignment{Src: b.Text(a)}
	if a.Name != nil {
		as.Name = a.Name.Value
	}
	switch {
	case a.Array != nil:
		as.Value = Word{Text: b.Text(a.Array), Src: b.Text(a.Array)}
		syntax.Walk(a.Array, func(n syntax.Node) bool {
			switch n.(type) {
			case *syntax.CmdSubst, *syntax.ProcSubst, *syntax.ParamExp, *syntax.ArithmExp:
				as.Value.Literal = false
			}
			return true
		})
	case a.Value != nil:
		as.Value = b.evalWord(a.Value, true)
	default:
		as.Value = Word{Literal: true}
	}
	return as
}

// Redirects records the redirections of st on c.
func (b *blockParser) Redirects(c *Command, st *syntax.Stmt) {
	for _, r := range st.Redirs {
		rd := Redirect{op: r.Op.String(), Src: b.Text(r)}
		if r.Word != nil {
			rd.Target = b.evalWord(r.Word, false)
		}
		switch r.Op {
		case syntax.RdrOut, syntax.AppOut, syntax.RdrClob, syntax.AppClob, syntax.RdrAll, syntax.RdrAllClob, syntax.AppAll, syntax.AppAllClob:
			rd.Write = true
		case syntax.RdrIn:
			rd.Read = true
		case syntax.RdrInOut:
			rd.Read, rd.Write = true, true
		case syntax.DplOut:
			// >&file (not a descriptor number or -) writes the file.
			if !isFD(rd.Target) {
				rd.Write = true
			}
		case syntax.DplIn:
			if !isFD(rd.Target) {
				rd.Read = true
			}
		case syntax.Hdoc, syntax.DashHdoc:
			if r.Hdoc != nil {
				rd.body, rd.hasBody = b.hdocBody(r), true
			} else {
				rd.body, rd.hasBody = Word{Literal: true}, true
			}
		case syntax.WordHdoc:
			rd.body, rd.hasBody = rd.Target, true
			rd.Target = Word{}
		}
		c.Redirects = append(c.Redirects, rd)
	}
}

// hdocBody returns a here-document's body; it is literal when nothing in
// it is expanded.
func (b *blockParser) hdocBody(r *syntax.Redirect) Word {
	w := Word{Literal: true, Src: b.Text(r.Hdoc)}
	var sb strings.Builder
	for _, part := range r.Hdoc.Parts {
		if l, ok := part.(*syntax.Lit); ok {
			sb.WriteString(l.Value)
			continue
		}
		w.Literal = false
	}
	w.Text = sb.String()
	if r.Op == syntax.DashHdoc {
		lines := strings.Split(w.Text, "\n")
		for i, l := range lines {
			lines[i] = strings.TrimLeft(l, "\t")
		}
		w.Text = strings.Join(lines, "\n")
	}
	return w
}

func isFD(w Word) bool {
	if !w.Literal {
		return false
	}
	t := strings.TrimSuffix(w.Text, "-")
	if t == "" {
		return true
	}
	for _, r := range t {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// words evaluates w after brace expansion; ok is false when the expansion
// is too large.
func (b *blockParser) words(w *syntax.Word) ([]Word, bool) {
	src := b.Text(w)
	// Split a copy: the tree is still being walked.
	cp := &syntax.Word{Parts: slices.Clone(w.Parts)}
	if !syntax.SplitBraces(cp) {
		ev := b.evalWord(w, false)
		ev.Src = src
		return []Word{ev}, true
	}
	var out []Word
	for x, err := range expand.BracesSeq(nil, cp) {
		if err != nil || len(out) >= maxWords {
			return out, false
		}
		ev := b.evalWord(x, false)
		ev.Src = src
		out = append(out, ev)
	}
	return out, true
}

// evalWord removes quotes from w and expands what can be known before the
// command runs: a leading ~ and $HOME. assign marks the value of an
// assignment (where ~ after = is also expanded).
func (b *blockParser) evalWord(w *syntax.Word, assign bool) Word {
	out := Word{Literal: true, Src: b.Text(w)}
	var sb strings.Builder
	lastDyn := 0
	dynamic := func(part syntax.Node) {
		if out.Literal {
			out.Prefix = sb.String()
		}
		out.Literal = false
		sb.WriteString(b.Text(part))
		lastDyn = sb.Len()
	}
	for i, part := range w.Parts {
		switch x := part.(type) {
		case *syntax.Lit:
			s := x.Value
			if i == 0 && strings.HasPrefix(s, "~") {
				s = b.tilde(s, len(w.Parts) == 1)
			}
			text, glob := unescapeLit(s)
			out.Glob = out.Glob || glob
			sb.WriteString(text)
		case *syntax.SglQuoted:
			if x.Dollar {
				v, err := expand.Literal(&expand.Config{}, &syntax.Word{Parts: []syntax.WordPart{x}})
				if err != nil {
					dynamic(x)
					continue
				}
				sb.WriteString(v)
				continue
			}
			sb.WriteString(x.Value)
		case *syntax.DblQuoted:
			for _, q := range x.Parts {
				switch y := q.(type) {
				case *syntax.Lit:
					sb.WriteString(unescapeDbl(y.Value))
				case *syntax.ParamExp:
					if v, ok := b.knownParam(y); ok {
						sb.WriteString(v)
						continue
					}
					dynamic(y)
				case *syntax.CmdSubst:
					out.subst = true
					dynamic(y)
				default:
					dynamic(q)
				}
			}
		case *syntax.ParamExp:
			if v, ok := b.knownParam(x); ok {
				sb.WriteString(v)
				continue
			}
			dynamic(x)
		case *syntax.CmdSubst, *syntax.ProcSubst:
			out.subst = true
			dynamic(x)
		case *syntax.ExtGlob:
			out.Glob, out.Extglob = true, true
			sb.WriteString(b.Text(x))
		default:
			dynamic(part)
		}
	}
	out.Text = sb.String()
	if !out.Literal {
		out.Suffix = out.Text[lastDyn:]
	}
	if assign && out.Literal && strings.HasPrefix(out.Text, "~") {
		out.Text = b.tilde(out.Text, true)
	}
	return out
}

// knownParam returns the value of a parameter expansion known before the
// command runs: $HOME.
func (b *blockParser) knownParam(pe *syntax.ParamExp) (string, bool) {
	if pe.Param == nil || b.p.home == "" {
		return "", false
	}
	if pe.Param.Value != "HOME" || pe.Excl || pe.Length || pe.Width || pe.Index != nil ||
		pe.Slice != nil || pe.Repl != nil || pe.Exp != nil || pe.Names != 0 || len(pe.Modifiers) > 0 {
		return "", false
	}
	return b.p.home, true
}

// tilde expands a leading ~ or ~user of s, the first literal part of a
// word; whole says the word has no other part.
func (b *blockParser) tilde(s string, whole bool) string {
	i := strings.IndexByte(s, '/')
	if i < 0 && !whole {
		return s
	}
	prefix, rest := s, ""
	if i >= 0 {
		prefix, rest = s[:i], s[i:]
	}
	if strings.ContainsAny(prefix, `\'"`) {
		return s
	}
	name := prefix[1:]
	switch {
	case name == "":
		if b.p.home == "" {
			return s
		}
		return b.p.home + rest
	case name == "+" || name == "-":
		// ~+ is $PWD and ~- is $OLDPWD: bash expands them when the
		// command runs, so the word is judged as only known then.
		b.p.addHard(Problem{Rule: RuleDynamicPath, Reason: fmt.Sprintf("%s names the current or previous directory, which bash expands when it runs", prefix), Hard: true})
		return s
	}
	u, err := user.Lookup(name)
	if err != nil || u.HomeDir == "" {
		return s
	}
	return u.HomeDir + rest
}

// unescapeLit removes backslash escapes from an unquoted literal and
// reports unescaped glob characters.
func unescapeLit(s string) (string, bool) {
	if !strings.ContainsAny(s, `\*?[`) {
		return s, false
	}
	var sb strings.Builder
	glob := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\' && i+1 < len(s):
			i++
			if s[i] != '\n' {
				sb.WriteByte(s[i])
			}
			continue
		case c == '*' || c == '?':
			glob = true
		case c == '[' && strings.IndexByte(s[i+1:], ']') >= 0:
			glob = true
		}
		sb.WriteByte(c)
	}
	return sb.String(), glob
}

// unescapeDbl removes the backslash escapes that double quotes honor.
func unescapeDbl(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var sb strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			switch s[i+1] {
			case '$', '`', '"', '\\':
				sb.WriteByte(s[i+1])
				i++
				continue
			case '\n':
				i++
				continue
			}
		}
		sb.WriteByte(s[i])
	}
	return sb.String()
}

// layerDisplay shows the wrapper part of a layer ("sudo -u bob").
func layerDisplay(ws []Word) string {
	parts := make([]string, 0, len(ws))
	for _, w := range ws {
		parts = append(parts, w.String())
	}
	return strings.Join(parts, " ")
}

// checkEnv records an assignment that applies to c: one of a variable that
// makes programs run code (codeEnv) asks in every mode.
func checkEnv(c *Command, a Assignment) {
	if CodeEnv(a.Name) {
		c.AddProblem(Problem{Rule: RuleDangerousEnv, Reason: fmt.Sprintf("it sets %s, which can make the shell, the dynamic loader, git or an interpreter run other code, so it needs a person's approval for each call", a.Name), Hard: true})
	}
}
