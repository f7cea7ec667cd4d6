package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toold/toold/pkg/testenv"
)

// No toold serves another toold's command. A command of toold A waits for
// toold B's socket to appear — bound after the command started, so A's
// sandbox view could not mask it; here A runs commands with the sandbox
// off, so that only B's peer rule stands between them — and asks B,
// through toolctl, to write a file in B's workspace. B refuses it: the
// client runs below A's helper (sandbox.CommandOfAnyToold). The same
// toolctl run by the test is served. On the old rule (only B's own tree
// and cgroups), B wrote the file.
func TestBinaryAnotherTooldRefusesCommand(t *testing.T) {
	bin := buildToold(t)
	base := t.TempDir()
	toolctl := filepath.Join(base, "toolctl")
	if out, err := exec.Command("go", "build", "-o", toolctl, "github.com/toold/toold/cmd/toolctl").CombinedOutput(); err != nil {
		t.Fatalf("build toolctl: %v\n%s", err, out)
	}
	sockDir, err := os.MkdirTemp("", "toold-other")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(sockDir)
	config := func(name, sandbox string) (cfg, sock, ws string) {
		ws, state, tmp := filepath.Join(base, name+"-ws"), filepath.Join(base, name+"-state"), filepath.Join(base, name+"-tmp")
		for _, d := range []string{ws, state, tmp} {
			os.Mkdir(d, 0o700)
		}
		cfg, sock = filepath.Join(sockDir, name+".yaml"), filepath.Join(sockDir, name+".sock")
		conf := fmt.Sprintf("socket: %s\nworkspace: %s\nstate_dir: %s\napproval_mode: yolo\nterminal: {dir: %s, sandbox: %q, supervision: helper}\n", sock, ws, state, tmp, sandbox)
		if err := os.WriteFile(cfg, []byte(conf), 0o600); err != nil {
			t.Fatal(err)
		}
		return cfg, sock, ws
	}
	cfgA, sockA, _ := config("a", "off")
	cfgB, sockB, wsB := config("b", "off")
	startBinary(t, bin, cfgA, sockA)

	// A's command: wait for B's socket, then ask B to write a file.
	out := filepath.Join(base, "command.out")
	script := fmt.Sprintf(`for i in $(seq 600); do [ -S %[1]s ] && break; sleep 0.1; done; %[2]s --socket %[1]s --connect-timeout 5s call --yes write_file path=pwned content=x > %[3]s 2>&1; echo rc=$? >> %[3]s`, sockB, toolctl, out)
	cmdA := exec.Command(toolctl, "--socket", sockA, "call", "--yes", "run_command", "command="+script, "timeout=120")
	var aOut testenv.Buffer
	cmdA.Stdout, cmdA.Stderr = &aOut, &aOut
	if err := cmdA.Start(); err != nil {
		t.Fatal(err)
	}
	doneA := make(chan error, 1)
	go func() { doneA <- cmdA.Wait() }()
	// B starts once A's command runs (it waits for the socket).
	testenv.Poll(t, 30*time.Second, "A's command to start", func() bool {
		b, _ := exec.Command("pgrep", "-f", "seq 600").Output()
		return len(b) > 0
	})
	rb := startBinary(t, bin, cfgB, sockB)
	select {
	case err := <-doneA:
		if err != nil {
			t.Fatalf("toolctl to A: %v\n%s", err, aOut.String())
		}
	case <-time.After(3 * time.Minute):
		t.Fatalf("A's command did not end:\n%s", aOut.String())
	}
	b, _ := os.ReadFile(out)
	if _, err := os.Stat(filepath.Join(wsB, "pwned")); err == nil {
		t.Fatalf("toold B served toold A's command and wrote the file:\n%s", b)
	}
	if !strings.Contains(string(b), "toold refuses this client") || strings.Contains(string(b), "rc=0") {
		t.Fatalf("B did not refuse A's command (what its toolctl printed):\n%s\nB's log:\n%s", b, rb.logs.String())
	}
	// The same client, run by the test, is served.
	if o, err := exec.Command(toolctl, "--socket", sockB, "call", "--yes", "write_file", "path=served", "content=x").CombinedOutput(); err != nil {
		t.Fatalf("the test's toolctl to B: %v\n%s", err, o)
	}
	if _, err := os.Stat(filepath.Join(wsB, "served")); err != nil {
		t.Fatalf("B did not serve the test's own client: %v", err)
	}
}
