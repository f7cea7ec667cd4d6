package authz_test

// A third, adversarial pass over the promises of docs/policy.md (bash
// features, run-time names, /dev/tcp). Each case was a confirmed bypass
// before it was fixed: the engine answered Allow although bash runs
// something a deny rule forbids or runs code the line does not show. Each
// must now be held. Cases marked "live" were reproduced
// with GNU bash 5.2.15 against canary directories under /tmp.

import (
	"fmt"
	"testing"
	"time"

	"github.com/toold/toold/pkg/authz"
)

var attack2Battery = []attackCase{
	// ---- ${var@P}: prompt expansion of a value runs its command substitutions ----
	one("prompt-expansion", auto, true, `x='$(rm -rf ~)'; y=${x@P} ls`,
		"${x@P} expands x as a prompt string; with promptvars (default on) that runs $(rm -rf ~) (live); the judge sees a single-quoted literal and an allowed ls (read-only-commands)"),
	one("prompt-expansion", auto, true, `x='$(rm -rf ~)'; y=${x@P}`,
		"the same in a bare assignment: builtin:no-command allows it in AUTO (live)"),
	one("prompt-expansion", auto, true, `x='$(rm -rf ~)'; a=(${x@P})`,
		"array assignment of ${x@P}: no-command allow"),
	one("prompt-expansion", auto, true, `x='$(rm -rf ~)'; a[${x@P}]=1`,
		"subscript of an assignment expands ${x@P}"),
	one("prompt-expansion", auto, true, `x='$(rm -rf ~)'; case ${x@P} in *) ;; esac`,
		"case subject expands ${x@P}; no command, allowed"),
	one("prompt-expansion", yolo, false, `x='$(rm -rf ~)'; echo ${x@P}`,
		"YOLO: rm -rf ~ runs (live); only a soft dynamic-arguments problem"),
	one("prompt-expansion", yolo, false, "x='`rm -rf ~`'; echo ${x@P}",
		"backquote form of the same"),
	one("prompt-expansion", yolo, false, `p='$(curl http://169.254.169.254/)'; echo ${p@P}`,
		"cloud metadata fetched via prompt expansion in YOLO"),
	one("prompt-expansion", yolo, false, `p='$(cat $HOME/.aws/credentials)'; echo ${p@P}`,
		"reads ~/.aws/credentials via prompt expansion in YOLO"),
	one("prompt-expansion", yolo, false, `set -- '$(rm -rf ~)'; echo ${1@P}`,
		"positional parameter @P"),
	one("prompt-expansion", yolo, false, `f() { echo ${1@P}; }; f '$(rm -rf ~)'`,
		"function argument @P"),
	one("prompt-expansion", yolo, false, `read -r p < x.txt; echo ${p@P}`,
		"run-time value (file content) run as code by @P: must ask in every mode (promise 3), is allowed"),

	one("prompt-expansion", auto, true, "x='$(rm -rf ~)'; cat <<E\n${x@P}\nE",
		"an unquoted here-document body expands ${x@P} (live); AUTO allows cat"),
	one("prompt-expansion", auto, true, `x='$(rm -rf ~)'; cat <<< ${x@P}`, "a here-string expands ${x@P}"),
	one("arith-indirect", auto, true, `x='a[$(rm -rf ~)]'; s=abc; cat <<< "${s:x}"`, "a here-string's substring offset (live)"),

	// ---- declare/export/local/readonly/typeset with a computed name ----
	one("computed-declare", yolo, false, `x=BASH_CMDS; declare $x[cat]=/bin/rm; cat -rf ~`,
		"declare with a name from $x sets BASH_CMDS[cat]=/bin/rm; cat -rf ~ runs rm -rf ~ (live)"),
	one("computed-declare", yolo, false, `x=BASH_CMDS; declare "${x}[cat]=/bin/rm"; cat -rf ~`,
		"same, quoted (live)"),
	one("computed-declare", yolo, false, `x=PS4; declare $x='$(rm -rf ~)'; set -x; ls`,
		"declare sets PS4; xtrace expands it: rm -rf ~ runs (live)"),
	one("computed-declare", yolo, false, `x=PS4; export $x='$(rm -rf ~)'; set -x; ls`,
		"export with a computed name"),
	one("computed-declare", yolo, false, `x=HOME; declare $x={home}/.kube; cat ~/config`,
		"HOME changed through a computed name: cat ~/config reads ~/.kube/config, judged as {home}/config"),
	one("computed-declare", yolo, false, `declare ${x:-PATH}=/tmp/evil; ls`,
		"${x:-PATH} names PATH: ls runs /tmp/evil/ls"),
	one("computed-declare", yolo, false, `x=PATH; typeset "$x"=/tmp/evil; ls`,
		"typeset with a computed name sets PATH"),
	{class: "computed-declare", mode: yolo, pty: true, steps: []string{"x=PROMPT_COMMAND; declare $x='rm -rf ~'\n"},
		why: "interactive: PROMPT_COMMAND set through a computed name runs before the next prompt"},

	// ---- arithmetic contexts evaluate a variable's value as an expression;
	// an array subscript in it runs its command substitution. The judge
	// asks for $((x)), (( )), let, [[ -eq ]], but not for these. ----
	one("arith-indirect", auto, true, `x='a[$(rm -rf ~)]'; s=abc; y=${s:x} ls`,
		"the substring offset of ${s:x} is arithmetic: x's value a[$(rm -rf ~)] is evaluated and its subscript runs rm -rf ~ (live); AUTO allows via read-only-commands"),
	one("arith-indirect", auto, true, `x='a[$(rm -rf ~)]'; s=abc; y=${s:0:x}`,
		"substring length, bare assignment: builtin:no-command (live)"),
	one("arith-indirect", auto, true, `x='a[$(rm -rf ~)]'; b=(1); y=${b[x]} ls`,
		"an indexed array's subscript ${b[x]} is arithmetic (live)"),
	one("arith-indirect", auto, true, `x='a[$(rm -rf ~)]'; b=(1); b[x]=2`,
		"the subscript of an assignment b[x]=2 is arithmetic (live); builtin:no-command"),
	one("arith-indirect", yolo, false, `x='a[$(rm -rf ~)]'; declare -i y=x`,
		"declare -i evaluates the value as arithmetic (live)"),
	one("arith-indirect", yolo, false, `x='a[$(rm -rf ~)]'; declare -i y; y=x`,
		"an assignment to an integer variable is arithmetic (live)"),
	one("arith-indirect", yolo, false, `x='a[$(rm -rf ~)]'; for ((i=x;0;)); do :; done`,
		"the arithmetic for loop evaluates x (live); the judge flags (( x )) but not for (( ))"),
	one("arith-indirect", yolo, false, `x='a[$(rm -rf ~)]'; b=(1); echo ${#b[x]}`,
		"${#b[x]}: the subscript is arithmetic"),
	one("arith-indirect", yolo, false, `read x < f; echo $((x))`,
		"a run-time value (file content) evaluated as arithmetic: a[$(rm -rf ~)] in f runs rm -rf ~ (live); promise 3 says this asks in every mode"),
	one("arith-indirect", yolo, false, `read x < f; b=(1); y=${b[x]}`,
		"the same through an array subscript"),

	// ---- terminal: a line ending in a backslash continues on the next
	// send_input; the session forgets typed text at the newline, so each
	// half is judged alone while bash joins them ----
	{class: "pty-continuation", mode: yolo, pty: true, steps: []string{"rm -rf \\\n", "~\n"},
		why: "bash reads 'rm -rf \\<newline>' as a continued line and then '~': it runs rm -rf ~ (live, two writes to an interactive bash); each half alone is allowed"},
	{class: "pty-continuation", mode: yolo, pty: true, steps: []string{"sh -c \\\n", "'rm -rf ~'\n"},
		why: "joined: sh -c 'rm -rf ~'; the second half alone is a command named 'rm -rf ~'"},
	{class: "pty-continuation", mode: yolo, pty: true, steps: []string{"eval \\\n", "\"rm -rf ~\"\n"},
		why: "joined: eval \"rm -rf ~\""},

	{class: "pty-continuation", mode: yolo, pty: true, steps: []string{"cat {home}/.aw\\\n", "s/credentials\n"},
		why: "a word split by backslash-newline: bash reads cat ~/.aws/credentials"},
	{class: "pty-continuation", mode: yolo, pty: true, steps: []string{"cat .en\\\n", "v\n"},
		why: "bash reads cat .env"},
	{class: "pty-continuation", mode: yolo, pty: true, steps: []string{"curl http://169.254.169.\\\n", "254/latest/meta-data/\n"},
		why: "bash reads curl http://169.254.169.254/latest/meta-data/"},

	// ---- terminal input read by a program that is not the shell ----
	// pty-repl (python3, then decorators that call os.system) is held in
	// pkg/tools/terminal: input typed while another program than the shell
	// is in the terminal's foreground asks in every mode
	// (TestSendInputToAnotherProgram); the judge alone cannot see that.

	// ---- LESSKEYIN: less (>= 582) reads a lesskey source file whose #env
	// section sets LESSOPEN, an input preprocessor run through sh ----
	{class: "env-less", mode: auto, example: true, pty: true, steps: []string{"LESSKEYIN=k git log\n"},
		why: "in a terminal git pages through less; k holds '#env\\nLESSOPEN=|-rm -rf ~; cat %s': less runs it (live, less 590, '|-' applies it to the pipe); AUTO allows (git-read-only)"},
	withEnv(one("env-less", yolo, false, "less README.md",
		"the call's env LESSKEYIN names a lesskey file whose LESSOPEN runs a command (live without a terminal); LESSOPEN itself is a code variable, LESSKEYIN is not"), map[string]string{"LESSKEYIN": "k"}),
	one("env-less", yolo, false, `LESSKEYIN=k less README.md`, "the same as an assignment in the line"),

	// ---- MAILPATH: an interactive bash expands the message of a mail file
	// that grew (command substitution included) before the prompt ----
	{class: "pty-mailpath", mode: auto, example: true, pty: true,
		steps: []string{"MAILPATH='.git/logs/HEAD?$(rm -rf ~)' MAILCHECK=0\n", "git commit --allow-empty -m x\n"},
		why:   "MAILPATH is not a code variable to the judge (builtin:no-command allows it in AUTO); git commit (git-local-work) grows .git/logs/HEAD and at the next prompt bash expands the message: rm -rf ~ runs (live)"},
	{class: "pty-mailpath", mode: yolo, pty: true, steps: []string{"export MAILPATH='m?$(rm -rf ~)'\n", "echo x >> m\n"},
		why: "the same in YOLO with a file the next line grows"},

	// ---- bash -O / +O: glob options set on the command line of the shell
	// that runs the string; the judge globs the string's words without them ----
	one("bash-O-shopt", auto, true, `bash -O dotglob -c 'cat ?env'`,
		"with dotglob ?env matches .env: the secrets print (live); the judge globs ?env without dotglob and finds nothing; AUTO allows (read-only-commands)"),
	one("bash-O-shopt", auto, true, `bash -O dotglob -c 'cat [.]env'`,
		"[.]env matches .env under dotglob (live)"),
	one("bash-O-shopt", auto, true, `bash -O globstar -c 'cat **/.env'`,
		"globstar: **/.env matches ./.env and src/a/.env (live); the line's own 'shopt -s globstar' asks, -O globstar does not"),
	one("bash-O-shopt", auto, true, `bash -O nocaseglob -c 'cat .EN[V]'`,
		"nocaseglob: .EN[V] matches .env (live)"),
	one("bash-O-shopt", auto, true, `bash -O extglob -c 'cat @(.)env'`,
		"extglob: @(.)env matches .env (live); an extglob word is not even flagged here"),

	// ---- git-internals (an ask rule that applies in every mode): writes
	// that land in .git although the path named is not under .git ----
	one("git-internals", yolo, false, `git init --template=evilgit`,
		"git init in an existing repository copies the template's hooks into .git/hooks: evilgit/hooks/pre-commit became .git/hooks/pre-commit and ran on the next commit (live)"),
	one("git-internals", yolo, false, `git init --templ=evilgit`, "parse-options abbreviation of --template"),
	one("git-internals", yolo, false, `git clone --template=evilgit . x`,
		"the clone's x/.git/hooks come from the template: git -C x commit runs them"),
	one("git-internals", yolo, false, `cp -r evil/. .`,
		"evil/.git/hooks/pre-commit is copied into ./.git/hooks (cp merges into the existing .git); the hook ran on commit (live); the path named is '.'"),
	one("git-internals", yolo, false, `cp -rT evil .`, "the same with -T"),
	one("git-internals", yolo, false, `rsync -a evil/ .`, "rsync into . writes .git/hooks (the first pass's fix covers only a destination named .git)"),
	one("git-internals", yolo, false, `tar -C evil -cf - . | tar -xf -`, "a tar pipe copies evil/.git into ./.git"),
	one("git-internals", yolo, false, `rm -rf {ws}`, "deletes the workspace's .git with everything else; rm -rf .git asks"),

	// ---- hosts a program reads from a file or stdin, and metadata
	// endpoints missing from builtin:cloud-metadata ----
	one("host-runtime", yolo, false, `curl -K - <<< "url = http://169.254.169.254/latest/meta-data/"`,
		"curl -K - reads its options (url = ...) from stdin: the here-string names the metadata host in the line itself (live against 127.0.0.1)"),
	one("host-runtime", yolo, false, `curl -K cfg`, "the URL comes from the config file; xargs curl < urls.txt asks (dynamic-target), this does not"),
	one("host-runtime", yolo, false, `wget -i urls.txt`, "wget fetches every URL listed in the file (live against 127.0.0.1)"),
	one("host-runtime", yolo, false, `wget --input-file=urls.txt`, "long form"),
	one("host-runtime", yolo, false, `aria2c -i urls.txt`, "aria2c input file"),
	one("cloud-metadata", yolo, false, `curl http://169.254.170.23/v1/credentials`,
		"the EKS Pod Identity Agent endpoint hands out AWS credentials; the deny list has ECS's 169.254.170.2 but not .23"),
	one("cloud-metadata", yolo, false, `curl http://[fd00:ec2::23]/v1/credentials`, "its IPv6 address"),

	// ---- [!...] bracket negation: bash's glob negates with ! (and ^); the
	// judge globs with Go's filepath.Match, where only ^ negates and ! is a
	// literal, so the pattern matches nothing and no path is checked ----
	one("glob-negation", yolo, false, `cat {home}/.ss[!x]/id_rsa`,
		"bash expands .ss[!x] to .ssh: reads ~/.ssh/id_rsa (live with a canary); even the id_rsa name is not checked"),
	one("glob-negation", yolo, false, `cat {home}/.[!x]sh/*`, "every file of ~/.ssh"),
	one("glob-negation", auto, true, `cat .[!x]nv`, "reads .env (live); AUTO allows (read-only-commands)"),
	one("glob-negation", auto, true, `cat .[!.]*`, "every dot file of the workspace: .env, .env.example (live)"),
	one("glob-negation", auto, true, `cat .ssh/[!x]d_rsa`, "the workspace's .ssh/id_rsa"),
	one("glob-negation", auto, true, `cat < .[!x]nv`, "a redirection's glob (bash expands a redirection word to one file)"),
	one("glob-negation", auto, true, `cat config/.[!x]nv.local`, ".env.local"),

	one("glob-negation", auto, true, `echo x > .[!x]nv`, "the redirection's glob expands to .env: .env is overwritten (live)"),
	one("glob-negation", yolo, false, `cp x .[!x]nv`, "overwrites .env"),
	one("glob-negation", yolo, false, `sed -i s/a/b/ .[!x]nv`, "rewrites .env in place"),
	// Bracket forms of bash's matcher that Go's filepath.Match rejects
	// (ErrBadPattern) or reads differently: the glob then matches nothing.
	one("glob-bracket", yolo, false, `cat {home}/.ss[[:alpha:]]/id_rsa`, "POSIX class: bash reads ~/.ssh/id_rsa"),
	one("glob-bracket", yolo, false, `cat {home}/.aw[[:alpha:]]/c*`, "~/.aws/credentials"),
	one("glob-bracket", auto, true, `cat .[[:lower:]]nv`, "reads .env (live)"),
	one("glob-bracket", auto, true, `cat .e[[:alpha:]]v`, "reads .env (live)"),
	one("glob-bracket", auto, true, "cat .[]e]nv", "a ] first in a bracket is literal in bash: reads .env (live)"),
	one("glob-bracket", auto, true, "cat .[e-]nv", "a trailing - is literal: reads .env (live)"),
	one("glob-bracket", auto, true, "cat .[[=e=]]nv", "equivalence class: reads .env (live)"),
	one("glob-bracket", auto, true, "cat .[[.e.]]nv", "collating symbol: reads .env (live)"),

	// ---- xargs: arguments known only at run time ----
	one("xargs-runtime", yolo, false, `find {home} -type f | xargs cat`,
		"cat reads every file of the home directory, ~/.ssh/id_rsa and ~/.aws/credentials included; the same with cat $(find ~ -type f) asks (dynamic-arguments) and xargs rm asks (dynamic-target), xargs cat is allowed"),
	one("xargs-runtime", yolo, false, `find {home} -type f -print0 | xargs -0 cat`, "the same with -0"),
	one("xargs-runtime", yolo, false, `find {home} -type f | xargs tar cf - | cat`, "tar of the same files"),
	one("xargs-runtime", yolo, false, `git ls-files -z | xargs -0 cat`, "a tracked .env or key file"),

	// ---- a shell given /dev/stdin as its script file: the text fed in is
	// its program, but the judge reads 'bash FILE' (and drops /dev/stdin as
	// a pseudo device), so the fed text is never parsed ----
	one("stdin-script", yolo, false, `bash /dev/stdin <<< 'rm -rf ~'`,
		"bash runs the here-string as its script: rm -rf ~ (live with a canary); bash -s <<< 'rm -rf ~' and bash - <<< ... are denied"),
	one("stdin-script", yolo, false, `sh /dev/stdin <<< 'rm -rf ~'`, "the same with sh"),
	one("stdin-script", yolo, false, "bash /dev/stdin <<'EOF'\nrm -rf ~\nEOF", "a here-document"),
	one("stdin-script", yolo, false, `echo 'rm -rf ~' | bash /dev/stdin`, "a pipe: echo 'rm -rf ~' | bash is denied, this is allowed"),
	one("stdin-script", yolo, false, `printf 'rm -rf ~' | sh /dev/stdin`, "printf into sh /dev/stdin"),
	one("stdin-script", yolo, false, `python3 /dev/stdin <<< 'import os; os.system("rm -rf ~")'`, "an interpreter's program from /dev/stdin"),

	// ---- file names read from a list at run time / history of a secret ----
	one("files0-from", auto, true, `printf '.en\x76\0' | sort --files0-from=-`,
		"sort reads the files named in its stdin list and prints their lines: .env (live); printf's escape hides the name; AUTO allows (read-only-commands)"),
	one("files0-from", yolo, false, `printf '{home}/.a\x77s/credential\x73\0' | sort --files0-from=-`,
		"~/.aws/credentials printed sorted"),
	one("files0-from", auto, true, `sort --files0-from=list`, "the list file names .env"),
	one("files0-from", yolo, false, `printf '.en\x76\n' | tar cf - -T - | tar xOf -`,
		"tar archives the files its stdin names and the second tar prints them: .env (live); cat $(printf '.en\x76') asks, this does not"),
	one("files0-from", yolo, false, `printf '.en\x76' | xargs -0 sed -n p`, "xargs with a name built by printf (live)"),
	one("files0-from", yolo, false, `printf '.en\x76\n' | rsync -a --files-from=- . dst`, "rsync copies .env out"),
	one("git-history-secret", auto, true, `git log -L1,+100:.env`,
		"git log -L prints the lines of .env as committed (live); git show HEAD:.env and git cat-file are denied, -L is not; AUTO allows (git-read-only)"),
	one("git-history-secret", auto, true, `git log -L:SECRET:.env`, "the funcname form"),

	// ---- /dev/tcp, /dev/udp: bash opens the connection itself ----
	one("dev-tcp", yolo, false, `cat < /dev/tcp/169.254.169.254/80`,
		"bash connects to the cloud metadata host for the redirection (live against 127.0.0.1); builtin:cloud-metadata never sees the host"),
	one("dev-tcp", yolo, false, `exec 3</dev/tcp/169.254.169.254/80`,
		"an fd open to the metadata host for later lines"),
	one("dev-tcp", yolo, false, `cat 3</dev/tcp/169.254.169.254/80`,
		"fd 3 redirection"),
	one("dev-tcp", yolo, false, `cat < /dev/tcp/metadata.google.internal/80`,
		"named metadata host"),
	one("dev-tcp", yolo, false, `cat < /dev/tcp/fd00:ec2::254/80`,
		"AWS IPv6 metadata endpoint"),
	one("dev-tcp", yolo, false, `cat < /dev/udp/169.254.169.254/53`,
		"udp form"),
	one("dev-tcp", yolo, false, `bash -c 'cat < /dev/tcp/169.254.169.254/80'`,
		"inside bash -c"),
}

func TestAttack2Battery(t *testing.T) {
	f := bypassFixture(t)
	withExample := f.engine(t, loadExample(t), nil)
	builtin := f.engine(t, nil, nil)
	runAttacks(t, f, withExample, builtin, attack2Battery, func(i int, c attackCase) string {
		return fmt.Sprintf("%02d-%s/%s", i, c.class, c.mode)
	})
}

// TestAttack2Grants approves a call for the conversation as a person would
// (the first command scope offered, AUTO, built-in rules), then makes a call
// the scope did not show; each attempt here was covered by the grant.
func TestAttack2Grants(t *testing.T) {
	f := bypassFixture(t)
	now := time.Unix(1_700_000_000, 0)
	tests := []struct {
		approved string
		attempts []string
		why      string
	}{
		{`bash /dev/stdin <<< 'echo hi'`, []string{`bash /dev/stdin <<< 'rm -rf src'`, `bash /dev/stdin < x.sh`},
			"the scope is 'bash /dev/stdin': the program the person was shown (echo hi) is not part of it, so any fed program runs (live: bash /dev/stdin runs the here-string)"},
		{`python3 /dev/stdin <<< 'print(1)'`, []string{`python3 /dev/stdin <<< 'import shutil; shutil.rmtree("src")'`},
			"the same for an interpreter: an interpreter's grant should name the script it was shown running"},
	}
	for _, tt := range tests {
		t.Run(tt.approved, func(t *testing.T) {
			e := f.engine(t, nil, func() time.Time { return now })
			scope := commandScope(t, e, tt.approved)
			if scope == nil {
				// Held: no conversation grant is offered for it at all.
				t.Logf("%q is offered once only", tt.approved)
				return
			}
			for _, a := range tt.attempts {
				got := authorize(t, e, cmdReq(auto, f.expand(a)))
				if got.Decision == authz.Allow && got.Grant != nil {
					t.Errorf("BYPASS: after approving %q (scope %q: %s), %q was allowed by grant %s\n  why: %s",
						tt.approved, scope.CommandPrefix, scope.Description, a, got.Grant.ID, tt.why)
				}
			}
		})
	}
}
