package vcs

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/procgroup"
)

// gitResult is the outcome of one git run.
type gitResult struct {
	stdout, stderr []byte
	exit           int
}

// maxGitOutput bounds what one git run may print (a diff of a huge tree).
const maxGitOutput = 16 << 20

// safeConfig is given to every git run on the command line, where it wins
// over every config file: nothing a repository's own config names is run.
// Drivers named by the repository's config (filters, diff and merge
// drivers) are found and emptied per run (see driverOverrides).
var safeConfig = []string{
	"core.fsmonitor=false",
	"core.hooksPath=/dev/null",
	"core.pager=cat",
	"core.sshCommand=false",
	"core.gitProxy=",
	"core.askPass=",
	"core.editor=true",
	"sequence.editor=true",
	"credential.helper=",
	"commit.gpgSign=false",
	"tag.gpgSign=false",
	"log.showSignature=false",
	"gpg.program=false",
	"gpg.ssh.program=false",
	"gpg.x509.program=false",
	"diff.external=",
	"interactive.diffFilter=",
	"core.untrackedCache=false",
	"status.showUntrackedFiles=all",
	"color.ui=false",
	"protocol.allow=never",
	// A repository's protocol.<name>.allow wins over protocol.allow: ext
	// (a transport that runs a command) is refused by name too.
	"protocol.ext.allow=never",
	"submodule.recurse=false",
	// Nothing runs git in a submodule (its own config is not overridden
	// here, and its git directory is writable for this git): no summary
	// of a submodule's log, no inline diff of it (diff.submodule=diff
	// runs git diff there). git_status and git_diff pass
	// --ignore-submodules=dirty too: telling a dirty submodule runs git
	// status in it.
	"status.submoduleSummary=false",
	"diff.submodule=short",
	// git commit's status (what is not staged, when nothing is) reads
	// it; git add does not (see stage).
	"diff.ignoreSubmodules=dirty",
	"advice.detachedHead=false",
	"safe.bareRepository=explicit",
}

// driverKeys are config keys (by suffix) whose value git runs.
var driverKeys = []string{".clean", ".smudge", ".process", ".command", ".textconv", ".driver"}

// runGit runs git in the workspace with a minimal environment, no pager,
// editor, prompt or hook, and every program-valued config key overridden.
// A non-zero exit is returned in the result, not as an error.
func (v *VCS) runGit(ctx context.Context, args ...string) (*gitResult, error) {
	if v.gitPath == "" {
		return nil, errdefs.New(errdefs.ErrUnavailable, "git is not installed where toold runs (not found in PATH)")
	}
	over, err := v.driverOverrides(ctx)
	if err != nil {
		return nil, err
	}
	return v.exec(ctx, append(over, args...)...)
}

// runGitMagic is runGit with pathspec magic: its pathspecs must say
// ":(literal)" themselves where they are paths.
func (v *VCS) runGitMagic(ctx context.Context, args ...string) (*gitResult, error) {
	if v.gitPath == "" {
		return nil, errdefs.New(errdefs.ErrUnavailable, "git is not installed where toold runs (not found in PATH)")
	}
	over, err := v.driverOverrides(ctx)
	if err != nil {
		return nil, err
	}
	return v.execArgs(ctx, false, append(over, args...)...)
}

// exec runs git with the safe configuration, without the per-repository
// driver overrides.
func (v *VCS) exec(ctx context.Context, args ...string) (*gitResult, error) {
	return v.execArgs(ctx, true, args...)
}

// execArgs is exec, with pathspecs read literally or not.
func (v *VCS) execArgs(ctx context.Context, literal bool, args ...string) (*gitResult, error) {
	full := []string{"--no-pager", "--no-optional-locks"}
	if literal {
		full = append(full, "--literal-pathspecs")
	}
	for _, c := range safeConfig {
		full = append(full, "-c", c)
	}
	if v.opts.Hooks {
		full = slicesDelete(full, "core.hooksPath=/dev/null")
	}
	full = append(full, args...)
	if v.opts.Exec != nil {
		return v.execSandboxed(ctx, full, args)
	}
	cmd := exec.CommandContext(ctx, v.gitPath, full...)
	cmd.Dir = v.root
	cmd.Env = v.env()
	cmd.Stdin = nil
	procgroup.KillOnCancel(cmd, false, 2*time.Second)
	var out, errb limitedBuffer
	out.max, errb.max = maxGitOutput, 1<<20
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	res := &gitResult{stdout: out.Bytes(), stderr: errb.Bytes()}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case ctx.Err() != nil:
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, errdefs.New(errdefs.ErrTimeout, "git %s did not finish in time", firstWord(args))
		}
		return nil, errdefs.Wrap(errdefs.ErrCanceled, ctx.Err(), "git %s was canceled", firstWord(args))
	case errors.As(err, &ee):
		res.exit = ee.ExitCode()
	default:
		return nil, errdefs.Wrap(errdefs.ErrFailed, err, "cannot run git: %v", err)
	}
	if out.over {
		return nil, errdefs.New(errdefs.ErrResourceExhausted, "git %s printed more than %d MiB; narrow it (paths, n)", firstWord(args), maxGitOutput>>20)
	}
	return res, nil
}

// execSandboxed runs git through Options.Exec (see exec).
func (v *VCS) execSandboxed(ctx context.Context, full, args []string) (*gitResult, error) {
	var out, errb limitedBuffer
	out.max, errb.max = maxGitOutput, 1<<20
	code, err := v.opts.Exec(ctx, v.gitPath, append([]string{"git"}, full...), v.env(), v.root, &out, &errb)
	switch {
	case err == nil:
	case ctx.Err() != nil:
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, errdefs.New(errdefs.ErrTimeout, "git %s did not finish in time", firstWord(args))
		}
		return nil, errdefs.Wrap(errdefs.ErrCanceled, ctx.Err(), "git %s was canceled", firstWord(args))
	default:
		var ee *errdefs.Error
		if errors.As(err, &ee) {
			return nil, err
		}
		return nil, errdefs.Wrap(errdefs.ErrFailed, err, "cannot run git: %v", err)
	}
	if out.over {
		return nil, errdefs.New(errdefs.ErrResourceExhausted, "git %s printed more than %d MiB; narrow it (paths, n)", firstWord(args), maxGitOutput>>20)
	}
	return &gitResult{stdout: out.Bytes(), stderr: errb.Bytes(), exit: code}, nil
}

func slicesDelete(s []string, v string) []string {
	for i, x := range s {
		if x == v {
			return append(s[:i-1], s[i+1:]...) // drop "-c" and the value
		}
	}
	return s
}

func firstWord(args []string) string {
	for i := 0; i < len(args); i++ {
		if args[i] == "-c" {
			i++
			continue
		}
		if !strings.HasPrefix(args[i], "-") {
			return args[i]
		}
	}
	return ""
}

// env is git's environment: only what it needs, nothing that changes what
// it runs.
func (v *VCS) env() []string {
	env := []string{
		"GIT_TERMINAL_PROMPT=0",
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_PAGER=cat",
		"PAGER=cat",
		"GIT_EDITOR=true",
		"GIT_ASKPASS=",
		"SSH_ASKPASS=",
		"GIT_OPTIONAL_LOCKS=0",
		"GIT_CEILING_DIRECTORIES=" + filepath.Dir(v.root),
		// The work tree is the workspace, whatever core.worktree says.
		"GIT_WORK_TREE=" + v.root,
		"LC_ALL=C",
		"TZ=UTC",
	}
	for _, k := range []string{"PATH", "HOME", "USER", "LOGNAME", "TMPDIR"} {
		if val, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+val)
		}
	}
	return env
}

// driverOverrides finds the program-valued keys that the repository's
// configuration (and the files it includes, and the user's) sets — filter
// drivers, diff and merge drivers — and returns -c options that empty
// them, so that no such program runs: an empty filter is no filter, and
// required filters are made optional.
func (v *VCS) driverOverrides(ctx context.Context) ([]string, error) {
	res, err := v.exec(ctx, "config", "--null", "--name-only", "--list")
	if err != nil {
		return nil, err
	}
	if res.exit != 0 {
		return nil, nil // no repository: the command itself will say so
	}
	var out []string
	for _, k := range bytes.Split(res.stdout, []byte{0}) {
		key := strings.ToLower(string(k))
		if key == "" {
			continue
		}
		sect, _, _ := strings.Cut(key, ".")
		switch sect {
		case "filter", "diff", "merge":
		default:
			continue
		}
		for _, suf := range driverKeys {
			if strings.HasSuffix(key, suf) {
				out = append(out, "-c", key+"=")
			}
		}
		if sect == "filter" && strings.HasSuffix(key, ".required") {
			out = append(out, "-c", key+"=false")
		}
	}
	return out, nil
}

// limitedBuffer keeps at most max bytes and remembers that more came.
type limitedBuffer struct {
	bytes.Buffer
	max  int
	over bool
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.Len(); room < len(p) {
		b.over = true
		if room > 0 {
			b.Buffer.Write(p[:room])
		}
		return len(p), nil
	}
	return b.Buffer.Write(p)
}

// failed turns a git run that exited non-zero into an error for the model.
func failed(op string, r *gitResult) error {
	msg := strings.TrimSpace(string(r.stderr))
	if msg == "" {
		msg = strings.TrimSpace(string(r.stdout))
	}
	if len(msg) > 2000 {
		msg = msg[:2000] + "…"
	}
	if strings.Contains(msg, "not a git repository") {
		return errdefs.Failed("%s: the workspace is not a git repository (git searches only the workspace and below): %s", op, msg)
	}
	return errdefs.Failed("%s: git exited %d: %s", op, r.exit, msg)
}

// lines splits NUL- or newline-terminated records.
func records(b []byte, sep byte) []string {
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64<<10), maxGitOutput)
	sc.Split(func(data []byte, atEOF bool) (int, []byte, error) {
		if i := bytes.IndexByte(data, sep); i >= 0 {
			return i + 1, data[:i], nil
		}
		if atEOF && len(data) > 0 {
			return len(data), data, nil
		}
		return 0, nil, nil
	})
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	return out
}

// checkRef refuses a ref that git could read as an option.
func checkRef(field, ref string) error {
	if strings.HasPrefix(ref, "-") || strings.ContainsAny(ref, "\x00\n") {
		return errdefs.Invalid(field, "format", "%s %q is not a revision", strings.TrimPrefix(field, "/"), ref)
	}
	return nil
}

// checkPaths refuses paths that leave the workspace; git reads them
// literally (--literal-pathspecs).
func (v *VCS) checkPaths(paths []string) ([]string, error) {
	out := make([]string, 0, len(paths))
	for i, p := range paths {
		field := fmt.Sprintf("/paths/%d", i)
		if p == "" || strings.ContainsRune(p, 0) {
			return nil, errdefs.Invalid(field, "format", "path %d is empty or has a NUL byte", i)
		}
		abs := p
		if !filepath.IsAbs(abs) {
			abs = filepath.Join(v.root, p)
		}
		abs = filepath.Clean(abs)
		rel, err := filepath.Rel(v.root, abs)
		if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
			return nil, errdefs.New(errdefs.ErrDenied, "path %q is outside the workspace", p)
		}
		out = append(out, rel)
	}
	return out, nil
}
