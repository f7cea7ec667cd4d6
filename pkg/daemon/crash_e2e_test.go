package daemon_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials/insecure"

	pb "github.com/toold/toold/gen/toold/v1"
	"github.com/toold/toold/pkg/checkpoint/checkpointtest"
	"github.com/toold/toold/pkg/config"
	"github.com/toold/toold/pkg/daemon"
	"github.com/toold/toold/pkg/daemon/daemontest"
	"github.com/toold/toold/pkg/sandbox"
)

// asTooldEnv, set to the JSON of a tooldChild, makes the test binary run
// as a toold (a real daemon.Main in its own process) until it is killed.
const asTooldEnv = "TOOLD_TEST_AS_TOOLD"

type tooldChild struct {
	Socket, Workspace, StateDir string
}

func runAsTooldIfRequested() {
	v := os.Getenv(asTooldEnv)
	if v == "" {
		return
	}
	var c tooldChild
	if err := json.Unmarshal([]byte(v), &c); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	cfg := config.Default()
	cfg.Socket, cfg.Workspace, cfg.StateDir = c.Socket, c.Workspace, c.StateDir
	cfg.ApprovalMode = "yolo"
	cfg.Terminal.HelperArgs = sandbox.TestHelperArgs
	m := &daemon.Main{Config: cfg, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	if err := m.Run(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	select {}
}

// An apply_patch across 20 files (17 updated, 2 added, one in a new
// directory, 1 deleted) in a real toold killed with SIGKILL at every step
// of its commit — before its journal, after it, after each file, after the
// last — leaves, once the next toold has started on the same state
// directory, the workspace wholly as it was before the patch or wholly as
// after it, every time.
func TestPatchAllOrNothingAcrossSIGKILL(t *testing.T) {
	seed := t.TempDir()
	var patch strings.Builder
	patch.WriteString("*** Begin Patch\n")
	for i := range 17 {
		writeWS(t, filepath.Join(seed, fmt.Sprintf("src/f%02d.txt", i)), fmt.Sprintf("head %d\nline %d\ntail %d\n", i, i, i))
		fmt.Fprintf(&patch, "*** Update File: src/f%02d.txt\n@@\n head %d\n-line %d\n+LINE %d\n tail %d\n", i, i, i, i, i)
	}
	writeWS(t, filepath.Join(seed, "gone.txt"), "to be deleted\n")
	if err := os.Chmod(filepath.Join(seed, "src/f03.txt"), 0o750); err != nil {
		t.Fatal(err)
	}
	patch.WriteString("*** Add File: added.txt\n+added\n*** Add File: new/sub/deep.txt\n+deep\n*** Delete File: gone.txt\n*** End Patch")
	args, _ := json.Marshal(map[string]string{"input": patch.String()})
	before := checkpointtest.TreeHash(t, seed)

	// run applies the patch in a child toold that kills itself at step
	// (-1: never), then starts a toold on the same state directory, and
	// returns the workspace's tree and whether the child was killed.
	run := func(t *testing.T, step int) (string, bool) {
		ws, state := t.TempDir(), t.TempDir()
		if err := os.CopyFS(ws, os.DirFS(seed)); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(filepath.Join(ws, "src/f03.txt"), 0o750); err != nil {
			t.Fatal(err)
		}
		sockDir, err := os.MkdirTemp("", "toold-crash")
		if err != nil {
			t.Fatal(err)
		}
		defer os.RemoveAll(sockDir)
		spec, _ := json.Marshal(tooldChild{Socket: filepath.Join(sockDir, "t.sock"), Workspace: ws, StateDir: state})
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), asTooldEnv+"="+string(spec), fmt.Sprintf("TOOLD_TEST_PATCH_CRASH_STEP=%d", step))
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		waited := false
		defer func() {
			if !waited {
				cmd.Process.Kill()
				cmd.Wait()
			}
		}()
		conn, err := grpc.NewClient("unix://"+filepath.Join(sockDir, "t.sock"), grpc.WithTransportCredentials(insecure.NewCredentials()),
			// Retry often while the child starts.
			grpc.WithConnectParams(grpc.ConnectParams{Backoff: backoff.Config{BaseDelay: 10 * time.Millisecond, Multiplier: 1, MaxDelay: 10 * time.Millisecond}, MinConnectTimeout: time.Second}))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		s, err := pb.NewToolServiceClient(conn).ExecuteTool(ctx, grpc.WaitForReady(true))
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Send(&pb.ClientMessage{Msg: &pb.ClientMessage_Call{Call: &pb.ToolCall{CallId: "p", Name: "apply_patch",
			Arguments: &pb.ToolCall_ArgumentsJson{ArgumentsJson: string(args)}}}}); err != nil {
			t.Fatal(err)
		}
		var end *pb.ToolCallEnd
		for end == nil {
			ev, err := s.Recv()
			if err != nil {
				break // toold died
			}
			end = ev.GetEnd()
		}
		if end != nil {
			if !end.GetResult().GetSuccess() {
				t.Fatalf("the patch failed: %v", end.GetResult().GetError())
			}
			cmd.Process.Signal(syscall.SIGTERM)
		}
		werr := cmd.Wait()
		waited = true
		var ee *exec.ExitError
		killed := errors.As(werr, &ee) && ee.Sys().(syscall.WaitStatus).Signaled() && ee.Sys().(syscall.WaitStatus).Signal() == syscall.SIGKILL
		if end == nil && !killed {
			t.Fatalf("toold ended without a result and without SIGKILL: %v", werr)
		}
		// The next toold on the same state directory rolls back at start.
		d := daemontest.Start(t, daemontest.WithWorkspace(ws), daemontest.WithConfig(func(c *config.Config) {
			c.StateDir = state
			c.Checkpoints.Disable = true
		}))
		tree := checkpointtest.TreeHash(t, ws)
		if err := d.Main.Close(); err != nil {
			t.Fatal(err)
		}
		return tree, killed
	}
	after, killed := run(t, -1)
	if killed || after == before {
		t.Fatalf("the patch without a crash: killed %v, changed %v", killed, after != before)
	}
	kills := 0
	for step := 0; ; step++ {
		got, killed := run(t, step)
		if !killed {
			break
		}
		kills++
		if got != before && got != after {
			t.Fatalf("killed at step %d: the workspace is neither before nor after the patch:\n%s", step, got)
		}
	}
	// Before the journal, after it, after each of the 20 files, after the
	// last.
	if kills != 23 {
		t.Fatalf("killed at %d steps, want 23", kills)
	}
}
