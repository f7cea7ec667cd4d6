package terminal

import (
	"path/filepath"
	"strings"

	"mvdan.cc/sh/v3/syntax"

	"github.com/toold/toold/pkg/errdefs"
)

// checkSyntax refuses a command line that a shell other than bash might
// read differently from the policy. Policy judges every command line as
// bash parses it (pkg/authz); where commands run with another shell (sh in
// a minimal image, or a configured one), a line is run only when it also
// parses as POSIX sh, so no bash-only construct (arrays, <(...),
// here-strings, ...) can be judged as one thing and run as another. Within
// POSIX syntax bash does at least what sh does (bash expands braces, sh
// does not), so the judgement of the bash reading covers the sh one.
func checkSyntax(shell, command string) error {
	if filepath.Base(shell) == "bash" {
		return nil
	}
	_, err := syntax.NewParser(syntax.Variant(syntax.LangPOSIX)).Parse(strings.NewReader(command), "")
	if err != nil {
		return errdefs.Invalid("/command", "pattern",
			"this toold runs commands with %s, not bash (bash is not installed), and the command is not POSIX sh syntax (%v); rewrite it without bash-only syntax such as arrays, <(...), <<< or ${x//a/b}", shell, err)
	}
	return nil
}
