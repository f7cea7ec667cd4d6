package authz_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toold/toold/pkg/authz"
	"github.com/toold/toold/pkg/tools"
	"github.com/toold/toold/pkg/workspace"
)

// fixture is a real directory tree: a workspace, a fake home with secrets,
// a directory outside, a read root, and symlinks between them.
type fixture struct {
	base, ws, home, out, rr string
	w                       *workspace.Workspace
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{base: base, ws: base + "/ws", home: base + "/home", out: base + "/out", rr: base + "/rr"}
	for _, d := range []string{
		"ws/src", "ws/config", "ws/certs", "ws/keys", "ws/docs", "ws/data", "ws/notes", "ws/.git/hooks", "ws/.ssh",
		"home/.ssh", "home/.aws", "home/.gnupg", "home/.kube", "out/deep", "ws-evil", "wsx", "rr/pkg", "rr-evil",
	} {
		mkdir(t, filepath.Join(base, d))
	}
	for _, p := range []string{
		"ws/src/main.go", "ws/.env", "ws/.env.example", "ws/config/.env.local", "ws/certs/server.pem",
		"ws/keys/id_ed25519", "ws/docs/readme.md", "ws/data/file.txt", "ws/README.md", "ws/.ssh/id_rsa", "ws/.git/config",
		"home/.ssh/id_rsa", "home/.aws/credentials", "home/.gnupg/pubring.kbx", "home/.kube/config",
		"home/notes.txt", "home/.bashrc", "out/file.txt", "out/deep/x", "ws-evil/x", "rr/pkg/lib.go", "rr-evil/x",
	} {
		writeFile(t, filepath.Join(base, p))
	}
	for link, target := range map[string]string{
		"ws/link-out":      f.out,
		"ws/link-rel-out":  "../out",
		"ws/link-home-ssh": f.home + "/.ssh",
		"ws/link-etc":      "/etc",
		"ws/link-root":     "/",
		"ws/inner":         "src",
		"ws/chain1":        "chain2",
		"ws/chain2":        f.out,
		"ws/loop1":         "loop2",
		"ws/loop2":         "loop1",
		"ws/dangling":      f.out + "/newfile",
		"ws/link-parent":   "..",
		"ws/src/up":        "../..",
		"ws/link-env":      ".env",
		"ws/innocent.txt":  f.home + "/.aws/credentials",
		"ws/key.txt":       f.home + "/.ssh/id_rsa",
		"ws/notes/out":     f.out,
		"rr/escape":        f.out,
	} {
		if err := os.Symlink(target, filepath.Join(base, link)); err != nil {
			t.Fatal(err)
		}
	}
	if f.w, err = workspace.Open(f.ws); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.w.Close() })
	return f
}

func mkdir(t testing.TB, p string) {
	t.Helper()
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
}

func writeFile(t testing.TB, p string) {
	t.Helper()
	if err := os.WriteFile(p, []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// expand replaces {ws}, {home}, {out}, {base} and {rr} in s.
func (f *fixture) expand(s string) string {
	return strings.NewReplacer("{ws}", f.ws, "{home}", f.home, "{out}", f.out, "{base}", f.base, "{rr}", f.rr).Replace(s)
}

// engine returns an Engine on the fixture with policy (nil: the default).
func (f *fixture) engine(t testing.TB, policy *authz.Policy, clock func() time.Time) *authz.Engine {
	t.Helper()
	e, err := authz.NewEngine(authz.EngineConfig{
		Workspace: f.w,
		Policy:    policy,
		Home:      f.home,
		ReadRoots: []string{f.rr},
		Clock:     clock,
	})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

var (
	examplePolicyOnce sync.Once
	examplePolicy     *authz.Policy
	examplePolicyErr  error
)

// loadExample loads examples/policy.yaml once.
func loadExample(t testing.TB) *authz.Policy {
	t.Helper()
	examplePolicyOnce.Do(func() {
		examplePolicy, examplePolicyErr = authz.LoadPolicy("../../examples/policy.yaml")
	})
	if examplePolicyErr != nil {
		t.Fatal(examplePolicyErr)
	}
	return examplePolicy
}

func readReq(mode authz.Mode, paths ...string) *authz.Request {
	return &authz.Request{ConversationID: "conv", Mode: mode, Tool: "file_operations", Operation: "read_file",
		Risk: tools.RiskLow, Effect: tools.Effect{Display: "Reading", Reads: paths}}
}

func writeReq(mode authz.Mode, paths ...string) *authz.Request {
	return &authz.Request{ConversationID: "conv", Mode: mode, Tool: "file_operations", Operation: "write_file",
		Risk: tools.RiskMedium, Effect: tools.Effect{Display: "Writing", Writes: paths}}
}

func cmdReq(mode authz.Mode, line string) *authz.Request {
	return &authz.Request{ConversationID: "conv", Mode: mode, Tool: "run_command", Operation: "run_command",
		Risk: tools.RiskHigh, Effect: tools.Effect{Command: line}}
}

// authorize runs Authorize and checks what every verdict carries.
func authorize(t *testing.T, e *authz.Engine, req *authz.Request) authz.Verdict {
	t.Helper()
	v, err := e.Authorize(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if v.Rule == "" || v.Reason == "" {
		t.Errorf("verdict without rule or reason: %+v", v)
	}
	if v.Decision == authz.Ask && (len(v.Scopes) == 0 || v.Scopes[0].ID != "once") {
		t.Errorf("ask without a first scope once: %+v", v.Scopes)
	}
	return v
}
