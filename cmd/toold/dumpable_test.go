package main

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/toold/toold/pkg/testenv"
)

// With the sandbox off (the operator's choice), a command runs with
// toold's user and rights: toold is non-dumpable, so that the command
// cannot read toold's environment or open files through /proc, nor ptrace
// it. toold runs here as an unprivileged user (nobody when the test is
// root: root's CAP_SYS_PTRACE passes every such check), with a canary
// secret in its environment and a canary file it holds open, removed from
// every path.
func TestBinaryNonDumpableSandboxOff(t *testing.T) {
	bin := buildToold(t)
	base, err := os.MkdirTemp("", "toold-dump")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(base)
	uid, gid := os.Getuid(), os.Getgid()
	var cred *syscall.Credential
	if uid == 0 {
		uid, gid = 65534, 65534
		cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	}
	ws, state, tmp, home := filepath.Join(base, "ws"), filepath.Join(base, "state"), filepath.Join(base, "tmp"), filepath.Join(base, "home")
	for _, d := range []string{ws, state, tmp, home} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	own := filepath.Join(base, "toold")
	body, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(own, body, 0o755); err != nil {
		t.Fatal(err)
	}
	secret := make([]byte, 8)
	rand.Read(secret)
	canary := "SECRET-toold-env-" + hex.EncodeToString(secret)
	cfg, sock := filepath.Join(base, "toold.yaml"), filepath.Join(base, "toold.sock")
	conf := fmt.Sprintf("socket: %s\nworkspace: %s\nstate_dir: %s\napproval_mode: yolo\nterminal: {dir: %s, sandbox: \"off\"}\n", sock, ws, state, tmp)
	if err := os.WriteFile(cfg, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	filepath.WalkDir(base, func(p string, _ os.DirEntry, _ error) error { return os.Lchown(p, uid, gid) })
	os.Chmod(base, 0o755)

	cmd := exec.Command(own, "--config", cfg)
	cmd.Env = append(userEnv(home), "TOOLD_DUMP_CANARY="+canary)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	logs := &testenv.Buffer{}
	cmd.Stderr = logs
	startCmd(t, cmd, sock, logs) // serving: toold has set itself up
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("toold's log:\n%s", logs.String())
		}
	})
	pid := cmd.Process.Pid

	// What a command runs with the sandbox off: a process of toold's user
	// (started here directly, as toold's helper would, with the same
	// credentials).
	probe := exec.Command("sh", "-c", fmt.Sprintf(`id -u; p=%d; tr '\0' '\n' < /proc/$p/environ; ls -l /proc/$p/fd/ && echo FD""S-LISTED; head -c 300 /proc/$p/mem && echo M""EM-READ; timeout 5 strace -p $p -e trace=none 2>&1 | grep -q attached && echo PT""RACED; true`, pid))
	probe.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	probe.Dir = ws
	b, _ := probe.CombinedOutput()
	out := string(b)
	if !strings.Contains(out, fmt.Sprint(uid)) {
		t.Fatalf("the probe did not run as toold's user %d:\n%s", uid, out)
	}
	for _, effect := range []string{canary, "FDS-LISTED", "MEM-READ", "PTRACED"} {
		if strings.Contains(out, effect) {
			t.Errorf("a command with the sandbox off reached toold's process (%s):\n%s", effect, out)
		}
	}
}
