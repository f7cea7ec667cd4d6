package daemon_test

import (
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	pb "github.com/toold/toold/gen/toold/v1"
	"github.com/toold/toold/pkg/config"
	"github.com/toold/toold/pkg/daemon/daemontest"
	"github.com/toold/toold/pkg/testenv"
)

// helloLayers opens a conversation and returns whether the sandbox's
// layer named layer is in force, as Welcome says.
func helloLayers(t *testing.T, x *session, conv, layer string) bool {
	t.Helper()
	x.send(&pb.ClientMessage{Msg: &pb.ClientMessage_Hello{Hello: &pb.Hello{ConversationId: conv}}})
	w, err := x.s.Recv()
	if err != nil || w.GetWelcome() == nil {
		t.Fatalf("welcome: %v %v", w, err)
	}
	for _, l := range w.GetWelcome().GetSandbox().GetLayers() {
		if l.GetName() == layer {
			return l.GetInForce()
		}
	}
	return false
}

// Issue 25 item 2, a secret that appears after a walk: the workspace's
// secrets are found by a walk that is reused for a moment. A person (or a
// process outside the sandbox) writes a key file or a .env into the
// workspace right after a command ran; the model's next command, started
// within that moment, must not read it — in a directory the walk saw, in
// a new directory, and as a file renamed to a secret's name. Each attack
// runs right after a command that walked, so that the walk is as fresh as
// it can be.
func TestSecretAppearingAfterWalkEndToEnd(t *testing.T) {
	d := daemontest.Start(t, daemontest.WithConfig(func(c *config.Config) { c.ApprovalMode = "yolo" }))
	x := newSession(t, d)
	if !helloLayers(t, x, "walk", "reads") {
		if testenv.Required() {
			t.Fatal("the sandbox's reads layer is not in force")
		}
		t.Skip("the sandbox's reads layer is not in force here")
	}
	ws := d.Workspace
	if err := os.MkdirAll(filepath.Join(ws, "cfg", "deep"), 0o755); err != nil {
		t.Fatal(err)
	}
	// A secret the walk finds, so that later walks are reused only while
	// it stays where it is.
	if err := os.WriteFile(filepath.Join(ws, "cfg", ".env"), []byte("OLD="+randomHex(t, 8)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	attacks := []struct {
		name string
		// plant writes the secret (as a person would, outside the
		// sandbox) and returns the path the command reads, relative.
		plant func(secret string) string
	}{
		{"a .env in the root", func(s string) string {
			os.WriteFile(filepath.Join(ws, ".env"), []byte("TOKEN="+s+"\n"), 0o600)
			return ".env"
		}},
		{"a key in a walked directory", func(s string) string {
			os.WriteFile(filepath.Join(ws, "cfg", "deep", "id_ed25519"), []byte(s+"\n"), 0o600)
			return "cfg/deep/id_ed25519"
		}},
		{"a .env.local in a new directory", func(s string) string {
			os.MkdirAll(filepath.Join(ws, "newdir", "sub"), 0o755)
			os.WriteFile(filepath.Join(ws, "newdir", "sub", ".env.local"), []byte("TOKEN="+s+"\n"), 0o600)
			return "newdir/sub/.env.local"
		}},
		{"a plain file renamed to server.pem", func(s string) string {
			os.WriteFile(filepath.Join(ws, "cfg", "notes.txt"), []byte(s+"\n"), 0o600)
			os.Rename(filepath.Join(ws, "cfg", "notes.txt"), filepath.Join(ws, "cfg", "server.pem"))
			return "cfg/server.pem"
		}},
		{"a directory moved in holding a key", func(s string) string {
			tmp := filepath.Join(t.TempDir(), "keys")
			os.MkdirAll(tmp, 0o755)
			os.WriteFile(filepath.Join(tmp, "deploy.key"), []byte(s+"\n"), 0o600)
			if err := os.Rename(tmp, filepath.Join(ws, "cfg", "keys")); err != nil {
				// Another file system: copy it in whole instead.
				os.MkdirAll(filepath.Join(ws, "cfg", "keys"), 0o755)
				os.WriteFile(filepath.Join(ws, "cfg", "keys", "deploy.key"), []byte(s+"\n"), 0o600)
			}
			return "cfg/keys/deploy.key"
		}},
	}
	for i, a := range attacks {
		t.Run(a.name, func(t *testing.T) {
			secret := fmt.Sprintf("PERSON-SECRET-%d-%s", i, randomHex(t, 8))
			// A command walks the workspace now...
			if res, _ := x.call(fmt.Sprint("walk", i), "run_command", `{"command":"true"}`); !res.GetSuccess() {
				t.Fatalf("true: %v", res)
			}
			// ...the person writes a secret, and the model's next command
			// reads it at once (its path hidden from the judge).
			rel := a.plant(secret)
			cmd := fmt.Sprintf(`cat "$(echo %s | base64 -d)"`, base64.StdEncoding.EncodeToString([]byte(rel)))
			res, _ := x.call(fmt.Sprint("read", i), "run_command", mustJSON(t, map[string]any{"command": cmd}))
			t.Logf("%s: %s", rel, text(res))
			if out := text(res); strings.Contains(out, secret) {
				t.Fatalf("the command read the person's secret %s planted after the walk: %s", rel, out)
			}
			// The file is the person's, intact.
			if b, err := os.ReadFile(filepath.Join(ws, rel)); err != nil || !strings.Contains(string(b), secret) {
				t.Fatalf("the planted secret is gone: %q %v", b, err)
			}
		})
	}
}
