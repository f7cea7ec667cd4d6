package daemon_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toold/toold/pkg/config"
	"github.com/toold/toold/pkg/daemon/daemontest"
	"github.com/toold/toold/pkg/testenv"
)

// Development still works inside the boundary (issue 25, item 2): through a
// real toold with its default (sandboxed) configuration, an agent builds
// and tests a Go module, a Node project (npm test with node's own test
// runner: no registry), a Python project (unittest, and pytest where it is
// installed), a Rust crate where cargo is installed, and uses git in the
// workspace (reading in commands, committing through the version-control
// tool: the workspace's .git is read-only for commands) — with the
// machine's own toolchains and their caches, wherever they live (GOCACHE
// and the npm cache under HOME here).
func TestDevelopmentStillWorksEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and tests projects")
	}
	for _, prog := range []string{"go", "node", "npm", "python3", "git"} {
		_, err := exec.LookPath(prog)
		testenv.Need(t, err, prog+" (the development test drives it)")
	}
	d := daemontest.Start(t, daemontest.WithConfig(func(c *config.Config) {
		c.ApprovalMode = "yolo"
		// A cold build cache under CI's load compiles the standard library
		// for minutes: the commands' own 300 s timeout must not be capped
		// by the default call timeout (2 min).
		c.Timeouts.Default = config.Duration(8 * time.Minute)
	}))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	c, err := openClient(ctx, d, "dev")
	if err != nil {
		t.Fatal(err)
	}
	defer c.s.CloseSend()
	// What the judge asks about (today: a program the agent built, node
	// -e) a person approves: this test is about the boundary letting
	// development through, not about what the judge asks.
	c.approve = true

	write := func(rel, body string) {
		p := filepath.Join(d.Workspace, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// run runs a command line in dir through toold and fails unless it
	// succeeds and prints every one of want.
	run := func(t *testing.T, dir, line string, want ...string) string {
		t.Helper()
		var out bytes.Buffer
		res, asked, err := c.call("run_command", map[string]any{"command": line, "working_dir": dir, "timeout": 300}, nil, &out)
		if err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		text := ""
		for _, ct := range res.GetContent() {
			text += ct.GetText()
		}
		if asked > 0 {
			t.Logf("%s: the judge asked (approved)", line)
		}
		exit, _ := res.GetStructured().AsMap()["exit_code"].(float64)
		if !res.GetSuccess() || exit != 0 {
			t.Fatalf("%s: failed (exit %v): %v\n%s", line, exit, res.GetError(), text)
		}
		for _, w := range want {
			if !strings.Contains(text, w) {
				t.Errorf("%s: no %q in the output:\n%s", line, w, text)
			}
		}
		return text
	}

	t.Run("go", func(t *testing.T) {
		write("gomod/go.mod", "module example.com/dev\n\ngo 1.22\n")
		write("gomod/sum.go", "package dev\n\n// Sum adds.\nfunc Sum(a, b int) int { return a + b }\n")
		write("gomod/sum_test.go", "package dev\n\nimport \"testing\"\n\nfunc TestSum(t *testing.T) {\n\tif Sum(2, 3) != 5 {\n\t\tt.Fatal(\"2+3\")\n\t}\n}\n")
		write("gomod/cmd/hello/main.go", "package main\n\nimport (\n\t\"fmt\"\n\n\t\"example.com/dev\"\n)\n\nfunc main() { fmt.Println(\"hello\", dev.Sum(40, 2)) }\n")
		run(t, "gomod", "go vet ./... && go build -o hello ./cmd/hello && ./hello", "hello 42")
		run(t, "gomod", "go test -count=1 ./...", "ok")
	})
	t.Run("node", func(t *testing.T) {
		write("node/package.json", `{"name":"dev","version":"1.0.0","private":true,"scripts":{"test":"node --test"}}`+"\n")
		write("node/sum.js", "exports.sum = (a, b) => a + b;\n")
		write("node/test/sum.test.js", "const test = require('node:test');\nconst assert = require('node:assert');\nconst { sum } = require('../sum.js');\ntest('sum', () => { assert.strictEqual(sum(2, 3), 5); });\n")
		run(t, "node", "npm test 2>&1", "pass 1", "fail 0")
		run(t, "node", "npm pack --dry-run >/dev/null 2>&1 && node -e 'console.log(require(\"./sum.js\").sum(40, 2))'", "42")
	})
	t.Run("python", func(t *testing.T) {
		write("py/calc.py", "def add(a, b):\n    return a + b\n")
		write("py/test_calc.py", "import unittest\n\nfrom calc import add\n\n\nclass T(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n\n\nif __name__ == '__main__':\n    unittest.main()\n")
		run(t, "py", "python3 -m unittest -v 2>&1", "OK")
		// pytest writes its cache (.pytest_cache) and bytecode in the
		// project: writes in the workspace.
		for _, py := range []string{"python3", "/usr/bin/python3"} {
			if exec.Command(py, "-c", "import pytest").Run() == nil {
				run(t, "py", py+" -m pytest -q 2>&1", "1 passed")
				return
			}
		}
		t.Log("pytest is not installed; unittest only")
	})
	t.Run("git", func(t *testing.T) {
		write("repo/README.md", "hello\n")
		id := "-c user.name=dev -c user.email=dev@example.com"
		run(t, "repo", "git init -q . && git add README.md && git "+id+" commit -qm first && git log --oneline", "first")
		write("repo/README.md", "hello\nworld\n")
		run(t, "repo", "git status --short", "M README.md")
		run(t, "repo", "git diff", "+world")
		run(t, "repo", "git log --oneline && git show --stat HEAD && git grep -n hello && git blame README.md", "first", "README.md:1:hello")
		// The repository existed when this command started: its .git is
		// read-only here (a person's git would run what a command wrote
		// there), and a git that writes fails with the way out.
		var out bytes.Buffer
		res, _, err := c.call("run_command", map[string]any{"command": "git " + id + " commit -qam second", "working_dir": "repo"}, nil, &out)
		text := ""
		for _, ct := range res.GetContent() {
			text += ct.GetText()
		}
		if err != nil || !strings.Contains(text, "Read-only file system") || !strings.Contains(text, "hint: the workspace's git directories are read-only") {
			t.Fatalf("git commit in a sandboxed command: %v\n%s", err, text)
		}
	})
	t.Run("git tools", func(t *testing.T) {
		// The version-control tools run git on the workspace root.
		run(t, ".", "git init -q . && git config user.name dev && git config user.email dev@example.com && echo a > tracked && git add tracked && git commit -qm init")
		write("tracked", "b\n")
		var out bytes.Buffer
		for _, call := range []struct {
			tool string
			args map[string]any
			want string
		}{
			{"git_status", map[string]any{}, "tracked"},
			{"git_diff", map[string]any{}, "+b"},
			{"git_log", map[string]any{}, "init"},
			// Commits go through the tool: its git has .git writable.
			{"git_commit", map[string]any{"message": "second", "paths": []any{"tracked"}}, "second"},
			{"git_log", map[string]any{}, "second"},
		} {
			out.Reset()
			res, _, err := c.call(call.tool, call.args, nil, &out)
			if err != nil || !res.GetSuccess() {
				t.Fatalf("%s: %v %v", call.tool, err, res.GetError())
			}
			if !strings.Contains(out.String(), call.want) {
				t.Errorf("%s: no %q in %s", call.tool, call.want, out.String())
			}
		}
	})
	t.Run("cargo", func(t *testing.T) {
		if _, err := exec.LookPath("cargo"); err != nil {
			t.Skip("cargo is not installed")
		}
		write("crate/Cargo.toml", "[package]\nname = \"dev\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\n")
		write("crate/src/lib.rs", "pub fn add(a: i32, b: i32) -> i32 { a + b }\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn adds() { assert_eq!(super::add(2, 3), 5); }\n}\n")
		run(t, "crate", "cargo test --offline -q 2>&1", "test result: ok")
	})
}
