// Command toolctl is the command-line client of toold: it lists the tools
// toold offers, checks its health, and runs tool calls on its ExecuteTool
// stream, showing their progress live.
//
//	toolctl tools [--json] [--format openai|anthropic|gemini|mcp] [--flat]
//	toolctl health
//	toolctl call NAME [--args JSON|-] [key=value | key:=JSON ...] [--timeout D] [--yes] [--answer TEXT] [--conversation ID] [--json]
//	toolctl policy explain NAME [--args JSON|-] [key=value | key:=JSON ...] [--conversation ID] [--mode yolo|auto|ask] [--json]
//	toolctl grants [--conversation ID] [--json]
//	toolctl grants revoke ID
//	toolctl mcp list [--json] | mcp add NAME (-- COMMAND [ARGS...] | URL) [flags] | mcp remove NAME
//	toolctl shell [--session ID | --workdir DIR --shell PROG --keep] [--list]
//	toolctl todos [--conversation ID] [--watch] [--json]
//
// It reaches toold on the unix socket ./toold.sock (--socket, $TOOLD_SOCKET)
// or on a TCP address (--addr), sends a bearer token when one is given
// (--token, $TOOLD_TOKEN), and waits up to --connect-timeout for a daemon
// that is still starting.
//
// Output goes to stdout (results, listings, --json events) and stderr
// (display lines, progress, errors). The output mode is chosen once per
// command: json when --json is given, human (a live status line) when stderr
// is a terminal, plain lines otherwise.
//
// Exit status: 0 on success; 1 when a call ends in error or toold is not
// serving; 2 on usage errors and when toold cannot be reached or refuses the
// token.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"
)

// version is toolctl's version; release builds set it with
// -ldflags "-X main.version=...".
var version = "0.1.0-dev"

// Exit statuses.
const (
	exitOK      = 0 // the command did what was asked
	exitFailure = 1 // a call ended in error, or toold is not serving
	exitUsage   = 2 // bad usage, toold unreachable, or the token refused
)

// errInterrupted is the cause of the context when the user presses Ctrl-C.
var errInterrupted = errors.New("interrupted")

func main() {
	ctx, cancel := context.WithCancelCause(context.Background())
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		// The first signal asks the command to stop cleanly (a running call
		// is canceled and its end awaited); the second exits at once.
		<-sigs
		cancel(errInterrupted)
		<-sigs
		os.Exit(130)
	}()
	os.Exit(run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// run is toolctl without the process around it: it runs the command line
// args and returns the exit status. Canceling ctx acts like a first Ctrl-C.
// Tests call it in-process.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	a := &app{
		stdin:         stdin,
		stdout:        stdout,
		stderr:        stderr,
		getenv:        os.Getenv,
		isTerminal:    isTerminal,
		terminalWidth: terminalWidth,
		openTTY:       openTTY,
	}
	return a.run(ctx, args)
}

// app holds what every command needs: the process's streams and
// environment (injectable for tests) and the global flags.
type app struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	getenv         func(string) string
	// isTerminal reports whether w is a terminal; it picks the output mode.
	isTerminal func(w io.Writer) bool
	// terminalWidth returns w's width in columns, or 0 when unknown.
	terminalWidth func(w io.Writer) int
	// openTTY opens the controlling terminal, where a person answers
	// approvals and questions; nil means there is none.
	openTTY func() (*os.File, error)
	// winch, when set, replaces SIGWINCH as the signal that the window
	// changed size (tests); see shell.go.
	winch <-chan os.Signal

	// Global flags, resolved against the environment before a command runs.
	socket         string
	addr           string
	token          string
	connectTimeout time.Duration
	// waitForSocket: --connect-timeout was given, so a socket file that
	// does not exist yet, in a directory that does, is waited for (a toold
	// that is starting) instead of failing at once.
	waitForSocket bool
}

// exitError ends a command with a status. A nil err means the command
// already reported what went wrong.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// usageError is a mistake on the command line (exit status 2).
func usageError(format string, args ...any) error {
	return &exitError{code: exitUsage, err: fmt.Errorf(format, args...)}
}

// run executes the command line and maps its outcome to an exit status.
func (a *app) run(ctx context.Context, args []string) int {
	root := a.newRootCmd()
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			fmt.Fprintf(a.stderr, "toolctl: %v\n", ee.err)
		}
		return ee.code
	}
	// Errors of cobra itself: unknown commands, flags, argument counts.
	fmt.Fprintf(a.stderr, "toolctl: %v\nRun 'toolctl --help' for usage.\n", err)
	return exitUsage
}

func (a *app) newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "toolctl",
		Short: "Command-line client of toold, the tool-execution sidecar for LLM agents",
		Long: `toolctl lists the tools toold offers, checks its health, and runs tool calls,
showing their progress live.

It reaches toold on a unix socket (--socket, default ./toold.sock, or
$TOOLD_SOCKET) or on TCP (--addr), and sends a bearer token when one is given
(--token or $TOOLD_TOKEN). Start toold with 'make run'.

As toold's operator (the same user), toolctl sees every conversation's
history, audit records, sessions and todos: it reads the operator credential
operator.key from toold's state directory ($TOOLD_STATE_DIR, default
$XDG_STATE_HOME/toold; or the file $TOOLD_OPERATOR_KEY). Otherwise it sees a
conversation's records with that conversation's secret.

Exit status: 0 on success, 1 when a call ends in error or toold is not
serving, 2 on usage errors and when toold cannot be reached.`,
		Version:       version,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			return a.resolveGlobals(cmd)
		},
	}
	root.SetVersionTemplate("toolctl {{.Version}}\n")
	root.SetIn(a.stdin)
	root.SetOut(a.stdout)
	root.SetErr(a.stderr)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		return &exitError{code: exitUsage, err: fmt.Errorf("%w\nRun 'toolctl --help' for usage.", err)}
	})

	pf := root.PersistentFlags()
	pf.StringVar(&a.socket, "socket", defaultSocket, "unix socket of toold ($TOOLD_SOCKET)")
	pf.StringVar(&a.addr, "addr", "", "reach toold on TCP HOST:PORT instead of the socket")
	pf.StringVar(&a.token, "token", "", "bearer token to send on every RPC ($TOOLD_TOKEN)")
	pf.DurationVar(&a.connectTimeout, "connect-timeout", 5*time.Second, "how long to wait for toold to accept connections (it may be starting)")

	root.AddCommand(a.newToolsCmd(), a.newHealthCmd(), a.newCallCmd())
	root.AddCommand(a.newPolicyCmd(), a.newGrantsCmd())
	root.AddCommand(a.newMCPCmd())
	root.AddCommand(a.newShellCmd())
	root.AddCommand(a.newTodosCmd(), a.newWatchCmd())
	root.AddCommand(a.newHistoryCmd(), a.newAuditCmd(), a.newHookCmd(), a.newRewindCmd())
	root.AddCommand(a.newParseCmd(), a.newPromptCmd())
	return root
}

// resolveGlobals applies the environment to global flags the command line
// did not set, and checks them.
func (a *app) resolveGlobals(cmd *cobra.Command) error {
	flags := cmd.Flags()
	if !flags.Changed("socket") {
		if v := a.getenv("TOOLD_SOCKET"); v != "" {
			a.socket = v
		}
	}
	if !flags.Changed("token") {
		a.token = a.getenv("TOOLD_TOKEN")
	}
	a.waitForSocket = flags.Changed("connect-timeout")
	if flags.Changed("socket") && flags.Changed("addr") {
		return usageError("--socket and --addr exclude each other: toolctl reaches toold on one of them")
	}
	if a.addr == "" && a.socket == "" {
		return usageError("--socket is empty: give the path of toold's socket, or --addr HOST:PORT")
	}
	if a.connectTimeout <= 0 {
		return usageError("--connect-timeout must be positive, got %s", a.connectTimeout)
	}
	return nil
}

// outputMode is how a command presents its output; chosen once per command.
type outputMode int

const (
	// modePlain writes plain lines: for pipes, files and CI logs.
	modePlain outputMode = iota
	// modeHuman draws a live status line on stderr, a terminal.
	modeHuman
	// modeJSON writes machine-readable protojson on stdout.
	modeJSON
)

// outputMode picks the mode: json when asked, human when stderr is a
// terminal, plain otherwise.
func (a *app) outputMode(json bool) outputMode {
	switch {
	case json:
		return modeJSON
	case a.isTerminal(a.stderr):
		return modeHuman
	}
	return modePlain
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

func terminalWidth(w io.Writer) int {
	f, ok := w.(*os.File)
	if !ok {
		return 0
	}
	width, _, err := term.GetSize(int(f.Fd()))
	if err != nil {
		return 0
	}
	return width
}
