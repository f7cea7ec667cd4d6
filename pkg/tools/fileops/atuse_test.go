package fileops

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/toold/toold/pkg/authz"
	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/tools"
	"github.com/toold/toold/pkg/workspace"
)

// guardedTool returns the tool on a workspace with canary secrets (.env,
// a sensitive directory, a git hook, and a fake home with ~/.ssh/id_rsa)
// and the policy engine as its guard.
func guardedTool(t *testing.T) (*FileOperations, string, string) {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	dir, home := base+"/ws", base+"/home"
	writeTree(t, dir, map[string]string{
		".env":                  "ENV-CANARY\n",
		"vault.key/f":           "VAULT-CANARY\n",
		".git/hooks/pre-commit": "#!/bin/sh\necho HOOK-CANARY\n",
		"plain/f":               "harmless\n",
	})
	writeTree(t, home, map[string]string{".ssh/id_rsa": "SSH-CANARY\n"})
	ws, err := workspace.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	e, err := authz.NewEngine(authz.EngineConfig{Workspace: ws, Home: home})
	if err != nil {
		t.Fatal(err)
	}
	return New(ws, tools.Limits{}, Options{Sensitive: e.Sensitive, Guard: e}), dir, home
}

// swapper replaces p, in a tight loop until stopped, by a regular file
// (content harmless, or a directory holding f with it when dir) and by a
// symlink to target, each time with an atomic rename.
func swapper(t *testing.T, p, target string, dir bool) (stop func()) {
	t.Helper()
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tmpLink, tmpFile := p+".swap-link", p+".swap-file"
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			default:
			}
			if i%2 == 0 {
				os.Remove(tmpLink)
				if err := os.Symlink(target, tmpLink); err != nil {
					t.Error(err)
					return
				}
				os.RemoveAll(p)
				os.Rename(tmpLink, p)
				continue
			}
			os.RemoveAll(tmpFile)
			if dir {
				os.Mkdir(tmpFile, 0o755)
				os.WriteFile(tmpFile+"/f", []byte("harmless\n"), 0o644)
			} else {
				os.WriteFile(tmpFile, []byte("harmless\n"), 0o644)
			}
			os.RemoveAll(p)
			os.Rename(tmpFile, p)
		}
	})
	var once sync.Once
	return func() {
		once.Do(func() { close(done) })
		wg.Wait()
	}
}

// TestRaceReads reads a path while a goroutine swaps it between a harmless
// file and a symlink to a secret: no read may ever return the secret.
func TestRaceReads(t *testing.T) {
	for _, c := range []struct {
		name, path, swap, target, canary string
		dir                              bool
	}{
		{"file to .env", "a.txt", "a.txt", ".env", "ENV-CANARY", false},
		{"file to ~/.ssh/id_rsa", "b.txt", "b.txt", "{home}/.ssh/id_rsa", "SSH-CANARY", false},
		{"directory to a sensitive directory", "d/f", "d", "vault.key", "VAULT-CANARY", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			f, dir, home := guardedTool(t)
			target := strings.ReplaceAll(c.target, "{home}", home)
			writeTree(t, dir, map[string]string{c.path: "harmless\n"})
			stop := swapper(t, filepath.Join(dir, c.swap), target, c.dir)
			defer stop()
			const tries = 250
			wins, reads, denied := 0, 0, 0
			for range tries {
				for _, op := range []string{"read_file", "read_many_files"} {
					args := `{"path":"` + c.path + `"}`
					if op == "read_many_files" {
						args = `{"paths":["` + c.path + `"]}`
					}
					res, err := run(t, f, op, args)
					switch {
					case err == nil && strings.Contains(res.Text, c.canary):
						wins++
					case err == nil && strings.Contains(res.Text, "harmless"):
						reads++
					case errors.Is(err, errdefs.ErrDenied):
						denied++
					}
				}
			}
			stop()
			t.Logf("%d calls: %d read the harmless file, %d refused, %d returned the secret", 2*tries, reads, denied, wins)
			if wins > 0 {
				t.Fatalf("%d of %d reads returned %s", wins, 2*tries, c.canary)
			}
		})
	}
}

// TestRaceWrites writes a path while a goroutine swaps it between a file
// and a symlink to a secret or a git hook: the target must never change.
func TestRaceWrites(t *testing.T) {
	for _, c := range []struct {
		name, op, path, swap, target, victim, want string
		dir                                        bool
	}{
		{"write_file over .env", "write_file", "a.txt", "a.txt", ".env", ".env", "ENV-CANARY\n", false},
		{"write_file over a git hook", "write_file", "b.txt", "b.txt", ".git/hooks/pre-commit", ".git/hooks/pre-commit", "#!/bin/sh\necho HOOK-CANARY\n", false},
		{"write_file into .git/hooks", "write_file", "d/pre-commit", "d", ".git/hooks", ".git/hooks/pre-commit", "#!/bin/sh\necho HOOK-CANARY\n", true},
		{"edit_file of .env", "edit_file", "c.txt", "c.txt", ".env", ".env", "ENV-CANARY\n", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			f, dir, _ := guardedTool(t)
			writeTree(t, dir, map[string]string{c.path: "harmless\n"})
			stop := swapper(t, filepath.Join(dir, c.swap), c.target, c.dir)
			defer stop()
			args := `{"path":"` + c.path + `","content":"pwned\n"}`
			if c.op == "edit_file" {
				args = `{"path":"` + c.path + `","old_string":"CANARY","new_string":"pwned"}`
			}
			const tries = 120
			wrote, denied := 0, 0
			for range tries {
				_, err := runCtx(context.Background(), t, f, c.op, args, nil)
				switch {
				case err == nil:
					wrote++
				case errors.Is(err, errdefs.ErrDenied):
					denied++
				}
			}
			stop()
			b, err := os.ReadFile(filepath.Join(dir, c.victim))
			t.Logf("%d calls: %d wrote, %d refused", tries, wrote, denied)
			if err != nil || string(b) != c.want {
				t.Fatalf("%s changed: %q, %v", c.victim, b, err)
			}
			for _, g := range []string{".git/hooks/pre-commit.swap-file", ".env.swap-file"} {
				if _, err := os.Lstat(filepath.Join(dir, g)); err == nil {
					t.Errorf("%s was written", g)
				}
			}
		})
	}
}

// TestCheckedAtUseErrors checks the messages of what is refused at use.
func TestCheckedAtUseErrors(t *testing.T) {
	f, dir, home := guardedTool(t)
	if err := os.Link(filepath.Join(home, ".ssh/id_rsa"), filepath.Join(dir, "notes.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(".env", filepath.Join(dir, "env-link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(".git/hooks/pre-commit", filepath.Join(dir, "hook-link")); err != nil {
		t.Fatal(err)
	}
	writeTree(t, dir, map[string]string{"plain/g": "harmless\n"})
	if err := os.Link(filepath.Join(dir, "plain/g"), filepath.Join(dir, "plain/g2")); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		op, args string
		parts    []string
	}{
		{"read_file", `{"path":"notes.txt"}`, []string{`"notes.txt" is a hard link to`, ".ssh/id_rsa", "nothing was read"}},
		{"read_file", `{"path":"env-link"}`, []string{`"env-link" now resolves to`, `matches ".env"`, "nothing was read"}},
		{"write_file", `{"path":"env-link","content":"x"}`, []string{"sensitive path", "nothing was written"}},
		{"write_file", `{"path":"hook-link","content":"x"}`, []string{"rule builtin:git-internals", "Name " + dir + "/.git/hooks/pre-commit itself"}},
		{"read_file", `{"path":"/proc/self/environ"}`, []string{"sensitive path", "/proc/<toold's pid>"}},
	} {
		t.Run(c.op+" "+c.args, func(t *testing.T) {
			call := &tools.Call{Tool: ToolName, Operation: c.op, Outside: []string{"/proc"}}
			a, err := tools.DecodeArguments(c.args)
			if err != nil {
				t.Fatal(err)
			}
			call.Args = a
			_, err = f.Run(context.Background(), call, nil)
			wantErr(t, err, errdefs.ErrDenied, c.parts...)
		})
	}
	// A multi-linked file whose other name is not sensitive reads.
	res := mustRun(t, f, "read_file", `{"path":"plain/g2"}`)
	if !strings.Contains(res.Text, "harmless") {
		t.Errorf("read %q", res.Text)
	}
}

// BenchmarkReadFileAtUse is read_file of a 4 KB file without a guard (the
// baseline), with the policy engine as the guard, and with the guard on a
// file with two hard links (the index lookup; its build is cached);
// guard-judged takes the location policy judged (tools.Call.Judged) instead
// of resolving small.txt again.
func BenchmarkReadFileAtUse(b *testing.B) {
	dir := b.TempDir()
	var sb strings.Builder
	for sb.Len() < 4096 {
		sb.WriteString("the quick brown fox jumps over the lazy dog\n")
	}
	for _, n := range []string{"small.txt", "linked.txt"} {
		if err := os.WriteFile(filepath.Join(dir, n), []byte(sb.String()), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	if err := os.Link(filepath.Join(dir, "linked.txt"), filepath.Join(dir, "linked2.txt")); err != nil {
		b.Fatal(err)
	}
	ws, err := workspace.Open(dir)
	if err != nil {
		b.Fatal(err)
	}
	defer ws.Close()
	e, err := authz.NewEngine(authz.EngineConfig{Workspace: ws, Home: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	// What policy found plain for small.txt, as the executor passes it.
	v, err := e.Authorize(context.Background(), &authz.Request{ConversationID: "c", Mode: authz.ModeAuto, Tool: ToolName,
		Operation: "read_file", Risk: tools.RiskLow, Effect: tools.Effect{Reads: []string{"small.txt"}}})
	if err != nil || len(v.Judged) != 1 {
		b.Fatalf("Judged %v, %v", v.Judged, err)
	}
	for _, c := range []struct {
		name, path string
		opts       Options
		judged     []tools.JudgedPath
	}{
		{"baseline", "small.txt", Options{}, nil},
		{"guard", "small.txt", Options{Sensitive: e.Sensitive, Guard: e}, nil},
		{"guard-judged", "small.txt", Options{Sensitive: e.Sensitive, Guard: e}, v.Judged},
		{"guard-2-links", "linked.txt", Options{Sensitive: e.Sensitive, Guard: e}, nil},
	} {
		b.Run(c.name, func(b *testing.B) {
			f := New(ws, tools.Limits{}, c.opts)
			call := &tools.Call{Tool: ToolName, Operation: "read_file", Args: map[string]any{"path": c.path}, Judged: c.judged}
			b.ReportAllocs()
			defer reportCPU(b)()
			for b.Loop() {
				if _, err := f.Run(context.Background(), call, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
