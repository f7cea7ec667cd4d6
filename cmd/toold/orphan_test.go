package main

import (
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toold/toold/pkg/sandbox"
	"github.com/toold/toold/pkg/testenv"
)

// With the sandbox off and commands under helpers, a command that kills
// its own helper does not take its orphan out of toold's tree: toold is a
// child subreaper (sandbox.AdoptOrphans), the orphan is re-parented to
// toold, its connection to toold's socket is refused like any command's,
// and toold reaps it when it ends (no zombie left).
func TestBinaryOrphanOfKilledHelper(t *testing.T) {
	bin := buildToold(t)
	base := t.TempDir()
	toolctl := filepath.Join(base, "toolctl")
	if out, err := exec.Command("go", "build", "-o", toolctl, "github.com/toold/toold/cmd/toolctl").CombinedOutput(); err != nil {
		t.Fatalf("build toolctl: %v\n%s", err, out)
	}
	sockDir, err := os.MkdirTemp("", "toold-orphan")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(sockDir)
	ws, state, tmp := filepath.Join(base, "ws"), filepath.Join(base, "state"), filepath.Join(base, "tmp")
	for _, d := range []string{ws, state, tmp} {
		os.Mkdir(d, 0o700)
	}
	cfg, sock := filepath.Join(sockDir, "toold.yaml"), filepath.Join(sockDir, "toold.sock")
	conf := fmt.Sprintf("socket: %s\nworkspace: %s\nstate_dir: %s\napproval_mode: yolo\nterminal: {dir: %s, sandbox: \"off\", supervision: helper}\n", sock, ws, state, tmp)
	if err := os.WriteFile(cfg, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	r := startBinary(t, bin, cfg, sock)
	pid := r.cmd.Process.Pid

	// The orphan waits until its helper is dead, then asks toold, through
	// its socket, to create a file in the workspace (which a command may
	// do: only the peer check can stop it). Paths are hidden from the
	// judge: the kernel and the peer check must hold, not the judge.
	marker := filepath.Join(ws, "orphan-reached-toold")
	inner := fmt.Sprintf(`sleep 1; %s --socket %s --connect-timeout 2s call --yes run_command command='touch %s' > %s/orphan.out 2>&1; echo rc=$? >> %s/orphan.out`, toolctl, sock, marker, base, base)
	hidden := base64.StdEncoding.EncodeToString([]byte(inner))
	// Sent with toolctl --yes: the judge asks about it (kill, /proc), and
	// the person approves; the kernel and the peer check must hold.
	outer := `( setsid sh -c "$(echo ` + hidden + ` | base64 -d)" >/dev/null 2>&1 & ) ; sleep 0.2; case "$(tr '\0' ' ' < /proc/$PPID/cmdline)" in toold-helper*) kill -9 $PPID;; esac; true`
	if o, err := exec.Command(toolctl, "--socket", sock, "call", "--yes", "run_command", "command="+outer).CombinedOutput(); !strings.Contains(string(o), "killed") {
		t.Fatalf("the command did not kill its helper (%v):\n%s", err, o)
	}
	// The orphan has run toolctl and ended.
	out := filepath.Join(base, "orphan.out")
	testenv.Poll(t, 30*time.Second, "the orphan to end", func() bool {
		b, _ := os.ReadFile(out)
		return len(b) > 0 && bytesContains(b, "rc=")
	})
	b, _ := os.ReadFile(out)
	if _, err := os.Stat(marker); err == nil {
		t.Fatalf("the orphan of a killed helper reached toold and ran a command:\n%s", b)
	}
	if !bytesContains(b, "rc=") || bytesContains(b, "rc=0") {
		t.Fatalf("toolctl in the orphan did not fail:\n%s", b)
	}
	// toold reaped it (and its helper): no zombie child is left.
	if !testenv.Until(20*time.Second, func() bool { return len(sandbox.ZombieChildren(pid)) == 0 }) {
		t.Errorf("zombie children of toold left: %v", sandbox.ZombieChildren(pid))
	}
	if t.Failed() {
		t.Logf("toolctl in the orphan:\n%s\ntoold's log:\n%s", b, r.logs.String())
	}
}

func bytesContains(b []byte, s string) bool { return strings.Contains(string(b), s) }
