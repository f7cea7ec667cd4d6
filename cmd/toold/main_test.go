package main

import (
	"context"
	"errors"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	pb "github.com/toold/toold/gen/toold/v1"
)

func TestParseFlags(t *testing.T) {
	dir := t.TempDir()
	cfgFile := filepath.Join(dir, "c.yaml")
	os.WriteFile(cfgFile, []byte("socket: /from/file.sock\nworkspace: /from/file\napproval_mode: ask\nshutdown_grace: 3s\n"), 0o644)
	tests := []struct {
		name      string
		args      []string
		env       map[string]string
		socket    string
		workspace string
		mode      string
		token     string
		grace     time.Duration
		wantErr   string
	}{
		{name: "defaults", socket: "./toold.sock", workspace: ".", mode: "auto", grace: 10 * time.Second},
		{name: "file", args: []string{"--config", cfgFile}, socket: "/from/file.sock", workspace: "/from/file", mode: "ask", grace: 3 * time.Second},
		{name: "flags override file", args: []string{"--config", cfgFile, "--socket", "x.sock", "--token", "flag"}, socket: "x.sock", workspace: "/from/file", mode: "ask", token: "flag", grace: 3 * time.Second},
		{name: "env overrides file", args: []string{"--config", cfgFile}, env: map[string]string{"TOOLD_SOCKET": "/env.sock", "TOOLD_TOKEN": "from-env", "TOOLD_SHUTDOWN_GRACE": "7s"},
			socket: "/env.sock", workspace: "/from/file", mode: "ask", token: "from-env", grace: 7 * time.Second},
		{name: "flag overrides env", args: []string{"--socket", "flag.sock", "--approval-mode=yolo"}, env: map[string]string{"TOOLD_SOCKET": "/env.sock", "TOOLD_APPROVAL_MODE": "ask", "TOOLD_WORKSPACE": "/ws"},
			socket: "flag.sock", workspace: "/ws", mode: "yolo", grace: 10 * time.Second},
		{name: "config file from env", env: map[string]string{"TOOLD_CONFIG": cfgFile}, socket: "/from/file.sock", workspace: "/from/file", mode: "ask", grace: 3 * time.Second},
		{name: "empty variable is unset", args: []string{"--config", cfgFile}, env: map[string]string{"TOOLD_SOCKET": "", "TOOLD_WORKSPACE": ""}, socket: "/from/file.sock", workspace: "/from/file", mode: "ask", grace: 3 * time.Second},
		{name: "bad variable", env: map[string]string{"TOOLD_SHUTDOWN_GRACE": "soon"}, wantErr: "TOOLD_SHUTDOWN_GRACE"},
		{name: "bad boolean variable", env: map[string]string{"TOOLD_MCP_HTTP": "maybe"}, wantErr: "TOOLD_MCP_HTTP"},
		{name: "stray argument", args: []string{"serve"}, wantErr: "unexpected arguments"},
		{name: "unknown flag", args: []string{"--nope"}, wantErr: "not defined"},
		{name: "missing config", args: []string{"--config", filepath.Join(dir, "missing.yaml")}, wantErr: "no such file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, f := range []string{"SOCKET", "WORKSPACE", "TOKEN", "APPROVAL_MODE", "CONFIG", "SHUTDOWN_GRACE", "MCP_HTTP"} {
				t.Setenv("TOOLD_"+f, "")
			}
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			m, err := parseFlags(tt.args)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			c := m.Config
			if c.Socket != tt.socket || c.Workspace != tt.workspace || c.ApprovalMode != tt.mode || c.Token != tt.token || time.Duration(c.ShutdownGrace) != tt.grace {
				t.Fatalf("config = %+v", c)
			}
		})
	}
}

// Every flag has its TOOLD_* variable, and --help lists it.
func TestEveryFlagHasEnv(t *testing.T) {
	t.Setenv("TOOLD_STATE_DIR", "/state")
	t.Setenv("TOOLD_SHELL", "sh")
	t.Setenv("TOOLD_HEALTH_LISTEN", "127.0.0.1:0")
	t.Setenv("TOOLD_SOCKET_MODE", "0660")
	m, err := parseFlags(nil)
	if err != nil {
		t.Fatal(err)
	}
	if c := m.Config; c.Terminal.Dir != "/state" || c.Terminal.Shell != "sh" || c.HealthListen != "127.0.0.1:0" || c.SocketMode != "0660" {
		t.Fatalf("config = %+v", c)
	}
	var help strings.Builder
	flagOutput = &help
	defer func() { flagOutput = os.Stderr }()
	_, err = parseFlags([]string{"--help"})
	if !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("--help: %v", err)
	}
	lines := strings.Split(help.String(), "\n")
	flags := 0
	for i, l := range lines {
		name, ok := strings.CutPrefix(l, "  -")
		if !ok {
			continue
		}
		flags++
		name, _, _ = strings.Cut(name, " ")
		want := "[$TOOLD_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_")) + "]"
		if got := strings.Contains(lines[i+1], want); got == (name == "version") {
			t.Errorf("--help for -%s: %q, want %s: %v", name, lines[i+1], want, name != "version")
		}
	}
	if flags < 20 {
		t.Fatalf("--help lists %d flags:\n%s", flags, help.String())
	}
}

// The real binary: serves on its socket, and on SIGTERM ends open streams
// with OK, removes the socket and exits 0.
func TestBinarySIGTERM(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := filepath.Join(t.TempDir(), "toold")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	sockDir, _ := os.MkdirTemp("", "toold-bin")
	defer os.RemoveAll(sockDir)
	sock := filepath.Join(sockDir, "toold.sock")
	ws := t.TempDir()
	cmd := exec.Command(bin, "--socket", sock, "--workspace", ws, "--shutdown-grace", "1s", "--state-dir", t.TempDir())
	var logs strings.Builder
	cmd.Stderr = &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			<-exited
		}
	}()

	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// WaitForReady rides out the daemon's start.
	if _, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{}, grpc.WaitForReady(true)); err != nil {
		t.Fatalf("health: %v\n%s", err, logs.String())
	}
	s, err := pb.NewToolServiceClient(conn).ExecuteTool(ctx)
	if err != nil {
		t.Fatal(err)
	}
	s.Send(&pb.ClientMessage{Msg: &pb.ClientMessage_Call{Call: &pb.ToolCall{CallId: "1", Name: "think", Arguments: &pb.ToolCall_ArgumentsJson{ArgumentsJson: `{"thought":"x"}`}}}})
	for {
		ev, err := s.Recv()
		if err != nil {
			t.Fatal(err)
		}
		if ev.GetEnd() != nil {
			break
		}
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Recv(); err == nil || err.Error() != "EOF" {
		t.Fatalf("open stream after SIGTERM: %v, want a clean end (EOF)", err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("exit: %v\n%s", err, logs.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("toold did not exit after SIGTERM\n%s", logs.String())
	}
	if _, err := os.Stat(sock); !os.IsNotExist(err) {
		t.Fatalf("socket left behind: %v", err)
	}
	if !strings.Contains(logs.String(), "shutting down") {
		t.Fatalf("logs: %s", logs.String())
	}
}

// Start-up runs with a higher GC target, and the one before comes back
// after; GOGC=off is left alone.
func TestLessGCWhileStarting(t *testing.T) {
	current := func() int { p := debug.SetGCPercent(-1); debug.SetGCPercent(p); return p }
	orig := debug.SetGCPercent(100)
	defer debug.SetGCPercent(orig)
	for _, tt := range []struct{ before, during int }{{100, startupGCPercent}, {50, startupGCPercent}, {-1, -1}, {800, 800}} {
		debug.SetGCPercent(tt.before)
		restore := lessGCWhileStarting()
		if got := current(); got != tt.during {
			t.Errorf("GOGC %d: %d while starting, want %d", tt.before, got, tt.during)
		}
		restore()
		if got := current(); got != tt.before {
			t.Errorf("GOGC %d: %d after start-up, want it back", tt.before, got)
		}
	}
}
