package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	pb "github.com/toold/toold/gen/toold/v1"
	"github.com/toold/toold/pkg/testenv"
)

// running is a toold binary started by startBinary.
type running struct {
	cmd    *exec.Cmd
	logs   *testenv.Buffer // its standard error
	conn   *grpc.ClientConn
	exited chan struct{} // closed once the process is reaped
}

// startBinary starts the toold binary bin with the config file cfg (which
// serves on sock) and returns a client once it serves; the process is
// stopped when the test ends.
func startBinary(t *testing.T, bin, cfg, sock string) running {
	t.Helper()
	cmd := exec.Command(bin, "--config", cfg)
	logs := &testenv.Buffer{}
	cmd.Stderr = logs
	return startCmd(t, cmd, sock, logs)
}

// startCmd is startBinary for a command prepared by the caller (its
// environment, its user), whose standard error is logs.
func startCmd(t *testing.T, cmd *exec.Cmd, sock string, logs *testenv.Buffer) running {
	t.Helper()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
	})
	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{}, grpc.WaitForReady(true)); err != nil {
		t.Fatalf("health: %v\n%s", err, logs.String())
	}
	return running{cmd: cmd, conn: conn, exited: exited, logs: logs}
}

// The real binary, SIGKILLed with kept output on disk: its output
// directory stays behind (nothing can run at SIGKILL); the next toold
// removes it at start, and keeps its own.
func TestBinarySIGKILLLeavesNothingForever(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := filepath.Join(t.TempDir(), "toold")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	sockDir, err := os.MkdirTemp("", "toold-kill")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(sockDir)
	ws, tmp := t.TempDir(), t.TempDir()
	cfg, sock := filepath.Join(sockDir, "toold.yaml"), filepath.Join(sockDir, "toold.sock")
	conf := fmt.Sprintf("socket: %s\nworkspace: %s\napproval_mode: yolo\nterminal: {dir: %s}\n", sock, ws, tmp)
	if err := os.WriteFile(cfg, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}

	first := startBinary(t, bin, cfg, sock)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := pb.NewToolServiceClient(first.conn).ExecuteTool(ctx)
	if err != nil {
		t.Fatal(err)
	}
	s.Send(&pb.ClientMessage{Msg: &pb.ClientMessage_Call{Call: &pb.ToolCall{CallId: "1", Name: "run_command",
		Arguments: &pb.ToolCall_ArgumentsJson{ArgumentsJson: `{"command":"seq 1 1000"}`}}}})
	for {
		ev, err := s.Recv()
		if err != nil {
			t.Fatal(err)
		}
		if e := ev.GetEnd(); e != nil {
			if !e.GetResult().GetSuccess() {
				t.Fatalf("run_command: %v", e.GetResult())
			}
			break
		}
	}
	left, _ := filepath.Glob(filepath.Join(tmp, fmt.Sprintf("toold-out-%dp*", first.cmd.Process.Pid)))
	if len(left) != 1 {
		t.Fatalf("the first toold's output directory: %v", left)
	}
	outs, _ := filepath.Glob(filepath.Join(left[0], "outputs", "*"))
	if len(outs) == 0 {
		t.Fatal("no kept output on disk")
	}
	if err := first.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-first.exited
	if _, err := os.Stat(left[0]); err != nil {
		t.Fatalf("after SIGKILL the directory is already gone: %v", err)
	}
	first.conn.Close()

	second := startBinary(t, bin, cfg, sock)
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, err := os.Stat(left[0]); os.IsNotExist(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s was not removed by the next toold", left[0])
		}
		time.Sleep(20 * time.Millisecond)
	}
	own, _ := filepath.Glob(filepath.Join(tmp, fmt.Sprintf("toold-out-%dp*", second.cmd.Process.Pid)))
	if len(own) != 1 {
		t.Fatalf("the second toold's own directory: %v", own)
	}
}
