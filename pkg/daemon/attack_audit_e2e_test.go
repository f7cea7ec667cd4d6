package daemon_test

// The fifth attack pass on the recorder (issue 25; records after the End
// since bc21b54): a model's calls with effects, then toold killed with
// SIGKILL right after the last End reached the client — the moment the
// recorder's queue is fullest. The next toold on the same state directory
// must find the audit chain intact (a torn line repaired, vouched for),
// and a decision and a call.start for every call that had an effect: no
// effect goes unaudited, whatever the recorder had not yet written.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials/insecure"

	pb "github.com/toold/toold/gen/toold/v1"
	"github.com/toold/toold/pkg/audit"
	"github.com/toold/toold/pkg/config"
	"github.com/toold/toold/pkg/daemon/daemontest"
)

func TestAttackAuditAcrossSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("starts toold in a child process")
	}
	ws, state := t.TempDir(), t.TempDir()
	sockDir, err := os.MkdirTemp("", "toold-audit")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(sockDir)
	spec, _ := json.Marshal(tooldChild{Socket: filepath.Join(sockDir, "t.sock"), Workspace: ws, StateDir: state})
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), asTooldEnv+"="+string(spec))
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
		grpc.WithConnectParams(grpc.ConnectParams{Backoff: backoff.Config{BaseDelay: 10 * time.Millisecond, Multiplier: 1, MaxDelay: 10 * time.Millisecond}, MinConnectTimeout: time.Second}))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s, err := pb.NewToolServiceClient(conn).ExecuteTool(ctx, grpc.WaitForReady(true))
	if err != nil {
		t.Fatal(err)
	}
	// Calls with effects (a command writing, a file written, an edit, a
	// delete) among effect-free ones, all sent at once; toold is killed as
	// soon as the last End arrives.
	effects := map[string]bool{}
	var calls []*pb.ToolCall
	for i := range 12 {
		var name, args string
		switch i % 4 {
		case 0:
			name, args = "run_command", fmt.Sprintf(`{"command":"echo %d > cmd-%d"}`, i, i)
		case 1:
			name, args = "write_file", fmt.Sprintf(`{"path":"w-%d","content":"x"}`, i)
		case 2:
			name, args = "run_command", fmt.Sprintf(`{"command":"rm -f w-%d"}`, i-1)
		case 3:
			name, args = "think", `{"thought":"effect-free"}`
		}
		id := fmt.Sprintf("c%02d", i)
		if name != "think" {
			effects[id] = true
		}
		calls = append(calls, &pb.ToolCall{CallId: id, Name: name, Arguments: &pb.ToolCall_ArgumentsJson{ArgumentsJson: args}})
	}
	for _, c := range calls {
		if err := s.Send(&pb.ClientMessage{Msg: &pb.ClientMessage_Call{Call: c}}); err != nil {
			t.Fatal(err)
		}
	}
	ended := map[string]bool{}
	for len(ended) < len(calls) {
		ev, err := s.Recv()
		if err != nil {
			t.Fatalf("the stream ended before every call did: %v (%d ended)", err, len(ended))
		}
		if e := ev.GetEnd(); e != nil {
			ended[ev.GetCallId()] = true
			if !e.GetResult().GetSuccess() {
				t.Errorf("%s: %v", ev.GetCallId(), e.GetResult().GetError())
			}
		}
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	waited = true

	// The next toold on the same state directory opens (and repairs) the
	// log; its chain verifies.
	d := daemontest.Start(t, daemontest.WithWorkspace(ws), daemontest.WithConfig(func(c *config.Config) { c.StateDir = state }))
	if err := d.Main.Close(); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(state, "audit")
	rep, err := audit.Verify(dir)
	if err != nil {
		t.Fatalf("the audit log does not verify after SIGKILL: %v (%+v)", err, rep)
	}
	kinds := map[string]map[string]bool{}
	files, _ := filepath.Glob(filepath.Join(dir, "*"))
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(fh)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var r audit.Record
			if json.Unmarshal(sc.Bytes(), &r) == nil && r.CallID != "" {
				if kinds[r.CallID] == nil {
					kinds[r.CallID] = map[string]bool{}
				}
				kinds[r.CallID][r.Kind] = true
			}
		}
		fh.Close()
	}
	for id := range effects {
		if !kinds[id][audit.KindDecision] || !kinds[id][audit.KindCallStart] {
			t.Errorf("%s had an effect but its audit records after SIGKILL are %v: want a decision and a call.start", id, kinds[id])
		}
	}
	t.Logf("%d records in %d files verify; records by call: %v", rep.Records, rep.Files, kinds)
}
