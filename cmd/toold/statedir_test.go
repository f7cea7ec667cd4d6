package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	pb "github.com/toold/toold/gen/toold/v1"
	"github.com/toold/toold/pkg/audit"
	"github.com/toold/toold/pkg/testenv"
)

// buildToold builds the toold binary into a temp dir.
func buildToold(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := filepath.Join(t.TempDir(), "toold")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	return bin
}

// userEnv is the environment of a user whose home is home, with toold's
// own variables unset: toold's state goes to its default,
// home/.local/state/toold.
func userEnv(home string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "TOOLD_") || strings.HasPrefix(kv, "HOME=") || strings.HasPrefix(kv, "XDG_STATE_HOME=") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "HOME="+home)
}

// proc is a toold process under test.
type proc struct {
	cmd    *exec.Cmd
	logs   *testenv.Buffer // written by the process while it runs
	exited chan error
}

func startToold(t *testing.T, bin string, env []string, stdin *os.File, args ...string) *proc {
	t.Helper()
	p := &proc{cmd: exec.Command(bin, args...), logs: &testenv.Buffer{}, exited: make(chan error, 1)}
	p.cmd.Env = env
	p.cmd.Stderr = p.logs
	if stdin != nil {
		p.cmd.Stdin = stdin
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.exited <- p.cmd.Wait() }()
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			p.cmd.Process.Kill()
			<-p.exited
		}
	})
	return p
}

// wait waits for the process to exit and returns its exit status.
func (p *proc) wait(t *testing.T) int {
	t.Helper()
	select {
	case err := <-p.exited:
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatal(err)
		}
		return p.cmd.ProcessState.ExitCode()
	case <-time.After(60 * time.Second):
		t.Fatalf("toold did not exit\n%s", p.logs)
		return -1
	}
}

// serving waits until the toold on sock answers health, and returns a
// connection to it.
func serving(t *testing.T, sock string, p *proc) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{}, grpc.WaitForReady(true)); err != nil {
		t.Fatalf("health: %v\n%s", err, p.logs)
	}
	return conn
}

// think runs n think calls on one stream (each audited).
func think(t *testing.T, conn *grpc.ClientConn, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := pb.NewToolServiceClient(conn).ExecuteTool(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		id := string(rune('a' + i))
		if err := s.Send(&pb.ClientMessage{Msg: &pb.ClientMessage_Call{Call: &pb.ToolCall{CallId: id, Name: "think", Arguments: &pb.ToolCall_ArgumentsJson{ArgumentsJson: `{"thought":"x"}`}}}}); err != nil {
			t.Fatal(err)
		}
		for {
			ev, err := s.Recv()
			if err != nil {
				t.Fatal(err)
			}
			if ev.GetEnd() != nil {
				break
			}
		}
	}
	s.CloseSend()
}

// Two toolds on one default state directory — `make run` and `toold mcp`
// on the same workspace, or two daemons on two workspaces — can never
// interleave one audit chain: the second is refused at once, with a
// message naming the holder and --state-dir, and exit status 1; given its
// own --state-dir it runs. The first one's audit log verifies.
func TestOneTooldPerStateDir(t *testing.T) {
	bin := buildToold(t)
	home := t.TempDir()
	env := userEnv(home)
	state := filepath.Join(home, ".local", "state", "toold")
	sockDir, err := os.MkdirTemp("", "toold-state")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(sockDir)
	ws1, ws2 := t.TempDir(), t.TempDir()

	// make run: toold --socket ./toold.sock --workspace .
	sock := filepath.Join(sockDir, "toold.sock")
	first := startToold(t, bin, env, nil, "--socket", sock, "--workspace", ws1, "--shutdown-grace", "1s")
	conn := serving(t, sock, first)
	think(t, conn, 2)

	refused := func(t *testing.T, p *proc) {
		t.Helper()
		if code := p.wait(t); code != exitFailed {
			t.Fatalf("second toold: exit %d, want %d (refused)\n%s", code, exitFailed, p.logs)
		}
		for _, want := range []string{"state directory " + state + " is in use", "--state-dir", ws1, sock} {
			if !strings.Contains(p.logs.String(), want) {
				t.Errorf("refusal does not say %q:\n%s", want, p.logs)
			}
		}
	}
	t.Run("toold mcp next to it", func(t *testing.T) {
		devnull, err := os.Open(os.DevNull)
		if err != nil {
			t.Fatal(err)
		}
		defer devnull.Close()
		refused(t, startToold(t, bin, env, devnull, "mcp", "--workspace", ws1))
		// With its own state directory it serves (and ends with its
		// client's EOF).
		own := startToold(t, bin, env, devnull, "mcp", "--workspace", ws1, "--state-dir", t.TempDir())
		if code := own.wait(t); code != 0 {
			t.Fatalf("toold mcp --state-dir: exit %d\n%s", code, own.logs)
		}
	})
	t.Run("a daemon on another workspace", func(t *testing.T) {
		sock2 := filepath.Join(sockDir, "second.sock")
		refused(t, startToold(t, bin, env, nil, "--socket", sock2, "--workspace", ws2))
		if _, err := os.Stat(sock2); !os.IsNotExist(err) {
			t.Errorf("the refused toold left a socket: %v", err)
		}
	})

	think(t, conn, 2)
	if err := first.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := first.wait(t); code != 0 {
		t.Fatalf("first toold: exit %d\n%s", code, first.logs)
	}
	rep, err := audit.Verify(filepath.Join(state, "audit"))
	if err != nil || rep.Records < 4 {
		t.Fatalf("audit verify: %+v, %v", rep, err)
	}
	if strings.Contains(first.logs.String(), "level=ERROR") {
		t.Errorf("the first toold logged errors:\n%s", first.logs)
	}
}

// Configuration mistakes: each says what is wrong and exits 2, and
// changes nothing (no socket, no directory created).
func TestConfigErrors(t *testing.T) {
	bin := buildToold(t)
	dir := t.TempDir()
	env := userEnv(t.TempDir())
	typo := filepath.Join(dir, "toold.yaml")
	if err := os.WriteFile(typo, []byte("approvl_mode: ask\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "nonexistent-dir")
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"misspelled key", []string{"--config", typo}, exitConfig, `unknown key "approvl_mode"; did you mean "approval_mode"?`},
		{"bad flag value", []string{"--approval-mode", "sometimes", "--socket", filepath.Join(dir, "a.sock")}, exitConfig, "sometimes"},
		{"public listen without a token", []string{"--listen", "0.0.0.0:0", "--socket", "-"}, exitConfig, "set a token"},
		{"unknown flag", []string{"--approvalmode", "ask"}, exitConfig, "approvalmode"},
		{"socket in a missing directory", []string{"--socket", filepath.Join(missing, "x.sock"), "--state-dir", filepath.Join(dir, "state")}, exitFailed, "directory " + missing + " does not exist"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := startToold(t, bin, env, nil, append(tt.args, "--workspace", dir)...)
			if code := p.wait(t); code != tt.code || !strings.Contains(p.logs.String(), tt.want) {
				t.Fatalf("exit %d, want %d; output does not say %q:\n%s", code, tt.code, tt.want, p.logs)
			}
		})
	}
	if _, err := os.Stat(missing); !os.IsNotExist(err) {
		t.Fatalf("toold created the socket's missing directory: %v", err)
	}
}

// A clean shutdown of a toold serving MCP over HTTP on its TCP port logs
// no error (cmux's "mux: server closed" is how the split listener ends).
func TestMCPHTTPShutdownQuiet(t *testing.T) {
	bin := buildToold(t)
	sockDir, err := os.MkdirTemp("", "toold-mcphttp")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(sockDir)
	sock := filepath.Join(sockDir, "toold.sock")
	p := startToold(t, bin, userEnv(t.TempDir()), nil, "--socket", sock, "--workspace", t.TempDir(),
		"--listen", "127.0.0.1:0", "--mcp-http", "--token", "secret", "--shutdown-grace", "1s")
	serving(t, sock, p) // health needs no token
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := p.wait(t); code != 0 {
		t.Fatalf("exit %d\n%s", code, p.logs)
	}
	if strings.Contains(p.logs.String(), "level=ERROR") || strings.Contains(p.logs.String(), "server closed") {
		t.Fatalf("a clean shutdown logged an error:\n%s", p.logs)
	}
}
