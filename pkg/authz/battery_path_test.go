package authz_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toold/toold/pkg/authz"
	"github.com/toold/toold/pkg/tools"
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
	{"symlink", authz.ModeAuto, false, []string{"loop1"}, "", authz.Ask, "builtin:unresolvable-path"},
	{"symlink", authz.ModeYOLO, false, []string{"loop1/x"}, "", authz.Ask, "builtin:unresolvable-path"},
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
	{"proc", authz.ModeAuto, false, []string{"/proc/self/root/etc/passwd"}, "", authz.Ask, ""},
	{"proc", authz.ModeAuto, false, []string{"/proc/self/root/etc/shadow"}, "", authz.Deny, "builtin:sensitive-path"},
	{"proc", authz.ModeAuto, false, []string{"/proc/self/environ"}, "", authz.Deny, "builtin:sensitive-path"},
	{"proc", authz.ModeAuto, false, []string{"/proc/1/environ"}, "", authz.Deny, "builtin:sensitive-path"},
	{"proc", authz.ModeAuto, false, []string{"/proc/self/cwd/x"}, "", authz.Ask, ""},
	{"proc", authz.ModeYOLO, true, []string{"/proc/self/root/tmp/x"}, "", authz.Ask, "builtin:outside-write"},

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
	engines := map[string]*authz.Engine{"": f.engine(t, nil, nil), "example": f.engine(t, loadExample(t), nil)}
	counts := map[string]int{}
	for i, c := range pathBattery {
		paths := make([]string, len(c.paths))
		for k, p := range c.paths {
			paths[k] = f.expand(p)
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
	for _, k := range []string{"inside", "dotdot", "absolute", "symlink", "sensitive", "proc", "invalid", "read-root", "write-inside", "policy", "toctou"} {
		t.Logf("path battery: %-12s %d", k, counts[k])
		total += counts[k]
	}
	t.Logf("path battery: total %d", total)
	if total < 100 {
		t.Errorf("the path battery has %d cases, want at least 100", total)
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
