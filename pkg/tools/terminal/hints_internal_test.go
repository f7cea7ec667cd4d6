package terminal

import (
	"strings"
	"testing"
)

func TestExitHint(t *testing.T) {
	tests := []struct {
		code   int
		output string
		want   string // substring; "" means no hint
	}{
		{127, "bash: line 1: rgg: command not found\n", `"rgg" is not installed`},
		{127, "sh: 1: rgg: not found\n", `command -v rgg`},
		{127, "make: *** No rule\n", ""},
		{126, "bash: line 1: ./x.sh: Permission denied\n", `chmod +x ./x.sh`},
		{126, "bash: line 1: ./src: Is a directory\n", `"./src" is a directory`},
		{1, "bash: line 1: rgg: command not found\n", ""},
		{0, "", ""},
	}
	for _, tt := range tests {
		got := exitHint(tt.code, tt.output)
		if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
			t.Errorf("exitHint(%d, %q) = %q, want it to contain %q", tt.code, tt.output, got, tt.want)
		}
	}
}

// gitHint: the failure of a write into a read-only git directory gets the
// hint, whatever program wrote (an absolute path, one relative to the
// working directory); other failures, a success and a command without
// read-only directories do not.
func TestGitHint(t *testing.T) {
	ro := []string{"/ws/.git", "/ws/sub/.git"}
	for _, c := range []struct {
		code   int
		out    string
		cmd    string
		dir    string
		ro     []string
		hinted bool
	}{
		{128, "fatal: Unable to create '/ws/.git/index.lock': Read-only file system\n", "", "/ws", ro, true},
		{255, "error: could not lock config file .git/config: Read-only file system\n", "", "/ws", ro, true},
		{1, "OSError: [Errno 30] Read-only file system: '../.git/hooks/pre-commit'\n", "", "/ws/src", ro, true},
		{1, "touch: cannot touch 'sub/.git/x': Read-only file system\n", "", "/ws", ro, true},
		{1, "touch: cannot touch '/usr/x': Read-only file system\n", "", "/ws", ro, false},
		{1, "fatal: Unable to create '/ws/.git/index.lock': File exists.\n", "", "/ws", ro, false},
		{0, "warning: /ws/.git/x: Read-only file system\n", "", "/ws", ro, false},
		{128, "fatal: Unable to create '/ws/.git/index.lock': Read-only file system\n", "", "/ws", nil, false},
		// git stash fails on a read-only index with no output at all.
		{1, "", "git stash", "/ws", ro, true},
		{1, "", "git -C sub stash push -m wip", "/ws", ro, true},
		{1, "", "cd src && /usr/bin/git stash pop", "/ws/src", ro, true},
		{1, "", "git stash list", "/ws", ro, false},
		{0, "", "git stash", "/ws", ro, false},
		{1, "", "git stash", "/elsewhere", ro, false},
		{1, "", "echo git; stash", "/ws", ro, false},
	} {
		if got := gitHint(c.code, c.out, c.cmd, c.dir, c.ro) != ""; got != c.hinted {
			t.Errorf("%d %q in %s: hinted %v, want %v", c.code, c.out, c.dir, got, c.hinted)
		}
	}
}
