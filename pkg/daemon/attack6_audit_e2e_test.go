package daemon_test

// Attacks on the audit log's durability after the recorder lost its
// per-millisecond timer and the writer's 64 KiB wake-up its fsync
// (issue 27's hot5, 5d13543, e93646f). docs/audit.md: "A call with an
// effect ... has its decision and start records in the file (one
// write(2) ...) before it runs"; "An orderly stop loses nothing"; an
// effect-free call's records are queued "at most 16 ms after the call's
// end" and written "within audit.sync_interval (100 ms)".

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials/insecure"

	pb "github.com/toold/toold/gen/toold/v1"
	"github.com/toold/toold/pkg/audit"
	"github.com/toold/toold/pkg/daemon/daemontest"
	"github.com/toold/toold/pkg/testenv"
)

// rawAuditKinds reads the audit files in dir as they are on disk (a torn
// last line is skipped) and returns the kinds of record of each call.
func rawAuditKinds(t *testing.T, dir string) map[string]map[string]bool {
	t.Helper()
	kinds := map[string]map[string]bool{}
	files, _ := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range bytes.Split(data, []byte("\n")) {
			var r audit.Record
			if json.Unmarshal(line, &r) == nil && r.CallID != "" {
				if kinds[r.CallID] == nil {
					kinds[r.CallID] = map[string]bool{}
				}
				kinds[r.CallID][r.Kind] = true
			}
		}
	}
	return kinds
}

// SIGKILL toold the moment a command's effect appears (the inotify event
// of the file it creates): every command whose file exists has its
// decision and call.start in the audit files on disk. Three rounds, each
// with eight commands and forty think calls sent at once on one stream.
func TestAttackAuditDurableAtEffect(t *testing.T) {
	if testing.Short() {
		t.Skip("starts toold in child processes")
	}
	for round := range 3 {
		ws, state := t.TempDir(), t.TempDir()
		sockDir, err := os.MkdirTemp("", "toold-a6")
		if err != nil {
			t.Fatal(err)
		}
		defer os.RemoveAll(sockDir)
		in, err := unix.InotifyInit1(unix.IN_CLOEXEC)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := unix.InotifyAddWatch(in, ws, unix.IN_CREATE); err != nil {
			t.Fatal(err)
		}
		spec, _ := json.Marshal(tooldChild{Socket: filepath.Join(sockDir, "t.sock"), Workspace: ws, StateDir: state})
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), asTooldEnv+"="+string(spec))
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		killed := make(chan struct{})
		go func() {
			// The first canary created kills toold at once.
			buf := make([]byte, 4096)
			for {
				n, err := unix.Read(in, buf)
				if err != nil || n <= 0 {
					return
				}
				for off := 0; off+unix.SizeofInotifyEvent <= n; {
					ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
					name := strings.TrimRight(string(buf[off+unix.SizeofInotifyEvent:off+unix.SizeofInotifyEvent+int(ev.Len)]), "\x00")
					off += unix.SizeofInotifyEvent + int(ev.Len)
					if strings.HasPrefix(name, "canary-") {
						_ = cmd.Process.Signal(syscall.SIGKILL)
						close(killed)
						return
					}
				}
			}
		}()
		conn, err := grpc.NewClient("unix://"+filepath.Join(sockDir, "t.sock"), grpc.WithTransportCredentials(insecure.NewCredentials()),
			grpc.WithConnectParams(grpc.ConnectParams{Backoff: backoff.Config{BaseDelay: 10 * time.Millisecond, Multiplier: 1, MaxDelay: 10 * time.Millisecond}, MinConnectTimeout: time.Second}))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		s, err := pb.NewToolServiceClient(conn).ExecuteTool(ctx, grpc.WaitForReady(true))
		if err != nil {
			t.Fatal(err)
		}
		for i := range 48 {
			id, name, args := fmt.Sprintf("t%02d", i), "think", `{"thought":"burst"}`
			if i%6 == 5 {
				id, name, args = fmt.Sprintf("c%02d", i), "run_command", fmt.Sprintf(`{"command":": > canary-%02d"}`, i)
			}
			if err := s.Send(&pb.ClientMessage{Msg: &pb.ClientMessage_Call{Call: &pb.ToolCall{CallId: id, Name: name, Arguments: &pb.ToolCall_ArgumentsJson{ArgumentsJson: args}}}}); err != nil {
				break // killed already
			}
		}
		select {
		case <-killed:
		case <-ctx.Done():
			t.Fatal("no command created its canary")
		}
		_ = cmd.Wait()
		cancel()
		conn.Close()
		unix.Close(in)
		canaries, _ := filepath.Glob(filepath.Join(ws, "canary-*"))
		kinds := rawAuditKinds(t, filepath.Join(state, "audit"))
		for _, c := range canaries {
			id := "c" + strings.TrimPrefix(filepath.Base(c), "canary-")
			if !kinds[id][audit.KindDecision] || !kinds[id][audit.KindCallStart] {
				t.Errorf("round %d: %s's command ran (its canary exists) but the audit files on disk after SIGKILL hold %v of it: want a decision and a call.start", round, id, kinds[id])
			}
		}
		t.Logf("round %d: %d canaries, records of %d calls on disk", round, len(canaries), len(kinds))
	}
}

// A burst of effect-free calls that is not a multiple of the recorder's
// batch (64) nor fills the writer's 64 KiB, then silence: every call's
// decision, call.start and call.end reach the audit file on disk without
// another call or a flush (the documented bound is 16 ms + sync_interval;
// the poll allows far more so that only "never" fails). Then an orderly
// stop: the records of every call that ended, commands' too, are on disk.
func TestAttackAuditBurstThenSilence(t *testing.T) {
	d := daemontest.Start(t)
	dir := filepath.Join(d.Main.Config.StateDir, "audit")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s, err := d.Client.ExecuteTool(ctx)
	if err != nil {
		t.Fatal(err)
	}
	run := func(ids []string, name func(i int) (string, string)) {
		t.Helper()
		for i, id := range ids {
			n, a := name(i)
			if err := s.Send(&pb.ClientMessage{Msg: &pb.ClientMessage_Call{Call: &pb.ToolCall{CallId: id, Name: n, Arguments: &pb.ToolCall_ArgumentsJson{ArgumentsJson: a}}}}); err != nil {
				t.Fatal(err)
			}
		}
		for ended := 0; ended < len(ids); {
			ev, err := s.Recv()
			if err != nil {
				t.Fatal(err)
			}
			if ev.GetEnd() != nil {
				ended++
			}
		}
	}
	think := func(int) (string, string) { return "think", `{"thought":"x"}` }
	var all []string
	for _, n := range []int{1, 63, 65, 130} {
		ids := make([]string, n)
		for i := range ids {
			ids[i] = fmt.Sprintf("b%d-%03d", n, i)
		}
		all = append(all, ids...)
		run(ids, think)
		testenv.Poll(t, 30*time.Second, fmt.Sprintf("the %d calls' records to reach the audit file", n), func() bool {
			kinds := rawAuditKinds(t, dir)
			for _, id := range ids {
				if k := kinds[id]; !k[audit.KindDecision] || !k[audit.KindCallStart] || !k[audit.KindCallEnd] {
					return false
				}
			}
			return true
		})
	}
	last := []string{"e0", "e1", "e2", "e3", "e4", "e5"}
	run(last, func(i int) (string, string) {
		if i%2 == 0 {
			return "run_command", fmt.Sprintf(`{"command":"echo %d"}`, i)
		}
		return "think", `{"thought":"y"}`
	})
	all = append(all, last...)
	s.CloseSend()
	if err := d.Main.Close(); err != nil {
		t.Fatal(err)
	}
	kinds := rawAuditKinds(t, dir)
	for _, id := range all {
		if k := kinds[id]; !k[audit.KindDecision] || !k[audit.KindCallStart] || !k[audit.KindCallEnd] {
			t.Errorf("%s ended before an orderly stop; its records on disk: %v", id, k)
		}
	}
}
