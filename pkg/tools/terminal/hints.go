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
// directory. It tells the object, not the
// command line: whatever program wrote there. "" otherwise.
func gitHint(code int, output, dir string, readOnly []string) string {
	if code == 0 || len(readOnly) == 0 {
		return ""
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
					return "the workspace's git directories are read-only for commands (a person's git would run what a command wrote there); " +
						"commit, switch branches and stage with toold's version-control tool (build_and_version_control: git_commit, git_branch), " +
						"or ask a person to run this command outside the sandbox (run_command outside_sandbox: true)"
				}
			}
		}
	}
	return ""
}
