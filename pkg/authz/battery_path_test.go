package authz_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/toold/toold/pkg/authz"
	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/tools"
	"github.com/toold/toold/pkg/tools/fileops"
)

// pathCase is one attempt to reach a path the call should not reach
// silently, with the decision it must get.
type pathCase struct {
	category string
	mode     authz.Mode
	write    bool
	paths    []string // {ws}, {home}, {out}, {base}, {rr} are replaced
	policy   string   // "example" for examples/policy.yaml, "" for the default
	want     authz.Decision
	rule     string // when set, the verdict's rule must start with it
}

// pathBattery lists path-escape attempts. Reads go through read_file,
// writes through write_file, as the file tools describe them (paths as the
// model gave them, resolved by the engine the way the kernel will).
var pathBattery = []pathCase{
	// Inside stays inside.
	{"inside", authz.ModeAuto, false, []string{"src/main.go"}, "", authz.Allow, "mode:auto"},
	{"inside", authz.ModeAuto, false, []string{""}, "", authz.Allow, ""},
	{"inside", authz.ModeAuto, false, []string{"."}, "", authz.Allow, ""},
	{"inside", authz.ModeAuto, false, []string{"{ws}/src/main.go"}, "", authz.Allow, ""},
	{"inside", authz.ModeAuto, false, []string{"inner/main.go"}, "", authz.Allow, ""},
	{"inside", authz.ModeAuto, false, []string{".git/config"}, "", authz.Allow, ""},
	{"inside", authz.ModeAuto, false, []string{"%2e%2e/out/file.txt"}, "", authz.Allow, ""},
	{"inside", authz.ModeAuto, false, []string{`..\out\file.txt`}, "", authz.Allow, ""},
	{"inside", authz.ModeAuto, false, []string{" ../out/file.txt"}, "", authz.Allow, ""},
	{"inside", authz.ModeAuto, false, []string{"~"}, "", authz.Allow, ""},
	{"inside", authz.ModeAuto, false, []string{"src/./../src/main.go"}, "", authz.Allow, ""},
	{"inside", authz.ModeAsk, false, []string{"src/main.go"}, "", authz.Ask, "mode:ask"},

	// Dot-dot.
	{"dotdot", authz.ModeAuto, false, []string{"../out/file.txt"}, "", authz.Ask, "mode:auto"},
	{"dotdot", authz.ModeAuto, false, []string{"src/../../out/file.txt"}, "", authz.Ask, ""},
	{"dotdot", authz.ModeAuto, false, []string{"./../out/file.txt"}, "", authz.Ask, ""},
	{"dotdot", authz.ModeAuto, false, []string{"src/../../../../../../../../etc/passwd"}, "", authz.Ask, ""},
	{"dotdot", authz.ModeAuto, false, []string{".."}, "", authz.Ask, ""},
	{"dotdot", authz.ModeAuto, false, []string{"../ws-evil/x"}, "", authz.Ask, ""},
	{"dotdot", authz.ModeAuto, false, []string{"../ws/../out/file.txt"}, "", authz.Ask, ""},
	{"dotdot", authz.ModeAuto, false, []string{"{ws}/../out/file.txt"}, "", authz.Ask, ""},
	{"dotdot", authz.ModeAuto, false, []string{"src/../../ws/../../../../../../../../../../etc/shadow"}, "", authz.Deny, "builtin:sensitive-path"},
	{"dotdot", authz.ModeAuto, true, []string{"../out/new.txt"}, "", authz.Ask, "builtin:outside-write"},
	{"dotdot", authz.ModeYOLO, true, []string{"../out/new.txt"}, "", authz.Ask, "builtin:outside-write"},
	{"dotdot", authz.ModeYOLO, true, []string{"src/../../out/new.txt"}, "", authz.Ask, "builtin:outside-write"},

	// Absolute paths.
	{"absolute", authz.ModeAuto, false, []string{"/etc/passwd"}, "", authz.Ask, ""},
	{"absolute", authz.ModeAuto, false, []string{"//etc//passwd"}, "", authz.Ask, ""},
	{"absolute", authz.ModeAuto, false, []string{"/./etc/../etc/passwd"}, "", authz.Ask, ""},
	{"absolute", authz.ModeAuto, false, []string{"/"}, "", authz.Ask, ""},
	{"absolute", authz.ModeAuto, false, []string{"/etc/shadow"}, "", authz.Deny, "builtin:sensitive-path"},
	{"absolute", authz.ModeAuto, false, []string{"/etc/../etc/shadow"}, "", authz.Deny, "builtin:sensitive-path"},
	{"absolute", authz.ModeAuto, false, []string{"/etc/sudoers"}, "", authz.Deny, "builtin:sensitive-path"},
	{"absolute", authz.ModeAuto, false, []string{"{base}/ws-evil/x"}, "", authz.Ask, ""},
	{"absolute", authz.ModeAuto, false, []string{"{base}/wsx"}, "", authz.Ask, ""},
	{"absolute", authz.ModeAuto, false, []string{"{ws}-evil/x"}, "", authz.Ask, ""},
	{"absolute", authz.ModeYOLO, false, []string{"/etc/passwd"}, "", authz.Allow, "mode:yolo"},
	{"absolute", authz.ModeYOLO, true, []string{"/tmp/toold-test-x"}, "", authz.Ask, "builtin:outside-write"},
	{"absolute", authz.ModeYOLO, true, []string{"{home}/.bashrc"}, "", authz.Ask, "builtin:outside-write"},
	{"absolute", authz.ModeYOLO, true, []string{"/etc/cron.d/evil"}, "", authz.Ask, "builtin:outside-write"},
	{"absolute", authz.ModeYOLO, true, []string{"/dev/sda"}, "", authz.Deny, "builtin:write-devices"},
	{"absolute", authz.ModeYOLO, true, []string{"{ws}/src/new.go"}, "", authz.Allow, ""},

	// Symlinks out of the workspace.
	{"symlink", authz.ModeAuto, false, []string{"link-out/file.txt"}, "", authz.Ask, ""},
	{"symlink", authz.ModeAuto, false, []string{"link-rel-out/file.txt"}, "", authz.Ask, ""},
	{"symlink", authz.ModeAuto, false, []string{"link-etc/passwd"}, "", authz.Ask, ""},
	{"symlink", authz.ModeAuto, false, []string{"link-etc/shadow"}, "", authz.Deny, "builtin:sensitive-path"},
	{"symlink", authz.ModeAuto, false, []string{"link-root/etc/shadow"}, "", authz.Deny, "builtin:sensitive-path"},
	{"symlink", authz.ModeAuto, false, []string{"link-root/etc/hostname"}, "", authz.Ask, ""},
	{"symlink", authz.ModeAuto, false, []string{"chain1/file.txt"}, "", authz.Ask, ""},
	{"symlink", authz.ModeAuto, false, []string{"link-parent/out/file.txt"}, "", authz.Ask, ""},
	{"symlink", authz.ModeAuto, false, []string{"src/up/out/file.txt"}, "", authz.Ask, ""},
	{"symlink", authz.ModeAuto, false, []string{"link-out/../ws-evil/x"}, "", authz.Ask, ""},
	{"symlink", authz.ModeAuto, false, []string{"dangling"}, "", authz.Ask, ""},
	{"symlink", authz.ModeAuto, false, []string{"loop1"}, "", authz.Deny, "builtin:invalid-path"},
	{"symlink", authz.ModeYOLO, false, []string{"loop1/x"}, "", authz.Deny, "builtin:invalid-path"},
	{"symlink", authz.ModeYOLO, true, []string{"link-out/new.txt"}, "", authz.Ask, "builtin:outside-write"},
	{"symlink", authz.ModeYOLO, true, []string{"dangling"}, "", authz.Ask, "builtin:outside-write"},
	{"symlink", authz.ModeYOLO, true, []string{"chain1/new.txt"}, "", authz.Ask, "builtin:outside-write"},
	{"symlink", authz.ModeYOLO, true, []string{"notes/out/x"}, "", authz.Ask, "builtin:outside-write"},
	{"symlink", authz.ModeYOLO, true, []string{"link-parent/ws/src/x.go"}, "", authz.Allow, ""},
	{"symlink", authz.ModeYOLO, true, []string{"src/up/ws/src/x.go"}, "", authz.Allow, ""},
	{"symlink", authz.ModeYOLO, true, []string{"src/main.go", "link-out/x"}, "", authz.Ask, "builtin:outside-write"},

	// Sensitive paths, directly and through symlinks.
	{"sensitive", authz.ModeAuto, false, []string{".env"}, "", authz.Deny, "builtin:sensitive-path"},
	{"sensitive", authz.ModeAuto, false, []string{".env.example"}, "", authz.Allow, ""},
	{"sensitive", authz.ModeAuto, false, []string{"config/.env.local"}, "", authz.Deny, "builtin:sensitive-path"},
	{"sensitive", authz.ModeAuto, false, []string{"certs/server.pem"}, "", authz.Deny, "builtin:sensitive-path"},
	{"sensitive", authz.ModeAuto, false, []string{"keys/id_ed25519"}, "", authz.Deny, "builtin:sensitive-path"},
	{"sensitive", authz.ModeAuto, false, []string{".ssh/id_rsa"}, "", authz.Deny, "builtin:sensitive-path"},
	{"sensitive", authz.ModeAuto, false, []string{"link-env"}, "", authz.Deny, "builtin:sensitive-path"},
	{"sensitive", authz.ModeAuto, false, []string{"inner/../.env"}, "", authz.Deny, "builtin:sensitive-path"},
	{"sensitive", authz.ModeAuto, false, []string{"innocent.txt"}, "", authz.Deny, "builtin:sensitive-path"},
	{"sensitive", authz.ModeAuto, false, []string{"key.txt"}, "", authz.Deny, "builtin:sensitive-path"},
	{"sensitive", authz.ModeAuto, false, []string{"link-home-ssh/id_rsa"}, "", authz.Deny, "builtin:sensitive-path"},
	{"sensitive", authz.ModeAuto, false, []string{"link-home-ssh"}, "", authz.Deny, "builtin:sensitive-path"},
	{"sensitive", authz.ModeAuto, false, []string{"~/.ssh/id_rsa"}, "", authz.Deny, "builtin:sensitive-path"},
	{"sensitive", authz.ModeAuto, false, []string{"{home}/.ssh/id_rsa"}, "", authz.Deny, "builtin:sensitive-path"},
	{"sensitive", authz.ModeAuto, false, []string{"{home}/.ssh"}, "", authz.Deny, "builtin:sensitive-path"},
	{"sensitive", authz.ModeAuto, false, []string{"{home}/.aws/credentials"}, "", authz.Deny, "builtin:sensitive-path"},
	{"sensitive", authz.ModeAuto, false, []string{"{home}/.gnupg/pubring.kbx"}, "", authz.Deny, "builtin:sensitive-path"},
	{"sensitive", authz.ModeAuto, false, []string{"{home}/.kube/config"}, "", authz.Deny, "builtin:sensitive-path"},
	{"sensitive", authz.ModeAuto, false, []string{"{home}/notes.txt"}, "", authz.Ask, ""},
	{"sensitive", authz.ModeAuto, false, []string{"{home}/.ssh/../notes.txt"}, "", authz.Ask, ""},
	{"sensitive", authz.ModeAuto, false, []string{"/root/.ssh/authorized_keys"}, "", authz.Deny, "builtin:sensitive-path"},
	{"sensitive", authz.ModeAuto, false, []string{"/home/someone/.aws/config"}, "", authz.Deny, "builtin:sensitive-path"},
	{"sensitive", authz.ModeYOLO, false, []string{"/etc/shadow"}, "", authz.Deny, "builtin:sensitive-path"},
	{"sensitive", authz.ModeYOLO, false, []string{"link-home-ssh/id_rsa"}, "", authz.Deny, "builtin:sensitive-path"},
	{"sensitive", authz.ModeYOLO, true, []string{".env"}, "", authz.Deny, "builtin:sensitive-path"},
	{"sensitive", authz.ModeYOLO, true, []string{"config/.env.production"}, "", authz.Deny, "builtin:sensitive-path"},
	{"sensitive", authz.ModeYOLO, true, []string{"link-home-ssh/authorized_keys"}, "", authz.Deny, "builtin:sensitive-path"},
	{"sensitive", authz.ModeYOLO, true, []string{"src/main.go", ".env"}, "", authz.Deny, "builtin:sensitive-path"},
	{"sensitive", authz.ModeYOLO, true, []string{"notes/.env"}, "example", authz.Deny, "builtin:sensitive-path"},

	// /proc and devices.
	{"proc", authz.ModeAuto, false, []string{"/proc/self/root/etc/passwd"}, "", authz.Deny, "builtin:sensitive-path"},
	{"proc", authz.ModeAuto, false, []string{"/proc/self/root/etc/shadow"}, "", authz.Deny, "builtin:sensitive-path"},
	{"proc", authz.ModeAuto, false, []string{"/proc/self/environ"}, "", authz.Deny, "builtin:sensitive-path"},
	{"proc", authz.ModeAuto, false, []string{"/proc/1/environ"}, "", authz.Deny, "builtin:sensitive-path"},
	{"proc", authz.ModeAuto, false, []string{"/proc/self/cwd/x"}, "", authz.Deny, "builtin:sensitive-path"},
	{"proc", authz.ModeYOLO, true, []string{"/proc/self/root/tmp/x"}, "", authz.Deny, "builtin:sensitive-path"},

	// toold's own /proc entry (its pid, its threads by id, self,
	// thread-self) is sensitive in every mode, and every process's environ
	// and mem. {pid} is toold's pid (the test's), {tid} one of its threads.
	{"proc", authz.ModeAuto, false, []string{"/proc/thread-self/environ"}, "", authz.Deny, "builtin:sensitive-path"},
	{"proc", authz.ModeAuto, false, []string{"/proc/{pid}/environ"}, "", authz.Deny, "builtin:sensitive-path"},
	{"proc", authz.ModeAuto, false, []string{"/proc/{pid}/mem"}, "", authz.Deny, "builtin:sensitive-path"},
	{"proc", authz.ModeAuto, false, []string{"/proc/{pid}/fd/0"}, "", authz.Deny, "builtin:sensitive-path"},
	{"proc", authz.ModeAuto, false, []string{"/proc/{pid}/cwd/src/main.go"}, "", authz.Deny, "builtin:sensitive-path"},
	{"proc", authz.ModeYOLO, false, []string{"/proc/{pid}/root/etc/hostname"}, "", authz.Deny, "builtin:sensitive-path"},
	{"proc", authz.ModeAuto, false, []string{"/proc/{pid}/task/{tid}/environ"}, "", authz.Deny, "builtin:sensitive-path"},
	{"proc", authz.ModeAuto, false, []string{"/proc/{tid}/environ"}, "", authz.Deny, "builtin:sensitive-path"},
	{"proc", authz.ModeYOLO, false, []string{"/proc/{tid}/mem"}, "", authz.Deny, "builtin:sensitive-path"},
	{"proc", authz.ModeYOLO, false, []string{"/proc/self/fd"}, "", authz.Deny, "builtin:sensitive-path"},
	{"proc", authz.ModeYOLO, false, []string{"/proc/self/maps"}, "", authz.Deny, "builtin:sensitive-path"},
	{"proc", authz.ModeYOLO, false, []string{"/proc/self/cmdline"}, "", authz.Deny, "builtin:sensitive-path"},
	{"proc", authz.ModeYOLO, false, []string{"/proc/{pid}/status"}, "", authz.Deny, "builtin:sensitive-path"},
	{"proc", authz.ModeAuto, false, []string{"/proc/self/../self/environ"}, "", authz.Deny, "builtin:sensitive-path"},
	{"proc", authz.ModeAuto, false, []string{"//proc//self//environ"}, "", authz.Deny, "builtin:sensitive-path"},
	{"proc", authz.ModeAuto, false, []string{"/proc/./self/mem"}, "", authz.Deny, "builtin:sensitive-path"},
	{"proc", authz.ModeYOLO, false, []string{"/proc/1/task/1/environ"}, "", authz.Deny, "builtin:sensitive-path"},
	{"proc", authz.ModeYOLO, false, []string{"/proc/1/task/1/mem"}, "", authz.Deny, "builtin:sensitive-path"},
	{"proc", authz.ModeAuto, false, []string{"link-proc/environ"}, "", authz.Deny, "builtin:sensitive-path"},
	{"proc", authz.ModeAuto, false, []string{"link-proc-env"}, "", authz.Deny, "builtin:sensitive-path"},
	{"proc", authz.ModeYOLO, true, []string{"/proc/self/mem"}, "", authz.Deny, "builtin:sensitive-path"},
	{"proc", authz.ModeYOLO, true, []string{"/proc/{pid}/oom_score_adj"}, "", authz.Deny, "builtin:sensitive-path"},
	{"proc", authz.ModeYOLO, true, []string{"link-proc/attr/current"}, "", authz.Deny, "builtin:sensitive-path"},
	{"proc", authz.ModeAuto, false, []string{"/proc/cpuinfo"}, "", authz.Ask, "mode:auto"},

	// Invalid paths.
	{"invalid", authz.ModeYOLO, false, []string{"src/main.go\x00../../etc/passwd"}, "", authz.Deny, "builtin:invalid-path"},
	{"invalid", authz.ModeYOLO, true, []string{"\x00"}, "", authz.Deny, "builtin:invalid-path"},

	// Read roots.
	{"read-root", authz.ModeAuto, false, []string{"{rr}/pkg/lib.go"}, "", authz.Allow, "builtin:read-root"},
	{"read-root", authz.ModeAuto, false, []string{"{rr}/../out/file.txt"}, "", authz.Ask, ""},
	{"read-root", authz.ModeAuto, false, []string{"{rr}-evil/x"}, "", authz.Ask, ""},
	{"read-root", authz.ModeAuto, false, []string{"{rr}/escape/file.txt"}, "", authz.Ask, ""},
	{"read-root", authz.ModeAsk, false, []string{"{rr}/pkg/lib.go"}, "", authz.Ask, "mode:ask"},
	{"read-root", authz.ModeYOLO, true, []string{"{rr}/pkg/lib.go"}, "", authz.Ask, "builtin:outside-write"},

	// Writes inside: medium risk.
	{"write-inside", authz.ModeAuto, true, []string{"src/new.go"}, "", authz.Ask, "mode:auto"},
	{"write-inside", authz.ModeYOLO, true, []string{"src/new.go"}, "", authz.Allow, "mode:yolo"},
	{"write-inside", authz.ModeAsk, true, []string{"src/new.go"}, "", authz.Ask, "mode:ask"},
	{"write-inside", authz.ModeYOLO, true, []string{".git/hooks/pre-commit"}, "", authz.Ask, "builtin:git-internals"},
	{"write-inside", authz.ModeYOLO, true, []string{".git/config"}, "", authz.Ask, "builtin:git-internals"},
	{"write-inside", authz.ModeYOLO, true, []string{"vendor/x/.git/hooks/post-checkout"}, "", authz.Ask, "builtin:git-internals"},

	// Files that redirect git: everything in .git, and a file named .git
	// (its gitdir: line), ask before they are written, in every mode.
	{"git-internals", authz.ModeYOLO, true, []string{".git/commondir"}, "", authz.Ask, "builtin:git-internals"},
	{"git-internals", authz.ModeYOLO, true, []string{"sub/.git"}, "", authz.Ask, "builtin:git-internals"},
	{"git-internals", authz.ModeYOLO, true, []string{".git"}, "", authz.Ask, "builtin:git-internals"},
	{"git-internals", authz.ModeYOLO, true, []string{".git/objects/info/alternates"}, "", authz.Ask, "builtin:git-internals"},
	{"git-internals", authz.ModeYOLO, true, []string{".git/info/exclude"}, "", authz.Ask, "builtin:git-internals"},
	{"git-internals", authz.ModeYOLO, true, []string{".git/packed-refs"}, "", authz.Ask, "builtin:git-internals"},
	{"git-internals", authz.ModeYOLO, true, []string{".git/refs/heads/main"}, "", authz.Ask, "builtin:git-internals"},
	{"git-internals", authz.ModeYOLO, true, []string{"src/../.git/hooks/pre-push"}, "", authz.Ask, "builtin:git-internals"},
	{"git-internals", authz.ModeYOLO, true, []string{"./.git/modules/x/hooks/pre-commit"}, "", authz.Ask, "builtin:git-internals"},
	{"git-internals", authz.ModeYOLO, true, []string{"vendor/lib/.git"}, "", authz.Ask, "builtin:git-internals"},
	{"git-internals", authz.ModeYOLO, true, []string{"link-git/hooks/pre-commit"}, "", authz.Ask, "builtin:git-internals"},
	{"git-internals", authz.ModeYOLO, true, []string{".git/worktrees/w/commondir"}, "", authz.Ask, "builtin:git-internals"},
	{"git-internals", authz.ModeYOLO, true, []string{"{ws}/.git/config"}, "", authz.Ask, "builtin:git-internals"},
	{"git-internals", authz.ModeAuto, true, []string{"src/x.go", "sub/.git"}, "", authz.Ask, "builtin:git-internals"},
	{"git-internals", authz.ModeYOLO, true, []string{".gitmodules"}, "", authz.Allow, "mode:yolo"},

	// Rules of examples/policy.yaml.
	{"policy", authz.ModeAuto, true, []string{"/tmp/toold-scratch/x"}, "example", authz.Allow, "scratch-outside"},
	{"policy", authz.ModeAuto, true, []string{"/tmp/toold-scratch/../x"}, "example", authz.Ask, "builtin:outside-write"},
	{"policy", authz.ModeAuto, true, []string{"/tmp/toold-scratch-evil/x"}, "example", authz.Ask, "builtin:outside-write"},
	{"policy", authz.ModeAuto, true, []string{".github/workflows/ci.yml"}, "example", authz.Ask, "ci-workflows"},
	{"policy", authz.ModeYOLO, true, []string{".github/workflows/ci.yml"}, "example", authz.Ask, "ci-workflows"},
	{"policy", authz.ModeAuto, true, []string{"notes/plan.md"}, "example", authz.Allow, "agent-scratch"},
	{"policy", authz.ModeAuto, true, []string{"notes/../src/main.go"}, "example", authz.Ask, "mode:auto"},
	{"policy", authz.ModeAuto, true, []string{"notes/out/x"}, "example", authz.Ask, "builtin:outside-write"},
	{"policy", authz.ModeAuto, false, []string{"{home}/go/pkg/mod/x/y.go"}, "example", authz.Allow, "builtin:read-root"},
}

func TestPathBattery(t *testing.T) {
	f := newFixture(t)
	for link, target := range map[string]string{
		"link-proc":     "/proc/self",
		"link-proc-env": fmt.Sprintf("/proc/%d/environ", os.Getpid()),
		"link-git":      ".git",
	} {
		if err := os.Symlink(target, filepath.Join(f.ws, link)); err != nil {
			t.Fatal(err)
		}
	}
	engines := map[string]*authz.Engine{"": f.engine(t, nil, nil), "example": f.engine(t, loadExample(t), nil)}
	counts := map[string]int{}
	for i, c := range pathBattery {
		paths := make([]string, len(c.paths))
		for k, p := range c.paths {
			paths[k] = f.expand(procExpand(t, p))
		}
		verb := "read"
		if c.write {
			verb = "write"
		}
		name := strings.ReplaceAll(strings.Join(c.paths, "+"), "/", "_")
		t.Run(c.category+"/"+c.mode.String()+"/"+verb+"/"+name, func(t *testing.T) {
			req := readReq(c.mode, paths...)
			if c.write {
				req = writeReq(c.mode, paths...)
			}
			v := authorize(t, engines[c.policy], req)
			if v.Decision != c.want {
				t.Fatalf("case %d %s %v: got %s (%s: %s), want %s", i, verb, paths, v.Decision, v.Rule, v.Reason, c.want)
			}
			if c.rule != "" && !strings.HasPrefix(v.Rule, c.rule) {
				t.Errorf("case %d: rule %q, want %q (%s)", i, v.Rule, c.rule, v.Reason)
			}
			if v.Decision == authz.Deny && len(v.Outside) > 0 {
				t.Errorf("a deny lists outside paths: %v", v.Outside)
			}
			// Nothing outside is ever written without a person or a
			// rule naming it.
			if c.write && v.Decision == authz.Allow && c.policy == "" {
				for _, p := range v.Outside {
					t.Errorf("allowed a write outside the workspace without approval: %s", p)
				}
			}
		})
		counts[c.category]++
	}
	n := addTOCTOU(t, f)
	counts["toctou"] += n
	total := 0
	counts["command-path"] += testCommandPaths(t, f, engines[""])
	counts["at-use"] += addAtUse(t, f)
	for _, k := range []string{"inside", "dotdot", "absolute", "symlink", "sensitive", "proc", "invalid", "read-root", "write-inside", "git-internals", "policy", "toctou", "command-path", "at-use"} {
		t.Logf("path battery: %-12s %d", k, counts[k])
		total += counts[k]
	}
	t.Logf("path battery: total %d", total)
	if total < 234 {
		t.Errorf("the path battery has %d cases, want at least 234", total)
	}
}

// addTOCTOU swaps path components for symlinks after the engine allowed a
// call and checks that the operation, done the way the tools do it
// (through the workspace root, or a root from RootFor), cannot follow the
// swap outside. It returns the number of attempts.
func addTOCTOU(t *testing.T, f *fixture) int {
	e := f.engine(t, nil, nil)
	n := 0
	attempt := func(name string, fn func(t *testing.T)) {
		n++
		t.Run("toctou/"+name, fn)
	}
	outside := func(t *testing.T, err error) {
		t.Helper()
		if err == nil {
			t.Fatal("the operation followed the swapped symlink")
		}
	}

	attempt("read dir swapped for link out", func(t *testing.T) {
		mkdir(t, f.ws+"/swap1")
		writeFile(t, f.ws+"/swap1/file.txt")
		if v := authorize(t, e, readReq(authz.ModeAuto, "swap1/file.txt")); v.Decision != authz.Allow {
			t.Fatalf("got %s", v.Decision)
		}
		swapForLink(t, f.ws+"/swap1", f.out)
		fh, err := f.w.Root().Open("swap1/file.txt")
		if err == nil {
			fh.Close()
		}
		outside(t, err)
	})
	attempt("write dir swapped for link to ~/.ssh", func(t *testing.T) {
		mkdir(t, f.ws+"/swap2")
		if v := authorize(t, e, writeReq(authz.ModeYOLO, "swap2/authorized_keys")); v.Decision != authz.Allow {
			t.Fatalf("got %s", v.Decision)
		}
		swapForLink(t, f.ws+"/swap2", f.home+"/.ssh")
		fh, err := f.w.Root().OpenFile("swap2/authorized_keys", os.O_CREATE|os.O_WRONLY, 0o644)
		if err == nil {
			fh.Close()
		}
		outside(t, err)
		if _, err := os.Stat(f.home + "/.ssh/authorized_keys"); !errors.Is(err, fs.ErrNotExist) {
			t.Fatal("a file was created in ~/.ssh")
		}
	})
	attempt("file swapped for link out", func(t *testing.T) {
		writeFile(t, f.ws+"/swap3.txt")
		if v := authorize(t, e, writeReq(authz.ModeYOLO, "swap3.txt")); v.Decision != authz.Allow {
			t.Fatalf("got %s", v.Decision)
		}
		swapForLink(t, f.ws+"/swap3.txt", f.out+"/file.txt")
		fh, err := f.w.Root().OpenFile("swap3.txt", os.O_WRONLY|os.O_TRUNC, 0o644)
		if err == nil {
			fh.Close()
		}
		outside(t, err)
	})
	attempt("directory swapped for link to /etc", func(t *testing.T) {
		mkdir(t, f.ws+"/swap4")
		if v := authorize(t, e, writeReq(authz.ModeYOLO, "swap4/hosts")); v.Decision != authz.Allow {
			t.Fatalf("got %s", v.Decision)
		}
		swapForLink(t, f.ws+"/swap4", "/etc")
		fh, err := f.w.Root().OpenFile("swap4/hosts", os.O_WRONLY, 0o644)
		if err == nil {
			fh.Close()
		}
		outside(t, err)
	})
	attempt("approved outside dir swapped for link to ~/.ssh", func(t *testing.T) {
		mkdir(t, f.out+"/approved")
		v := authorize(t, e, writeReq(authz.ModeYOLO, f.out+"/approved/new.txt"))
		if v.Decision != authz.Ask || len(v.Outside) != 1 || v.Outside[0] != f.out+"/approved/new.txt" {
			t.Fatalf("got %s %v", v.Decision, v.Outside)
		}
		loc, err := f.w.Resolve(f.out + "/approved/new.txt")
		if err != nil {
			t.Fatal(err)
		}
		swapForLink(t, f.out+"/approved", f.home+"/.ssh")
		_, _, closeFn, err := f.w.RootFor(loc)
		if err == nil {
			closeFn()
		}
		outside(t, err)
	})
	attempt("approved outside parent swapped higher up", func(t *testing.T) {
		mkdir(t, f.out+"/p1/p2")
		loc, err := f.w.Resolve(f.out + "/p1/p2/new.txt")
		if err != nil {
			t.Fatal(err)
		}
		swapForLink(t, f.out+"/p1", f.home)
		_, _, closeFn, err := f.w.RootFor(loc)
		if err == nil {
			closeFn()
		}
		outside(t, err)
	})
	attempt("outside allowance covers only the approved path", func(t *testing.T) {
		v := authorize(t, e, writeReq(authz.ModeYOLO, f.out+"/only/this.txt"))
		call := &tools.Call{Outside: v.Outside}
		if !call.OutsideAllowed(f.out + "/only/this.txt") {
			t.Fatal("the approved path is not allowed")
		}
		for _, p := range []string{f.out + "/only/this.txt-evil", f.out + "/only", f.out + "/file.txt", f.home + "/.ssh/id_rsa"} {
			if call.OutsideAllowed(p) {
				t.Errorf("%s allowed", p)
			}
		}
	})
	attempt("symlink created inside after the check of a new file", func(t *testing.T) {
		if v := authorize(t, e, writeReq(authz.ModeYOLO, "later.txt")); v.Decision != authz.Allow {
			t.Fatalf("got %s", v.Decision)
		}
		if err := os.Symlink(f.home+"/.bashrc", f.ws+"/later.txt"); err != nil {
			t.Fatal(err)
		}
		fh, err := f.w.Root().OpenFile("later.txt", os.O_WRONLY|os.O_TRUNC, 0o644)
		if err == nil {
			fh.Close()
		}
		outside(t, err)
	})
	return n
}

// swapForLink replaces p with a symlink to target.
func swapForLink(t *testing.T, p, target string) {
	t.Helper()
	if err := os.RemoveAll(p); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, p); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Clean(p)); err != nil {
		t.Fatal(err)
	}
}

// procExpand replaces {pid} with the process's pid and {tid} with the id of
// one of its other threads.
func procExpand(t *testing.T, s string) string {
	if !strings.Contains(s, "{pid}") && !strings.Contains(s, "{tid}") {
		return s
	}
	pid := strconv.Itoa(os.Getpid())
	tid := pid
	ents, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if e.Name() != pid {
			tid = e.Name()
		}
	}
	return strings.NewReplacer("{pid}", pid, "{tid}", tid).Replace(s)
}

// commandPathBattery lists command lines that name toold's /proc entry, or
// redirect git, through the paths the command judge extracts (the
// sensitive-path list is shared with the file tools).
var commandPathBattery = []struct {
	line string
	want authz.Decision
	rule string
}{
	{"cat /proc/{pid}/environ", authz.Deny, "builtin:sensitive-path"},
	{"cat /proc/thread-self/environ", authz.Deny, "builtin:sensitive-path"},
	{"xxd /proc/{pid}/mem", authz.Deny, "builtin:sensitive-path"},
	{"ls -l /proc/{pid}/fd", authz.Deny, "builtin:sensitive-path"},
	{"cat /proc/{tid}/environ", authz.Deny, "builtin:sensitive-path"},
	{`tr '\0' '\n' < /proc/self/environ`, authz.Deny, "builtin:sensitive-path"},
	{"strings /proc/1/task/1/environ", authz.Deny, "builtin:sensitive-path"},
	{"cat /proc/{pid}/root/etc/hostname", authz.Deny, "builtin:sensitive-path"},
	{"head -c 100 /proc/[0-9]*/fd/3", authz.Deny, "builtin:sensitive-path"},
	{"echo 'gitdir: ../x' > sub/.git", authz.Ask, "builtin:git-internals"},
	{"echo ../../x > .git/commondir", authz.Ask, "builtin:git-internals"},
	{"cp src/main.go .git/hooks/pre-commit", authz.Ask, "builtin:git-internals"},
	// What is not toold's own stays usable.
	{"echo hi > /dev/stderr", authz.Allow, "mode:yolo"},
	{"cat /proc/cpuinfo", authz.Allow, "mode:yolo"},
	{"cat /dev/stdin | wc -l", authz.Allow, "mode:yolo"},
}

func testCommandPaths(t *testing.T, f *fixture, e *authz.Engine) int {
	for _, c := range commandPathBattery {
		line := procExpand(t, c.line)
		t.Run("command-path/"+strings.ReplaceAll(c.line, "/", "_"), func(t *testing.T) {
			v := authorize(t, e, cmdReq(authz.ModeYOLO, line))
			if v.Decision != c.want || !strings.HasPrefix(v.Rule, c.rule) {
				t.Fatalf("%s: got %s (%s: %s), want %s (%s)", line, v.Decision, v.Rule, v.Reason, c.want, c.rule)
			}
		})
	}
	return len(commandPathBattery)
}

// addAtUse attacks the file tools between the decision and the operation,
// live: the engine decides a call (an ask counts as approved), then the
// attack swaps files for symlinks, makes hard links or names toold's /proc
// entry, and the real file_operations tool runs the call with the engine as
// its guard. Every attempt must be refused with ErrDenied, leaving the
// canaries unread and unchanged. It returns the number of attempts.
func addAtUse(t *testing.T, f *fixture) int {
	e := f.engine(t, nil, nil)
	tool := fileops.New(f.w, tools.Limits{}, fileops.Options{Sensitive: e.Sensitive, Guard: e})
	canaries := map[string]string{
		f.ws + "/.env":                   "ENV-CANARY\n",
		f.ws + "/config/.env.local":      "LOCAL-CANARY\n",
		f.ws + "/certs/server.pem":       "PEM-CANARY\n",
		f.ws + "/au-vault.key/f":         "VAULT-CANARY\n",
		f.ws + "/.git/hooks/pre-commit":  "#!/bin/sh\necho HOOK-CANARY\n",
		f.ws + "/.git/config":            "[core]\n\tCONFIG-CANARY = 1\n",
		f.home + "/.ssh/id_rsa":          "SSH-CANARY\n",
		f.home + "/.aws/credentials":     "AWS-CANARY\n",
		f.home + "/.bashrc":              "BASHRC-CANARY\n",
		f.ws + "/au-plain/shared.txt":    "plain\n",
		f.ws + "/au-plain/sub/other.txt": "other\n",
	}
	for p, c := range canaries {
		mkdir(t, filepath.Dir(p))
		if err := os.WriteFile(p, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	marks := []string{"ENV-CANARY", "LOCAL-CANARY", "PEM-CANARY", "VAULT-CANARY", "HOOK-CANARY", "CONFIG-CANARY", "SSH-CANARY", "AWS-CANARY", "BASHRC-CANARY"}
	unchanged := func(t *testing.T) {
		t.Helper()
		for p, c := range canaries {
			b, err := os.ReadFile(p)
			if err != nil || string(b) != c {
				t.Errorf("%s changed: %q, %v", p, b, err)
			}
		}
		for _, p := range []string{f.ws + "/.git/hooks/post-checkout", f.ws + "/.git/hooks2", f.ws + "/au-sub/.git", f.ws + "/.git/commondir"} {
			if _, err := os.Lstat(p); err == nil {
				t.Errorf("%s was created", p)
			}
		}
	}
	leaked := func(t *testing.T, res *tools.Result) {
		t.Helper()
		if res == nil {
			return
		}
		for _, m := range marks {
			if strings.Contains(res.Text, m) || strings.Contains(fmt.Sprint(res.Structured), m) {
				t.Errorf("the result shows %s: %s", m, res.Text)
			}
		}
	}
	risk := map[string]tools.Risk{"read_file": tools.RiskLow, "read_many_files": tools.RiskLow, "list_dir": tools.RiskLow,
		"glob": tools.RiskLow, "grep_search": tools.RiskLow, "delete_path": tools.RiskHigh}
	// decideRun decides the call, lets attack change the tree, and runs it.
	decideRun := func(t *testing.T, op string, args map[string]any, attack func()) (*tools.Result, error) {
		t.Helper()
		call := &tools.Call{ID: "c", ConversationID: "conv", Tool: fileops.ToolName, Operation: op, Args: args}
		r, ok := risk[op]
		if !ok {
			r = tools.RiskMedium
		}
		v := authorize(t, e, &authz.Request{ConversationID: "conv", Mode: authz.ModeYOLO, Tool: fileops.ToolName,
			Operation: op, Args: args, Effect: tool.Describe(call), Risk: r})
		if v.Decision == authz.Deny {
			t.Fatalf("the call was denied when decided (%s: %s); the attack needs an allowed call", v.Rule, v.Reason)
		}
		call.Outside = v.Outside // an ask counts as approved
		if attack != nil {
			attack()
		}
		return tool.Run(context.Background(), call, nil)
	}
	held := func(t *testing.T, res *tools.Result, err error) {
		t.Helper()
		if !errors.Is(err, errdefs.ErrDenied) {
			t.Errorf("got %v (result %v), want an ErrDenied error", err, res)
		}
		leaked(t, res)
		unchanged(t)
	}
	// heldMany checks a read_many_files result: the call succeeds, the
	// attacked file is reported denied, and nothing leaks.
	heldMany := func(t *testing.T, res *tools.Result, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(fmt.Sprint(res.Structured["files"]), "denied:true") {
			t.Errorf("no file was denied: %s", res.Text)
		}
		leaked(t, res)
		unchanged(t)
	}
	file := func(p, c string) { mkdir(t, filepath.Dir(p)); os.WriteFile(p, []byte(c), 0o644) }
	link := func(target, p string) func() {
		return func() { swapForLink(t, p, target) }
	}
	hard := func(target, p string) {
		mkdir(t, filepath.Dir(p))
		if err := os.Link(target, p); err != nil {
			t.Fatal(err)
		}
	}
	args := func(kv ...any) map[string]any {
		m := map[string]any{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	}
	n := 0
	attempt := func(name string, fn func(t *testing.T)) {
		n++
		t.Run("at-use/"+name, fn)
	}

	// Reads: the file (or a directory above it) swapped for a symlink after
	// the decision.
	for i, target := range []string{".env", "config/.env.local", "certs/server.pem", f.home + "/.ssh/id_rsa", "/proc/self/environ", "au-r-chain"} {
		attempt("read_file swapped for a link to "+strings.ReplaceAll(target, "/", "_"), func(t *testing.T) {
			p := fmt.Sprintf("au-r%d.txt", i)
			file(f.ws+"/"+p, "harmless\n")
			if target == "au-r-chain" {
				os.Symlink(".env", f.ws+"/au-r-chain")
			}
			res, err := decideRun(t, "read_file", args("path", p), link(target, f.ws+"/"+p))
			held(t, res, err)
		})
	}
	attempt("read_file directory swapped for a link to a sensitive directory", func(t *testing.T) {
		file(f.ws+"/au-rd/f", "harmless\n")
		res, err := decideRun(t, "read_file", args("path", "au-rd/f"), link("au-vault.key", f.ws+"/au-rd"))
		held(t, res, err)
	})
	attempt("grep_search file swapped for a link to .env", func(t *testing.T) {
		file(f.ws+"/au-g.txt", "ENV\n")
		res, err := decideRun(t, "grep_search", args("pattern", "CANARY", "path", "au-g.txt"), link(".env", f.ws+"/au-g.txt"))
		held(t, res, err)
	})
	attempt("list_dir directory swapped for a link to ~/.ssh", func(t *testing.T) {
		file(f.ws+"/au-ld/x", "x\n")
		res, err := decideRun(t, "list_dir", args("path", "au-ld"), link(f.home+"/.ssh", f.ws+"/au-ld"))
		held(t, res, err)
		if res != nil && strings.Contains(res.Text, "id_rsa") {
			t.Error("listed ~/.ssh")
		}
	})
	attempt("glob directory swapped for a link to a sensitive directory", func(t *testing.T) {
		file(f.ws+"/au-gl/x", "x\n")
		res, err := decideRun(t, "glob", args("pattern", "*", "path", "au-gl"), link("au-vault.key", f.ws+"/au-gl"))
		held(t, res, err)
	})
	attempt("read_many_files named file swapped for a link to .env", func(t *testing.T) {
		file(f.ws+"/au-m.txt", "harmless\n")
		res, err := decideRun(t, "read_many_files", args("paths", []any{"au-m.txt"}), link(".env", f.ws+"/au-m.txt"))
		heldMany(t, res, err)
	})
	// read_many_files patterns match symlinks that read_file refuses.
	for i, target := range []string{"../.env", f.home + "/.aws/credentials", "../certs/server.pem", "/proc/self/environ", "../au-vault.key/f", "../config/.env.local"} {
		attempt("read_many_files pattern matches a link to "+strings.ReplaceAll(target, "/", "_"), func(t *testing.T) {
			dir := fmt.Sprintf("%s/au-mp%d", f.ws, i)
			file(dir+"/a.txt", "harmless\n")
			if err := os.Symlink(target, dir+"/b.txt"); err != nil {
				t.Fatal(err)
			}
			res, err := decideRun(t, "read_many_files", args("paths", []any{fmt.Sprintf("au-mp%d/*.txt", i)}), nil)
			heldMany(t, res, err)
		})
	}

	// Writes: the target, or a directory above it, swapped after the
	// decision; the atomic rename must land on the checked name.
	writes := []struct {
		name, op string
		args     map[string]any
		setup    func()
		attack   func()
	}{
		{"write_file swapped for a link to .env", "write_file", args("path", "au-w1.txt", "content", "pwned"),
			func() { file(f.ws+"/au-w1.txt", "a\n") }, link(".env", f.ws+"/au-w1.txt")},
		{"write_file swapped for a link to .git/hooks/pre-commit", "write_file", args("path", "au-w2.txt", "content", "pwned"),
			func() { file(f.ws+"/au-w2.txt", "a\n") }, link(".git/hooks/pre-commit", f.ws+"/au-w2.txt")},
		{"write_file directory swapped for a link to .git/hooks", "write_file", args("path", "au-w3/pre-commit", "content", "pwned"),
			func() { file(f.ws+"/au-w3/pre-commit", "a\n") }, link(".git/hooks", f.ws+"/au-w3")},
		{"write_file new file, a link to .git/config appears", "write_file", args("path", "au-w4.txt", "content", "pwned"),
			nil, func() { os.Symlink(".git/config", f.ws+"/au-w4.txt") }},
		{"write_file swapped for a link to a new sub/.git", "write_file", args("path", "au-w5.txt", "content", "gitdir: ../x"),
			func() { file(f.ws+"/au-w5.txt", "a\n"); mkdir(t, f.ws+"/au-sub") }, link("au-sub/.git", f.ws+"/au-w5.txt")},
		{"write_file directory swapped for a link to .git (commondir)", "write_file", args("path", "au-w6/commondir", "content", "../x"),
			func() { mkdir(t, f.ws+"/au-w6") }, link(".git", f.ws+"/au-w6")},
		{"write_file swapped for a link to ~/.bashrc", "write_file", args("path", "au-w7.txt", "content", "pwned"),
			func() { file(f.ws+"/au-w7.txt", "a\n") }, link(f.home+"/.bashrc", f.ws+"/au-w7.txt")},
		{"write_file swapped for a link to the private key", "write_file", args("path", "au-w8.txt", "content", "pwned"),
			func() { file(f.ws+"/au-w8.txt", "a\n") }, link("certs/server.pem", f.ws+"/au-w8.txt")},
		{"edit_file swapped for a link to .git/config", "edit_file", args("path", "au-e1.txt", "old_string", "CONFIG-CANARY", "new_string", "fsmonitor"),
			func() { file(f.ws+"/au-e1.txt", "CONFIG-CANARY\n") }, link(".git/config", f.ws+"/au-e1.txt")},
		{"edit_file swapped for a link to .env", "edit_file", args("path", "au-e2.txt", "old_string", "ENV-CANARY", "new_string", "x"),
			func() { file(f.ws+"/au-e2.txt", "ENV-CANARY\n") }, link(".env", f.ws+"/au-e2.txt")},
		{"create_file, a link to .git/hooks/post-checkout appears", "create_file", args("path", "au-c1.txt", "content", "pwned"),
			nil, func() { os.Symlink(".git/hooks/post-checkout", f.ws+"/au-c1.txt") }},
		{"delete_path directory swapped for a link to a sensitive directory", "delete_path", args("path", "au-d1/f"),
			func() { file(f.ws+"/au-d1/f", "a\n") }, link("au-vault.key", f.ws+"/au-d1")},
		{"move_path source directory swapped for a link to a sensitive directory", "move_path", args("source", "au-mv1/f", "destination", "au-mv1-out.txt"),
			func() { file(f.ws+"/au-mv1/f", "a\n") }, link("au-vault.key", f.ws+"/au-mv1")},
		{"move_path destination directory swapped for a link to .git/hooks", "move_path", args("source", "au-mv2.txt", "destination", "au-mv2d/post-checkout"),
			func() { file(f.ws+"/au-mv2.txt", "echo pwned\n"); mkdir(t, f.ws+"/au-mv2d") }, link(".git/hooks", f.ws+"/au-mv2d")},
		{"make_dir parent swapped for a link to .git", "make_dir", args("path", "au-md/hooks2"),
			func() { mkdir(t, f.ws+"/au-md") }, link(".git", f.ws+"/au-md")},
		// Git directories not named .git: the target of a gitdir: line, a
		// linked worktree's directory (commondir), a bare repository.
		{"write_file into the hooks of a gitdir: target", "write_file", args("path", "au-store/hooks/pre-commit", "content", "pwned"),
			func() {
				gitDir(t, f.ws+"/au-store")
				file(f.ws+"/au-sub2/.git", "gitdir: ../au-store\n")
			}, nil},
		{"write_file the config of a gitdir: target", "write_file", args("path", "au-store/config", "content", "[core]\n\tfsmonitor = x\n"),
			func() { gitDir(t, f.ws+"/au-store") }, nil},
		{"write_file in a worktree's git directory (commondir)", "write_file", args("path", "au-wt/commondir", "content", "../../au-evil"),
			func() {
				file(f.ws+"/au-wt/HEAD", "ref: refs/heads/main\n")
				file(f.ws+"/au-wt/commondir", "../au-store\n")
			}, nil},
		{"make_dir in a bare repository", "make_dir", args("path", "au-bare.git/hooks/x"),
			func() { gitDir(t, f.ws+"/au-bare.git") }, nil},
		{"write_file into a bare repository through a link", "write_file", args("path", "au-bare-link/hooks/post-merge", "content", "pwned"),
			func() { gitDir(t, f.ws+"/au-bare.git"); os.Symlink("au-bare.git", f.ws+"/au-bare-link") }, nil},
	}
	for _, w := range writes {
		attempt(w.name, func(t *testing.T) {
			if w.setup != nil {
				w.setup()
			}
			res, err := decideRun(t, w.op, w.args, w.attack)
			held(t, res, err)
		})
	}
	attempt("approved write through an existing link to .git/config is refused at use", func(t *testing.T) {
		os.Symlink(".git/config", f.ws+"/au-cfg")
		res, err := decideRun(t, "write_file", args("path", "au-cfg", "content", "[core]\n\tfsmonitor = x\n"), nil)
		held(t, res, err)
	})

	// Hard links in the workspace to sensitive files.
	hardReads := []struct{ name, target string }{
		{"~/.ssh/id_rsa", f.home + "/.ssh/id_rsa"},
		{".env", f.ws + "/.env"},
		{"~/.aws/credentials", f.home + "/.aws/credentials"},
		{"certs/server.pem", f.ws + "/certs/server.pem"},
		{"a file in a sensitive directory", f.ws + "/au-vault.key/f"},
	}
	for i, h := range hardReads {
		attempt("read_file hard link to "+h.name, func(t *testing.T) {
			p := fmt.Sprintf("au-h%d/notes.txt", i)
			hard(h.target, f.ws+"/"+p)
			res, err := decideRun(t, "read_file", args("path", p), nil)
			held(t, res, err)
		})
	}
	attempt("read_many_files pattern matches a hard link to ~/.ssh/id_rsa", func(t *testing.T) {
		hard(f.home+"/.ssh/id_rsa", f.ws+"/au-hm/a.txt")
		res, err := decideRun(t, "read_many_files", args("paths", []any{"au-hm/*.txt"}), nil)
		heldMany(t, res, err)
	})
	attempt("grep_search of a directory with a hard link to ~/.ssh/id_rsa", func(t *testing.T) {
		hard(f.home+"/.ssh/id_rsa", f.ws+"/au-hg/a.txt")
		file(f.ws+"/au-hg/b.txt", "nothing\n")
		res, err := decideRun(t, "grep_search", args("pattern", "CANARY", "path", "au-hg"), nil)
		if err != nil {
			t.Fatal(err)
		}
		leaked(t, res)
		if res.Structured["files_withheld"] != int64(1) {
			t.Errorf("withheld %v, want 1: %s", res.Structured["files_withheld"], res.Text)
		}
	})
	attempt("grep_search of a hard link to .env named itself", func(t *testing.T) {
		hard(f.ws+"/.env", f.ws+"/au-hg2.txt")
		res, err := decideRun(t, "grep_search", args("pattern", "CANARY", "path", "au-hg2.txt"), nil)
		held(t, res, err)
	})
	attempt("edit_file of a hard link to .env", func(t *testing.T) {
		hard(f.ws+"/.env", f.ws+"/au-he.txt")
		res, err := decideRun(t, "edit_file", args("path", "au-he.txt", "old_string", "ENV-CANARY", "new_string", "x"), nil)
		held(t, res, err)
	})
	attempt("write_file preview of a hard link to ~/.ssh/id_rsa", func(t *testing.T) {
		hard(f.home+"/.ssh/id_rsa", f.ws+"/au-hp.txt")
		diff, err := tool.Preview(context.Background(), &tools.Call{Tool: fileops.ToolName, Operation: "write_file",
			Args: args("path", "au-hp.txt", "content", "x")})
		if !errors.Is(err, errdefs.ErrDenied) || strings.Contains(diff, "SSH-CANARY") {
			t.Errorf("preview: %q, %v", diff, err)
		}
	})
	attempt("hard link made after the index was built", func(t *testing.T) {
		// A read of a multi-linked file builds the index.
		hard(f.ws+"/au-plain/shared.txt", f.ws+"/au-plain/sub/shared2.txt")
		if _, err := decideRun(t, "read_file", args("path", "au-plain/sub/shared2.txt"), nil); err != nil {
			t.Fatalf("a hard link to a plain file: %v", err)
		}
		res, err := decideRun(t, "read_file", args("path", "au-late.txt"), func() { hard(f.ws+"/.env", f.ws+"/au-late.txt") })
		held(t, res, err)
	})

	// A deny rule of the policy holds for files a pattern found, and an
	// ask rule refuses them (the decision judged only the pattern's base).
	attempt("read_many_files pattern reaches what a deny rule names", func(t *testing.T) {
		pol, err := authz.ParsePolicy([]byte(`
rules:
  - name: no-secrets-dir
    decision: deny
    operation: read_many_files
    paths: ['au-secrets']
  - name: ask-private
    decision: ask
    paths: ['au-private']
`), "yaml", "test")
		if err != nil {
			t.Fatal(err)
		}
		pe := f.engine(t, pol, nil)
		ptool := fileops.New(f.w, tools.Limits{}, fileops.Options{Sensitive: pe.Sensitive, Guard: pe})
		file(f.ws+"/au-secrets/a.txt", "ENV-CANARY\n")
		file(f.ws+"/au-private/b.txt", "PEM-CANARY\n")
		call := &tools.Call{Tool: fileops.ToolName, Operation: "read_many_files", Args: args("paths", []any{"au-{secrets,private}/*.txt"})}
		v := authorize(t, pe, &authz.Request{ConversationID: "conv", Mode: authz.ModeYOLO, Tool: fileops.ToolName,
			Operation: "read_many_files", Args: call.Args, Effect: ptool.Describe(call), Risk: tools.RiskLow})
		if v.Decision != authz.Allow {
			t.Fatalf("got %s", v.Decision)
		}
		res, err := ptool.Run(context.Background(), call, nil)
		heldMany(t, res, err)
		if got := strings.Count(fmt.Sprint(res.Structured["files"]), "denied:true"); got != 2 {
			t.Errorf("%d files denied, want 2: %s", got, res.Text)
		}
	})

	// toold's /proc entry, even where the call was (wrongly) allowed it.
	for _, p := range []string{"/proc/self/environ", fmt.Sprintf("/proc/%d/environ", os.Getpid()), "/proc/thread-self/environ"} {
		attempt("read_file "+p+" allowed by mistake", func(t *testing.T) {
			call := &tools.Call{Tool: fileops.ToolName, Operation: "read_file", Args: args("path", p), Outside: []string{"/proc"}}
			res, err := tool.Run(context.Background(), call, nil)
			held(t, res, err)
		})
	}
	attempt("list_dir /proc/self/fd allowed by mistake", func(t *testing.T) {
		call := &tools.Call{Tool: fileops.ToolName, Operation: "list_dir", Args: args("path", "/proc/self/fd"), Outside: []string{"/proc"}}
		res, err := tool.Run(context.Background(), call, nil)
		held(t, res, err)
	})
	return n
}

// gitDir makes dir look like a git repository to git: HEAD, objects, refs.
func gitDir(t *testing.T, dir string) {
	t.Helper()
	mkdir(t, dir+"/objects")
	mkdir(t, dir+"/refs/heads")
	mkdir(t, dir+"/hooks")
	if err := os.WriteFile(dir+"/HEAD", []byte("ref: refs/heads/main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}
