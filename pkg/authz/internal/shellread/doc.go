// Package shellread reads shell command lines the way bash will run them,
// for the policy engine (pkg/authz), which is its only user. It knows no
// rules: it says what a line runs and what makes it unjudgeable.
//
//   - ParseCommandLine (and ParseLine for lines typed into a terminal)
//     takes a line apart with mvdan.cc/sh into its simple commands
//     (Command): every command of pipelines, lists, subshells, command and
//     process substitutions, and of the strings wrappers hand to a shell
//     (bash -c, sudo, env, xargs, find -exec...), each with its words
//     (Word), redirections, assignments, the wrappers it was found under
//     (Layers) and the problems that keep it from being judged from its
//     text alone (Problem: a dynamic command name, an option that runs
//     another program, a dangerous environment variable, ...).
//   - CompileCmdPattern and CompileWordGlob compile the command patterns of
//     policy rules ("git push --force", "rm -rf *"); CmdPattern.Match and
//     MayMatch say whether a command matches now or could at run time.
//   - CodeEnv and BenignEnv classify environment variables; GlobMatch and
//     BashGlob expand bash globs.
//
// The rule names it reports (RuleUnparseable, RuleCd, ...) are strings the
// policy engine shows; the decisions are the engine's.
package shellread
