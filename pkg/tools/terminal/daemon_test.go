package terminal_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"testing"
	"time"

	pb "github.com/toold/toold/gen/toold/v1"
	"github.com/toold/toold/pkg/config"
	"github.com/toold/toold/pkg/daemon/daemontest"
)

// conversation is one ExecuteTool stream of a real daemon.
type conversation struct {
	t testing.TB
	s pb.ToolService_ExecuteToolClient
}

func startConversation(t testing.TB, d *daemontest.Daemon, id string) *conversation {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	s, err := d.Client.ExecuteTool(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Send(&pb.ClientMessage{Msg: &pb.ClientMessage_Hello{Hello: &pb.Hello{ConversationId: id, OmitExecuting: true}}}); err != nil {
		t.Fatal(err)
	}
	if ev, err := s.Recv(); err != nil || ev.GetWelcome() == nil {
		t.Fatalf("welcome: %v %v", ev, err)
	}
	return &conversation{t: t, s: s}
}

func (c *conversation) send(id, name string, args map[string]any) {
	c.t.Helper()
	b, _ := json.Marshal(args)
	if err := c.s.Send(&pb.ClientMessage{Msg: &pb.ClientMessage_Call{Call: &pb.ToolCall{
		CallId: id, Name: name, Arguments: &pb.ToolCall_ArgumentsJson{ArgumentsJson: string(b)},
	}}}); err != nil {
		c.t.Fatal(err)
	}
}

// until reads events until the call's end, calling each for every event.
func (c *conversation) until(id string, each func(*pb.ServerEvent)) *pb.ToolResult {
	c.t.Helper()
	for {
		ev, err := c.s.Recv()
		if err != nil {
			c.t.Fatalf("recv: %v", err)
		}
		if ev.GetCallId() != id {
			continue
		}
		if each != nil {
			each(ev)
		}
		if e := ev.GetEnd(); e != nil {
			return e.GetResult()
		}
	}
}

func startDaemon(t testing.TB, mutate ...func(*config.Config)) *daemontest.Daemon {
	t.Helper()
	dir := t.TempDir()
	return daemontest.Start(t, daemontest.WithConfig(func(c *config.Config) {
		// These tests are about running commands, not about approving them.
		c.ApprovalMode = "yolo"
		c.Terminal.Dir = dir
		c.Terminal.Env = map[string]string{"HOME": dir}
		for _, f := range mutate {
			f(c)
		}
	}))
}

// Through a real daemon: output chunks arrive while the command runs, the
// call's display line shows the command, and the result has the exit code.
func TestDaemonRunCommand(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	c := startConversation(t, d, "conv-e2e")
	// The command prints its second line only once the test has seen the
	// first one (it waits for a file the test creates then): the first
	// chunk was streamed while the command ran, whatever the load.
	const command = "echo first;until [ -e f ];do sleep .01;done;echo second >&2;exit 4"
	c.send("1", "run_command", map[string]any{"command": command})
	var display string
	var streamed strings.Builder
	res := c.until("1", func(ev *pb.ServerEvent) {
		if s := ev.GetStart(); s != nil {
			display = s.GetDisplay()
		}
		if o := ev.GetProgress().GetOutput(); o != nil {
			streamed.Write(o.GetData())
			if strings.Contains(streamed.String(), "first\n") {
				if err := os.WriteFile(filepath.Join(d.Workspace, "f"), nil, 0o644); err != nil {
					t.Error(err)
				}
			}
		}
	})
	if display != "Running: "+command {
		t.Errorf("display %q", display)
	}
	if streamed.String() != "first\nsecond\n" {
		t.Errorf("streamed %q", streamed.String())
	}
	if !res.GetSuccess() || res.GetStructured().AsMap()["exit_code"] != float64(4) {
		t.Errorf("result %v", res)
	}
	// The dotted name and the consolidated tool reach the same operation.
	c.send("2", "terminal_operations", map[string]any{"operation": "read_output", "call_id": "1"})
	if r := c.until("2", nil); !strings.Contains(r.GetContent()[0].GetText(), "first") {
		t.Errorf("read_output: %v", r)
	}
}

// 100 MB of output stream through the daemon to the client while the
// daemon's heap stays flat; all of it is kept.
func TestDaemonStream100MB(t *testing.T) {
	const size = 100_000_000
	d := startDaemon(t, func(c *config.Config) { c.Terminal.KeepPerCall = 128 << 20 })
	c := startConversation(t, d, "conv-big")
	// The live heap (what the last GC found reachable) is what must stay
	// flat; the heap in use also counts garbage not yet collected, which
	// depends on when the GC gets to run on a loaded machine.
	live := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	liveHeap := func() uint64 { metrics.Read(live); return live[0].Value.Uint64() }
	runtime.GC()
	base := liveHeap()
	var peak uint64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				peak = max(peak, liveHeap())
			}
		}
	}()
	begin := time.Now()
	c.send("big", "run_command", map[string]any{"command": "yes 0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ | head -c 100000000"})
	var got int64
	var last uint64
	res := c.until("big", func(ev *pb.ServerEvent) {
		if o := ev.GetProgress().GetOutput(); o != nil {
			if o.GetOffset() != last {
				t.Fatalf("chunk at offset %d, want %d", o.GetOffset(), last)
			}
			got += int64(len(o.GetData()))
			last += uint64(len(o.GetData()))
		}
	})
	took := time.Since(begin)
	close(stop)
	wg.Wait()
	growth := int64(peak) - int64(base)
	t.Logf("%d MB in %s (%.0f MB/s); live heap %d MB before, peak %d MB (+%d MB)",
		size/1_000_000, took.Round(time.Millisecond), float64(size)/1e6/took.Seconds(), base>>20, peak>>20, growth>>20)
	if got != size || res.GetStructured().AsMap()["output_bytes"] != float64(size) {
		t.Fatalf("streamed %d bytes; result %v", got, res.GetStructured())
	}
	if growth > 48<<20 {
		t.Errorf("the heap grew by %d MB while streaming; it should stay flat", growth>>20)
	}
	if !strings.Contains(res.GetContent()[0].GetText(), "cut:") {
		t.Errorf("the result is not a head and tail view")
	}
	// All of it was kept: the last bytes read back.
	c.send("tail", "read_output", map[string]any{"call_id": "big", "offset": size - 10})
	if r := c.until("tail", nil); !strings.Contains(r.GetContent()[0].GetText(), "bytes 99999990 to 100000000") {
		t.Errorf("read_output of the end: %v", r.GetContent()[0].GetText())
	}
}
