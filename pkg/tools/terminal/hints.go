package terminal

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
)

// Shell diagnostics for a program that could not be run: bash's
// "bash: line 1: NAME: command not found", sh's "sh: 1: NAME: not found",
// and "NAME: Permission denied".
var (
	notFoundRe = regexp.MustCompile(`(?m)^(?:ba)?sh: (?:line )?\d+: (.+?): (?:command )?not found$`)
	noExecRe   = regexp.MustCompile(`(?m)^(?:ba)?sh: (?:line )?\d+: (.+?): Permission denied$`)
	isDirRe    = regexp.MustCompile(`(?m)^(?:ba)?sh: (?:line )?\d+: (.+?): Is a directory$`)
)

// exitHint says what to do next when a command exited 127 or 126 because
// the shell could not run a program, read from the end of its output; ""
// otherwise.
func exitHint(code int, output string) string {
	switch code {
	case 127:
		if m := notFoundRe.FindStringSubmatch(output); m != nil {
			return fmt.Sprintf("%q is not installed or not on PATH here (commands get a minimal environment); check the name with \"command -v %s\", or install it or call it by its full path", m[1], m[1])
		}
	case 126:
		if m := noExecRe.FindStringSubmatch(output); m != nil {
			return fmt.Sprintf("%q is not executable; run it through its interpreter (\"sh %s\", \"python3 %s\") or make it executable first (\"chmod +x %s\")", m[1], m[1], m[1], m[1])
		}
		if m := isDirRe.FindStringSubmatch(output); m != nil {
			return fmt.Sprintf("%q is a directory, not a program; list it with list_dir or run a program inside it", m[1])
		}
	}
	return ""
}

// gitHint says what to do when a command failed because it wrote into a
// git directory that is read-only in its view (readOnly: the workspace's
// git directories and what their configuration names, Policy.ReadOnly):
// a line of its output says "Read-only file system" about a path below
// one of them, absolute or relative to dir, the command's working
// directory. It tells the object, not the command line: whatever program
// wrote there. The one exception is git
// stash, which fails on a read-only index without a word (exit 1, no
// output): a failed command line that runs git stash (not stash list or
// show) in a directory at or below one holding a read-only git directory
// gets the hint too. "" otherwise.
func gitHint(code int, output, command, dir string, readOnly []string) string {
	if code == 0 || len(readOnly) == 0 {
		return ""
	}
	if runsGitStash(command) {
		for _, r := range readOnly {
			if top := filepath.Dir(r); dir == top || strings.HasPrefix(dir, top+"/") {
				return readOnlyGitHint
			}
		}
	}
	for line := range strings.Lines(output) {
		if !strings.Contains(line, "Read-only file system") {
			continue
		}
		for _, r := range readOnly {
			names := []string{r}
			if rel, err := filepath.Rel(dir, r); err == nil && rel != "." {
				names = append(names, rel)
			}
			for _, n := range names {
				if strings.Contains(line, n) {
					return readOnlyGitHint
				}
			}
		}
	}
	return ""
}

// readOnlyGitHint is gitHint's line.
const readOnlyGitHint = "the workspace's git directories are read-only for commands (a person's git would run what a command wrote there); " +
	"commit, switch branches and stage with toold's version-control tool (build_and_version_control: git_commit, git_branch), " +
	"or ask a person to run this command outside the sandbox (run_command outside_sandbox: true)"

// runsGitStash reports whether a simple command of command (split at ;
// & | ( ) and newlines) is git (or a path ending in /git, after variable
// assignments) with, after its options, stash and a subcommand that writes
// (anything but list and show). A hint's heuristic, not policy.
func runsGitStash(command string) bool {
	segments := strings.FieldsFunc(command, func(r rune) bool {
		return r == ';' || r == '&' || r == '|' || r == '(' || r == ')' || r == '\n'
	})
	for _, seg := range segments {
		words := strings.Fields(seg)
		i := 0
		for i < len(words) && strings.Contains(words[i], "=") && !strings.HasPrefix(words[i], "-") {
			i++
		}
		if i >= len(words) || words[i] != "git" && !strings.HasSuffix(words[i], "/git") {
			continue
		}
		j := i + 1
		for j < len(words) && strings.HasPrefix(words[j], "-") {
			if words[j] == "-C" || words[j] == "-c" {
				j++
			}
			j++
		}
		if j < len(words) && words[j] == "stash" && (j+1 == len(words) || words[j+1] != "list" && words[j+1] != "show") {
			return true
		}
	}
	return false
}
