package terminal

import (
	"fmt"
	"regexp"
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
