package shellread

import (
	"strings"
	"testing"
)

// render shows the commands of a line as "wrappers: args" entries and the
// rules of their problems.
func render(pl *ParsedLine) (cmds []string, problems []string) {
	for _, c := range pl.Commands {
		var args []string
		for _, w := range c.Args() {
			args = append(args, w.String())
		}
		s := strings.Join(args, " ")
		if len(c.Wrappers) > 0 {
			s = strings.Join(c.Wrappers, " | ") + ": " + s
		}
		if c.WrapperOnly {
			s += " (wrapper)"
		}
		if c.Piped {
			s += " <" + strings.Join(c.PipedFrom, ",")
		}
		cmds = append(cmds, s)
		for _, p := range c.Problems {
			problems = append(problems, p.Rule)
		}
	}
	for _, p := range pl.Problems {
		problems = append(problems, p.Rule)
	}
	return cmds, problems
}

func TestParseCommandLine(t *testing.T) {
	tests := []struct {
		line     string
		cmds     []string
		problems []string
	}{
		{"ls -la", []string{"ls -la"}, nil},
		{"a && b || c; d & e", []string{"a", "b", "c", "d", "e"}, nil},
		{"a | b | c", []string{"a", "b <a", "c <a,b"}, nil},
		{"echo $(a `b`)", []string{"echo $(a `b`)", "a `b`", "b"}, []string{ruleDynamicArgs, ruleDynamicArgs}},
		{"sudo -u bob timeout 5 nice -n 3 ls", []string{"sudo -u bob | timeout 5 | nice -n 3: ls"}, []string{RulePrivileged}},
		{"env -i A=1 B=2 make", []string{"env -i A=1 B=2: make"}, nil},
		{"bash -c 'a; b'", []string{"bash -c a; b (wrapper)", "bash -c: a", "bash -c: b"}, nil},
		{`sh -c "sh -c 'x'"`, []string{"sh -c sh -c 'x' (wrapper)", "sh -c: sh -c x (wrapper)", "sh -c | sh -c: x"}, nil},
		{"xargs -0 -n1 grep foo", []string{"xargs -0 -n1: grep foo"}, []string{ruleDynamicArgs}},
		{"find . -name x -exec rm {} + -o -execdir cat {} \\;", []string{"find . -name x -exec rm {} + -o -execdir cat {} ;", "find -exec: rm {}", "find -exec: cat {}"}, []string{ruleDynamicArgs, ruleDynamicArgs}},
		{"git -C sub -c a=b --no-pager log", []string{"git -C sub -c a=b --no-pager: git log"}, []string{ruleExecOption}},
		{"command -v git", []string{"command -v git"}, nil},
		{"command git status", []string{"command: git status"}, nil},
		{"watch -n1 ls -l", []string{"watch -n1 ls -l (wrapper)", "watch: ls -l"}, nil},
		{"eval 'a' b", []string{"eval a b (wrapper)", "eval: a b"}, nil},
		{"eval $X", []string{"eval $X (wrapper)"}, []string{RuleUnparseable}},
		{"timeout --bogus 5 ls", []string{"timeout --bogus 5: ls"}, []string{ruleWrapperOpt}},
		{"{a,b}c", []string{"ac bc"}, nil},
		{"echo ~/x", []string{"echo /home/u/x"}, nil},
		{`echo "~/x" '$HOME' "$HOME"`, []string{"echo ~/x $HOME /home/u"}, nil},
		{"X=1 Y=$(id) cmd", []string{"cmd", "id"}, nil},
		{"PATH=/x ls", []string{"ls"}, []string{RuleDangerousEnv}},
		{"export LD_PRELOAD=x", []string{"export LD_PRELOAD=x"}, []string{RuleDangerousEnv}},
		{"f() { f | f & }; f", []string{"f", "f <f", "f"}, []string{RuleUnparseable, RuleUnparseable}},
		{"cd", []string{"cd"}, []string{RuleCd}},
		{"source x", []string{"source x"}, []string{RuleUnparseable}},
		{"echo x > $F", []string{"echo x"}, nil},
		{"ls\x1b[A", nil, []string{RuleUnparseable}},
		{"'unterminated", nil, []string{RuleUnparseable}},
		{"sh <<'E'\nrm x\nE", []string{"sh (wrapper)", "sh <<: rm x"}, nil},
		{"curl x | sudo bash", []string{"curl x", "sudo: bash <curl"}, []string{RulePrivileged, RuleUnparseable}},
		{"bash <(curl x)", []string{"bash <(curl x) <curl", "curl x"}, []string{RuleUnparseable, ruleDynamicArgs}},
		{"tee >(sh) < f", []string{"tee >(sh)", "sh <tee"}, []string{ruleDynamicArgs}},
	}
	for _, tc := range tests {
		t.Run(tc.line, func(t *testing.T) {
			cmds, problems := render(ParseCommandLine(tc.line, "/home/u"))
			if strings.Join(cmds, "\n") != strings.Join(tc.cmds, "\n") {
				t.Errorf("commands:\n%s\nwant:\n%s", strings.Join(cmds, "\n"), strings.Join(tc.cmds, "\n"))
			}
			if strings.Join(problems, ",") != strings.Join(tc.problems, ",") {
				t.Errorf("problems %v, want %v", problems, tc.problems)
			}
		})
	}
}

func TestCmdPattern(t *testing.T) {
	tests := []struct {
		pattern, line string
		strict        bool
		want          bool
	}{
		{"git push", "git push origin main", false, true},
		{"git push", "git pull", false, false},
		{"git push", "git", false, false},
		{"git push", "git commit -m push", false, false},
		{"rm -rf", "rm -fr x", false, true},
		{"rm -rf", "rm -r -f x", false, true},
		{"rm -rf", "rm -r x", false, false},
		{"rm -r|--recursive", "rm --recursive x", false, true},
		{"rm -r|--recursive", "rm --recursive=always x", false, true},
		{"rm -r ** /", "rm -r a b /", false, true},
		{"rm -r ** /", "rm -r a b", false, false},
		{"rm -r ** /", "rm -r -- /", false, true},
		{`rm ** /\*`, "rm /*", false, true},
		{`rm ** /\*`, "rm /etc", false, false},
		{"rm ** ~", "rm /home/u/", false, true},
		{"ls", "/usr/bin/ls", true, true},
		{"ls", "./ls", true, false},
		{"ls", "./ls", false, true},
		{"./gradlew build", "./gradlew build", true, true},
		{"git status|log", "git log -3", false, true},
		{"'a b' c", "'a b' c", false, true},
		{"find -delete", "find . -name x -delete", false, true},
		{"npm run test|lint", "npm run --silent lint", false, true},
		{"python* -m pytest", "python3 -m pytest -x", false, true},
	}
	for _, tc := range tests {
		t.Run(tc.pattern+"~"+tc.line, func(t *testing.T) {
			p, err := CompileCmdPattern(tc.pattern)
			if err != nil {
				t.Fatal(err)
			}
			pl := ParseCommandLine(tc.line, "/home/u")
			if len(pl.Commands) != 1 {
				t.Fatalf("commands %d", len(pl.Commands))
			}
			if got := p.Match(pl.Commands[0].Args(), tc.strict, "/home/u"); got != tc.want {
				t.Fatalf("got %v", got)
			}
		})
	}
}

func TestSedUnsafe(t *testing.T) {
	tests := []struct {
		script string
		unsafe bool
	}{
		{"s/foo/bar/g", false},
		{"s/hello world/e/g", false},
		{"1,20p", false},
		{"/start/,/end/d", false},
		{`s|a\|b|c|`, false},
		{"y/abc/xyz/", false},
		{"$!N;P;D", false},
		{"/x/{s/a/b/;p}", false},
		{"1a\\hello", false},
		{"e id", true},
		{"1e id", true},
		{"s/x/id/e", true},
		{"s/x/y/w /tmp/out", true},
		{"w /tmp/out", true},
		{"r /etc/passwd", true},
		{"/x/R f", true},
		{"s/x", true},
		{"K", true},
	}
	for _, tc := range tests {
		t.Run(tc.script, func(t *testing.T) {
			if _, got := sedUnsafe(tc.script); got != tc.unsafe {
				t.Fatalf("got %v", got)
			}
		})
	}
}

func TestWordGlob(t *testing.T) {
	tests := []struct {
		glob, s string
		want    bool
	}{
		{"a*", "abc/def", true},
		{"a?c", "abc", true},
		{"[ab]x", "bx", true},
		{"[!ab]x", "bx", false},
		{`\*`, "*", true},
		{`\*`, "x", false},
		{"a|b", "b", true},
		{`a\|b`, "a|b", true},
		{"169.254.*", "169.254.1.1", true},
		{"x.y", "xzy", false},
	}
	for _, tc := range tests {
		g, err := CompileWordGlob(tc.glob)
		if err != nil {
			t.Fatal(err)
		}
		if got := g.Match(tc.s); got != tc.want {
			t.Errorf("%q ~ %q: got %v", tc.glob, tc.s, got)
		}
	}
}

func FuzzParseCommandLine(f *testing.F) {
	for _, s := range []string{"ls && rm -rf /", "bash -c 'x'", "a=(1 2); ${a[@]}", "cat <<E\nx\nE", "{a,b}{c,d}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		pl := ParseCommandLine(line, "/home/u")
		for _, c := range pl.Commands {
			if len(c.Layers) == 0 {
				t.Fatal("command without layers")
			}
		}
	})
}

// TestParsedLineClone: a problem added to a clone's command (as the judge
// adds them) is not in the parsed line, nor in another clone, also when the
// command already has problems with room to grow.
func TestParsedLineClone(t *testing.T) {
	pl := ParseLine("sudo cd; ls", "/home/u", false)
	if len(pl.Commands) != 2 || len(pl.Commands[0].Problems) == 0 {
		t.Fatalf("parse: %d commands, problems %v", len(pl.Commands), pl.Commands[0].Problems)
	}
	pl.Commands[0].Problems = append(make([]Problem, 0, 16), pl.Commands[0].Problems...)
	before := [2]int{len(pl.Commands[0].Problems), len(pl.Commands[1].Problems)}
	a, b := pl.Clone(), pl.Clone()
	extra := Problem{Rule: "test:added", Reason: "added to a clone", Hard: true}
	for _, c := range a.Commands {
		c.AddProblem(extra)
	}
	for i, c := range pl.Commands {
		if len(c.Problems) != before[i] {
			t.Errorf("parsed command %d: problems %v", i, c.Problems)
		}
		if got := b.Commands[i].Problems; len(got) != before[i] || (len(got) > 0 && got[len(got)-1] == extra) {
			t.Errorf("other clone's command %d: problems %v", i, got)
		}
		if cap(c.Problems) > before[i] && c.Problems[:before[i]+1][before[i]] == extra {
			t.Errorf("parsed command %d: the clone wrote into its array", i)
		}
	}
	if a.Commands[0].Name() != pl.Commands[0].Name() || a.Commands[1].Src != "ls" {
		t.Errorf("clone: %q %q", a.Commands[0].Name(), a.Commands[1].Src)
	}
}
