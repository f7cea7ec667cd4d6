package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/toold/toold/pkg/testenv"
)

// toold run as nobody, every command under a helper (terminal.supervision:
// helper), with the sandbox as this machine offers it to an unprivileged
// user and with it off: commands run — foreground, background, with stdin
// — and every call ends (callIn gives each 60 s; a hang fails it). A stuck
// helper is ended by its answer timeout (pkg/sandbox TestStartStuckHelper).
func TestBinaryAsNobodyRunsCommands(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("runs toold as nobody (uid 65534), which needs root")
	}
	bin := buildToold(t)
	for _, sb := range []string{"auto", "off"} {
		t.Run("sandbox "+sb, func(t *testing.T) {
			base, err := os.MkdirTemp("", "toold-nobody")
			if err != nil {
				t.Fatal(err)
			}
			defer os.RemoveAll(base)
			ws, state, tmp, home := filepath.Join(base, "ws"), filepath.Join(base, "state"), filepath.Join(base, "tmp"), filepath.Join(base, "home")
			for _, d := range []string{ws, state, tmp, home} {
				if err := os.Mkdir(d, 0o700); err != nil {
					t.Fatal(err)
				}
			}
			body, err := os.ReadFile(bin)
			if err != nil {
				t.Fatal(err)
			}
			own := filepath.Join(base, "toold") // no toold-helper beside it: toold re-executes itself
			if err := os.WriteFile(own, body, 0o755); err != nil {
				t.Fatal(err)
			}
			cfg, sock := filepath.Join(base, "toold.yaml"), filepath.Join(base, "toold.sock")
			conf := fmt.Sprintf("socket: %s\nworkspace: %s\nstate_dir: %s\napproval_mode: yolo\nterminal: {dir: %s, supervision: helper, sandbox: %q}\n", sock, ws, state, tmp, sb)
			if err := os.WriteFile(cfg, []byte(conf), 0o600); err != nil {
				t.Fatal(err)
			}
			filepath.WalkDir(base, func(p string, _ os.DirEntry, _ error) error { return os.Lchown(p, 65534, 65534) })
			os.Chmod(base, 0o755)

			cmd := exec.Command(own, "--config", cfg)
			cmd.Env = userEnv(home)
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
			logs := &testenv.Buffer{}
			cmd.Stderr = logs
			r := startCmd(t, cmd, sock, logs)
			t.Cleanup(func() {
				if t.Failed() {
					t.Logf("toold's log:\n%s", logs.String())
				}
			})
			c := &conv{}
			res := callIn(t, r.conn, c, "run_command", `{"command":"id -u; pwd"}`)
			if out := res.GetContent()[0].GetText(); !strings.Contains(out, "65534") || !strings.Contains(out, ws) {
				t.Errorf("run_command ran not as nobody in the workspace:\n%s", out)
			}
			bg := callIn(t, r.conn, c, "run_command", `{"command":"id -u","is_background":true}`)
			w := callIn(t, r.conn, c, "wait", fmt.Sprintf(`{"process_id":%q,"timeout":30}`, str(bg, "process_id")))
			if st := str(w, "state"); st != "exited" || num(w, "exit_code") != 0 {
				t.Errorf("the background command: state %q exit %d, want exited 0", st, num(w, "exit_code"))
			}
		})
	}
}
