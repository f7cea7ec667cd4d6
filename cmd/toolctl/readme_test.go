package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toold/toold/pkg/testenv"
)

// readmeMarker precedes, on the line before its fence, every shell block
// of README.md and docs/*.md that TestReadmeShellBlocks runs verbatim.
const readmeMarker = "<!-- tested: cmd/toolctl/readme_test.go -->"

// shellBlock is a marked ```sh block of a document.
type shellBlock struct {
	doc  string // the file, relative to the repository
	line int    // the line of its opening fence
	text string
}

// markedBlocks returns the marked shell blocks of the repository's docs.
func markedBlocks(t *testing.T, repo string) []shellBlock {
	t.Helper()
	docs, _ := filepath.Glob(filepath.Join(repo, "docs", "*.md"))
	docs = append([]string{filepath.Join(repo, "README.md")}, docs...)
	var out []shellBlock
	for _, doc := range docs {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(repo, doc)
		lines := strings.Split(string(b), "\n")
		for i := 0; i+1 < len(lines); i++ {
			if strings.TrimSpace(lines[i]) != readmeMarker {
				continue
			}
			if lines[i+1] != "```sh" {
				t.Fatalf("%s:%d: the marker is not followed by a ```sh fence", rel, i+1)
			}
			var body []string
			j := i + 2
			for ; j < len(lines) && lines[j] != "```"; j++ {
				body = append(body, lines[j])
			}
			if j == len(lines) {
				t.Fatalf("%s:%d: unterminated block", rel, i+2)
			}
			out = append(out, shellBlock{doc: rel, line: i + 2, text: strings.Join(body, "\n") + "\n"})
		}
	}
	return out
}

// failedLine matches what the ERR trap records: "LINE STATUS".
var failedLine = regexp.MustCompile(`^(\d+) (\d+)$`)

// TestReadmeShellBlocks runs every marked shell block of README.md and
// docs/*.md verbatim with bash, in a directory laid out like a checkout
// (toold.sock, bin/grpcurl, a Makefile, pkg/), against a real toold process
// in AUTO mode, with the toold and toolctl this test builds first on PATH
// (as `make install` puts them). Every command of a block must succeed, except those
// whose line says "asks you first": without a terminal, toolctl denies
// those and exits 1, as the README says.
//
// The TypeScript client's build and install run on a copy of
// clients/typescript (npm ci fetches its dependencies, as for a reader).
// The sidecar recipe (podman and an image build) has a marker of its own:
// cmd/imagebuild's TestReadmeSidecarRecipe runs it.
func TestReadmeShellBlocks(t *testing.T) {
	if testing.Short() {
		t.Skip("builds toold and toolctl")
	}
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	blocks := markedBlocks(t, repo)
	if len(blocks) < 2 {
		t.Fatalf("found %d marked blocks; the README's toolctl and grpcurl blocks are marked", len(blocks))
	}
	grpcurl, err := exec.LookPath("grpcurl")
	if err != nil {
		if p, serr := filepath.Abs("../../bin/grpcurl"); serr == nil {
			if _, serr := os.Stat(p); serr == nil {
				grpcurl, err = p, nil
			}
		}
	}
	testenv.Need(t, err, "grpcurl (make test-deps)")

	bin := t.TempDir()
	for _, cmd := range []string{"toold", "toolctl"} {
		if out, err := exec.Command("go", "build", "-o", filepath.Join(bin, cmd), "../"+cmd).CombinedOutput(); err != nil {
			t.Fatalf("build %s: %v\n%s", cmd, err, out)
		}
	}

	// The checkout the README's blocks run in: the workspace is the
	// current directory, as with make run.
	dir, err := os.MkdirTemp("", "toold-readme") // short: the socket's path
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.MkdirAll(filepath.Join(dir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(grpcurl, filepath.Join(dir, "bin", "grpcurl")); err != nil {
		t.Fatal(err)
	}
	mk, err := os.ReadFile(filepath.Join(repo, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"Makefile":        string(mk),
		"go.mod":          "module example.com/readme\n\ngo 1.22\n",
		"pkg/new.go":      "package pkg\n\nfunc New() int { return 1 }\n",
		"pkg/new_test.go": "package pkg\n",
		// A Node project's dev server, for the terminal section's npm run dev.
		"package.json": `{"name": "readme", "private": true, "scripts": {"dev": "node -e \"setInterval(() => console.log('dev server up'), 200)\""}}` + "\n",
	}
	files["clients/.keep"] = ""
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// A checkout is a git repository: the git lines run in one, with a new
	// file (pkg/x.go) the reader wrote.
	git := exec.Command("sh", "-c", "git init -q && git add -A && git commit -qm 'a checkout' && printf 'package pkg\\n' > pkg/x.go")
	git.Dir = dir
	git.Env = append(os.Environ(), "GIT_AUTHOR_NAME=reader", "GIT_AUTHOR_EMAIL=reader@example.com",
		"GIT_COMMITTER_NAME=reader", "GIT_COMMITTER_EMAIL=reader@example.com", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	if out, err := git.CombinedOutput(); err != nil {
		t.Fatalf("git: %v\n%s", err, out)
	}
	// The Python client's install line installs ./clients/python (pip
	// builds in the source tree: a copy, never the checkout) and runs the
	// README's Python snippet saved as snippet.py, which reads README.md.
	py := exec.Command("/usr/bin/python3", "-c", "import grpc, google.protobuf, venv, setuptools")
	if out, err := py.CombinedOutput(); err != nil {
		testenv.Need(t, fmt.Errorf("%v: %s", err, out), "Debian's python3 with grpcio, protobuf, venv and setuptools (make client-debs)")
	}
	if out, err := exec.Command("cp", "-r", filepath.Join(repo, "clients", "python"), filepath.Join(dir, "clients", "python")).CombinedOutput(); err != nil {
		t.Fatalf("copy the Python client: %v\n%s", err, out)
	}
	// The TypeScript client's build and install line (npm ci, npm run
	// build, npm install) runs on a copy without what a build leaves, and
	// node runs the README's TypeScript snippet saved as snippet.mjs.
	if out, err := exec.Command("node", "-e", "if (+process.versions.node.split('.')[0] < 20) process.exit(1)").CombinedOutput(); err != nil {
		testenv.Need(t, fmt.Errorf("%v: %s", err, out), "Node.js 20 or later with npm")
	}
	if err := copyTree(filepath.Join(repo, "clients", "typescript"), filepath.Join(dir, "clients", "typescript"), "node_modules", "dist", "dist-test"); err != nil {
		t.Fatalf("copy the TypeScript client: %v", err)
	}
	readme, err := os.ReadFile(filepath.Join(repo, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	snippet := regexp.MustCompile("(?s)\n```python\n(.*?)```").FindSubmatch(readme)
	if snippet == nil {
		t.Fatal("no Python snippet in the README")
	}
	tsSnippet := regexp.MustCompile("(?s)\n```ts\n(.*?)```").FindSubmatch(readme)
	if tsSnippet == nil {
		t.Fatal("no TypeScript snippet in the README")
	}
	for name, content := range map[string][]byte{"README.md": readme, "snippet.py": snippet[1], "snippet.mjs": tsSnippet[1]} {
		if err := os.WriteFile(filepath.Join(dir, name), content, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// toold runs as its own process, as with make run in another terminal
	// (toold refuses clients that descend from it: the blocks' shells
	// must not be children of the process that serves).
	sock := filepath.Join(dir, "toold.sock")
	toold := exec.Command(filepath.Join(bin, "toold"), "--socket", sock, "--workspace", dir,
		"--approval-mode", "auto", "--shutdown-grace", "1s")
	// One HOME for toold and the reader, as with make run: toold's state
	// (and its operator credential) is in the default ~/.local/state/toold.
	home := t.TempDir()
	toold.Env = append(os.Environ(), "HOME="+home)
	logs := &strings.Builder{}
	toold.Stderr = logs
	if err := toold.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = toold.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = toold.Process.Signal(syscall.SIGTERM)
		<-exited
	})
	// Wait until it serves: its socket exists (toolctl fails at once
	// without one), then health within toolctl's connect timeout.
	deadline := time.Now().Add(60 * time.Second)
	for {
		if _, err := os.Stat(sock); err == nil {
			break
		}
		select {
		case <-exited:
			t.Fatalf("toold exited:\n%s", logs)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("toold did not open its socket:\n%s", logs)
		}
	}
	if out, err := exec.Command(filepath.Join(bin, "toolctl"), "--socket", sock, "--connect-timeout", "30s", "health").CombinedOutput(); err != nil {
		t.Fatalf("toold is not serving: %v\n%s\n%s", err, out, logs)
	}

	env := []string{"PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH"), "HOME=" + home, "NO_COLOR=1", "TERM=dumb"}
	for _, b := range blocks {
		t.Run(b.doc+":"+strconv.Itoa(b.line), func(t *testing.T) {
			fails := filepath.Join(t.TempDir(), "fails")
			const header = "set -o pipefail\ntrap 's=$?; echo \"$LINENO $s\" >> \"$READMETEST_FAILS\"' ERR\n"
			cmd := exec.Command("bash", "-c", header+b.text)
			cmd.Dir = dir
			cmd.Env = append(env, "READMETEST_FAILS="+fails)
			// Not a terminal: toolctl denies its approvals; the Python
			// snippet's input() reads the "y" that approves its ls. The
			// shell block's toolctl shell reads a line typed into the shell
			// it opens; at the end of its input the shell exits.
			stdin, want := "y\n", ""
			if strings.Contains(b.text, "toolctl shell") {
				stdin, want = "echo readme-shell-$((6*7))\n", "readme-shell-42"
			}
			cmd.Stdin = strings.NewReader(stdin)
			out, err := cmd.CombinedOutput()
			var ee *exec.ExitError
			if err != nil && !errors.As(err, &ee) {
				t.Fatal(err)
			}
			lines := strings.Split(b.text, "\n")
			failed := map[int]int{}
			if f, err := os.Open(fails); err == nil {
				sc := bufio.NewScanner(f)
				for sc.Scan() {
					if m := failedLine.FindStringSubmatch(sc.Text()); m != nil {
						n, _ := strconv.Atoi(m[1])
						code, _ := strconv.Atoi(m[2])
						failed[n-2] = code // the header's two lines
					}
				}
				f.Close()
			}
			for i, line := range lines {
				n := i + 1
				code, bad := failed[n]
				if strings.Contains(line, "asks you first") {
					if !bad || code != exitFailure {
						t.Errorf("%s:%d: %q: exit %d, want %d (denied: no terminal to ask on)", b.doc, b.line+n, line, code, exitFailure)
					}
					continue
				}
				if bad {
					t.Errorf("%s:%d: %q failed with exit %d", b.doc, b.line+n, line, code)
				}
			}
			if want != "" && !strings.Contains(string(out), want) {
				t.Errorf("the output has no %q: the line typed into toolctl shell did not run", want)
			}
			if strings.Contains(string(out), "command not found") {
				t.Errorf("a command is missing")
			}
			if t.Failed() || testing.Verbose() {
				t.Logf("output:\n%s", out)
			}
		})
	}
}

// copyTree copies the regular files and directories under src to dst,
// leaving out the top-level entries named in skip.
func copyTree(src, dst string, skip ...string) error {
	return filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		for _, s := range skip {
			if rel == s {
				return filepath.SkipDir
			}
		}
		target := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(target, 0o755)
		case d.Type().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			return os.WriteFile(target, b, 0o644)
		}
		return nil
	})
}
