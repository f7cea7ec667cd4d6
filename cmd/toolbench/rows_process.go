// Rows of commands and sessions: run_command (row 6), streamed output
// (row 7) and the memory of open PTY sessions (row 9c).

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	pb "github.com/toold/toold/gen/toold/v1"
)

// Row 6: run_command true vs a bare fork/exec of the same command line
// from Go; the target is on the overhead (difference of the p50s). The
// command runs unsandboxed here (terminal.sandbox: off): what the sandbox
// adds is row 6s (rows_sandbox.go).
func (b *bench) rowRunCommand(ctx context.Context, ws string) []*Row {
	row := &Row{ID: "run-true", Title: "6. `run_command true` (bash -c true)", Kind: Latency, Target: "overhead ≤ 0.5 ms",
		check: func(r *Row) bool { return r.Toold.P50-r.Base[0].P50 <= 0.5 }}
	cfg, err := b.writeConfig("run", map[string]any{"approval_mode": "yolo", "terminal": map[string]any{"sandbox": "off"}})
	if err == nil {
		var d *daemon
		if d, err = b.startToold(ctx, ws, "--config", cfg); err == nil {
			defer d.stop()
			var tc *conv
			if tc, err = openConv(ctx, d.client, &pb.Hello{OmitExecuting: true, ConversationId: "bench"}); err == nil {
				defer tc.close()
				var exitCode float64 = -1
				tooldCall := timed(func() error {
					res, err := tc.call("run_command", `{"command":"true"}`)
					if err != nil {
						return err
					}
					if !res.GetSuccess() {
						return fmt.Errorf("run_command failed: %v", res.GetError())
					}
					exitCode = res.GetStructured().GetFields()["exit_code"].GetNumberValue()
					return nil
				})
				bareBash := timed(func() error { return exec.Command("bash", "-c", "true").Run() })
				n := b.iters(300)
				if _, _, err = rounds(20, 2, tooldCall, bareBash); err == nil {
					var dt, db []time.Duration
					if dt, db, err = rounds(n, 20, tooldCall, bareBash); err == nil {
						var dtrue []time.Duration
						for i := 0; i < n/2; i++ {
							d, _ := timed(func() error { return exec.Command("true").Run() })()
							dtrue = append(dtrue, d)
						}
						row.Toold = latencies("toold", dt)
						row.Base = []Measure{latencies("exec bash -c true", db), latencies("exec true", dtrue)}
						row.Verified = fmt.Sprintf("exit code %v; overhead %s", exitCode, ms(row.Toold.P50-row.Base[0].P50))
						if exitCode != 0 {
							row.Error = fmt.Sprintf("exit code %v", exitCode)
						}
					}
				}
			}
		}
	}
	if err != nil {
		row.Error = err.Error()
	}
	return []*Row{row}
}

// Row 7: 200 MB written to stdout by a command and streamed to the client
// vs the same bytes read from a raw pipe.
func (b *bench) rowStream(ctx context.Context, ws string) []*Row {
	// The target is issue 27's: against the bare gRPC stream (the first
	// baseline, so the ratio column is toold's share of it).
	row := &Row{ID: "stream-200m", Title: "7. 200 MB of command output streamed to the client", Kind: Rate, Unit: "MB/s", Target: "≥ 0.8× the bare gRPC stream",
		check: func(r *Row) bool { return r.Ratio >= 0.8 }}
	size := 200 << 20
	if b.smoke {
		size = 8 << 20
	}
	command := fmt.Sprintf("head -c %d /dev/zero", size)
	cfg, err := b.writeConfig("stream", map[string]any{"approval_mode": "yolo"})
	if err != nil {
		row.Error = err.Error()
		return []*Row{row}
	}
	d, err := b.startToold(ctx, ws, "--config", cfg)
	if err != nil {
		row.Error = err.Error()
		return []*Row{row}
	}
	defer d.stop()
	// The gRPC limit: a bare server streaming the same bytes in chunks of
	// toold's largest size, nothing else (no command, no pipe, no keeping).
	bare, err := b.startBareStreaming(size, &pb.ServerEvent{Event: &pb.ServerEvent_End{End: &pb.ToolCallEnd{Result: &pb.ToolResult{Success: true}}}})
	if err != nil {
		row.Error = err.Error()
		return []*Row{row}
	}
	defer bare.stop()
	var toold, raw, grpcLimit []float64
	var tooldChunks, bareChunks int
	// CPU per run, in ms: the server's own (toold's, the bare server's),
	// toold's reaped children (the command and its helper, once toold
	// has reaped the helper), the client's.
	var cpuToold, cpuCmd, cpuTooldClient, cpuBare, cpuBareClient []float64
	var swToold, swBare []float64 // the server's context switches per run
	for round := 0; round < 3 && row.Error == ""; round++ {
		tc, err := openConv(ctx, d.client, &pb.Hello{OmitExecuting: true, ConversationId: fmt.Sprint("s", round)})
		if err != nil {
			row.Error = err.Error()
			break
		}
		s0, c0 := procCPU(d.pid())
		w0 := procSwitches(d.pid())
		// The command is reaped by its sandbox helper, and the helper by
		// toold a moment after the call's end: toold's children's CPU
		// counts the command only once that helper is gone.
		helper := watchChild(d.pid(), command)
		u0 := selfCPU()
		t0 := time.Now()
		got, chunks, err := streamCall(tc, command)
		tooldChunks = chunks
		el := time.Since(t0)
		u1 := selfCPU()
		s1, _ := procCPU(d.pid())
		c1 := math.NaN() // unknown: not counted in the median
		if h := helper(); h > 0 && waitGone(d.pid(), h, 10*time.Second) {
			_, c1 = procCPU(d.pid())
		}
		swToold = append(swToold, float64(procSwitches(d.pid())-w0))
		cpuToold, cpuTooldClient = append(cpuToold, s1-s0), append(cpuTooldClient, u1-u0)
		if !math.IsNaN(c1) {
			cpuCmd = append(cpuCmd, c1-c0)
		}
		tc.close()
		if err != nil || got != size {
			row.Error = fmt.Sprintf("streamed %d of %d bytes: %v", got, size, err)
			break
		}
		toold = append(toold, float64(size)/(1<<20)/el.Seconds())
		cmd := exec.Command("bash", "-c", command)
		out, _ := cmd.StdoutPipe()
		t0 = time.Now()
		if err := cmd.Start(); err != nil {
			row.Error = err.Error()
			break
		}
		n, _ := io.CopyBuffer(io.Discard, out, make([]byte, 64<<10))
		_ = cmd.Wait()
		el = time.Since(t0)
		if int(n) != size {
			row.Error = fmt.Sprintf("raw pipe read %d of %d bytes", n, size)
			break
		}
		raw = append(raw, float64(size)/(1<<20)/el.Seconds())

		bc, err := openConv(ctx, bare.client, nil)
		if err != nil {
			row.Error = err.Error()
			break
		}
		s0, _ = procCPU(bare.cmd.Process.Pid)
		w0 = procSwitches(bare.cmd.Process.Pid)
		u0 = selfCPU()
		t0 = time.Now()
		got, chunks, err = streamCall(bc, command)
		bareChunks = chunks
		el = time.Since(t0)
		u1 = selfCPU()
		s1, _ = procCPU(bare.cmd.Process.Pid)
		swBare = append(swBare, float64(procSwitches(bare.cmd.Process.Pid)-w0))
		cpuBare, cpuBareClient = append(cpuBare, s1-s0), append(cpuBareClient, u1-u0)
		bc.close()
		if err != nil || got != size {
			row.Error = fmt.Sprintf("bare server streamed %d of %d bytes: %v", got, size, err)
			break
		}
		grpcLimit = append(grpcLimit, float64(size)/(1<<20)/el.Seconds())
	}
	row.Toold = Measure{Name: "toold", Rate: median(toold), N: len(toold)}
	row.Base = []Measure{{Name: "bare gRPC stream, 256 KiB chunks (the transport's limit)", Rate: median(grpcLimit), N: len(grpcLimit)}, {Name: "raw pipe", Rate: median(raw), N: len(raw)}}
	row.Verified = fmt.Sprintf("%d bytes received in order as output chunks (median of 3)", size)
	if l, r := median(grpcLimit), median(raw); l > 0 && r > 0 {
		row.Verified += fmt.Sprintf("; toold %.2f× the raw pipe; the bare gRPC stream is itself %.2f× the raw pipe", median(toold)/r, l/r)
	}
	if tooldChunks > 0 && bareChunks > 0 {
		row.Verified += fmt.Sprintf("; toold sent %d output chunks (%d KiB on average), the bare stream %d", tooldChunks, size/tooldChunks>>10, bareChunks)
	}
	if len(cpuToold) > 0 && len(cpuBare) > 0 {
		cmdCPU := "unknown (its helper was not found)"
		if len(cpuCmd) > 0 {
			cmdCPU = fmt.Sprintf("%.0f ms", median(cpuCmd))
		}
		row.Verified += fmt.Sprintf("; CPU per run (median): toold %.0f ms, its command and sandbox helper %s, client %.0f ms; bare server %.0f ms, client %.0f ms",
			median(cpuToold), cmdCPU, median(cpuTooldClient), median(cpuBare), median(cpuBareClient))
		row.Verified += fmt.Sprintf("; context switches per run: toold %.0f, bare server %.0f", median(swToold), median(swBare))
	}
	return []*Row{row}
}

// streamCall runs a command and counts the output bytes it streams, and the
// chunks they came in, checking the offsets are contiguous.
func streamCall(c *conv, command string) (got, chunks int, err error) {
	c.seq++
	id := fmt.Sprint(c.seq)
	args, _ := json.Marshal(map[string]any{"command": command, "timeout": 600})
	if err := c.s.Send(&pb.ClientMessage{Msg: &pb.ClientMessage_Call{Call: &pb.ToolCall{
		CallId: id, Name: "run_command", Arguments: &pb.ToolCall_ArgumentsJson{ArgumentsJson: string(args)},
	}}}); err != nil {
		return 0, 0, err
	}
	for {
		ev, err := c.s.Recv()
		if err != nil {
			return got, chunks, err
		}
		if o := ev.GetProgress().GetOutput(); o != nil {
			chunks++
			if o.GetOffset() != uint64(got) {
				return got, chunks, fmt.Errorf("chunk at offset %d after %d bytes", o.GetOffset(), got)
			}
			got += len(o.GetData())
		}
		if e := ev.GetEnd(); e != nil {
			if !e.GetResult().GetSuccess() {
				return got, chunks, fmt.Errorf("run_command failed: %v", e.GetResult().GetError())
			}
			return got, chunks, nil
		}
	}
}

// Row 9c: daemon memory with 100 PTY sessions open (the shells' own memory
// is theirs, not the daemon's).
func (b *bench) rowSessions(ctx context.Context, ws string) []*Row {
	row := &Row{ID: "rss-100-sessions", Title: "9c. daemon RSS with 100 PTY sessions", Kind: Value, Unit: "MB", Target: "— (reported)"}
	n := 100
	if b.smoke {
		n = 5
	}
	cfg, err := b.writeConfig("sessions", map[string]any{"approval_mode": "yolo"})
	if err != nil {
		row.Error = err.Error()
		return []*Row{row}
	}
	d, err := b.startToold(ctx, ws, "--config", cfg)
	if err != nil {
		row.Error = err.Error()
		return []*Row{row}
	}
	defer d.stop()
	opened := 0
	for i := 0; i < n; i++ {
		tc, err := openConv(ctx, d.client, &pb.Hello{OmitExecuting: true, ConversationId: fmt.Sprint("pty", i)})
		if err != nil {
			row.Error = err.Error()
			break
		}
		res, err := tc.call("create_session", `{"shell":"sh"}`)
		tc.close()
		if err != nil || !res.GetSuccess() {
			row.Error = fmt.Sprintf("create_session %d: %v %v", i, err, res.GetError())
			break
		}
		opened++
	}
	time.Sleep(300 * time.Millisecond)
	rss, err := rssMB(d.pid())
	if err != nil && row.Error == "" {
		row.Error = err.Error()
	}
	row.Toold = Measure{Name: "toold", Value: rss}
	row.Verified = fmt.Sprintf("%d sessions open (sh)", opened)
	return []*Row{row}
}

// Row 9e: a burst of 1,000 concurrent commands (20 streams × 50 calls of
// `sleep 2`, the default sandbox) and what the daemon keeps afterwards: OS
// threads and RSS before, at the peak, and 10 s after the last call ended.
// A sidecar's memory limit is set by its worst minute, so what a burst
// takes must come back.
func (b *bench) rowBurst(ctx context.Context, ws string) []*Row {
	row := &Row{ID: "burst-1000", Title: "9e. after a burst of 1,000 concurrent commands: OS threads and RSS come back down", Kind: Value, Unit: "threads",
		Target: "threads ≤ before + 16, RSS ≤ before + 25 MB"}
	var rss0, rss1 float64
	row.check = func(r *Row) bool { return r.Toold.Value <= r.Base[0].Value+16 && rss1 <= rss0+25 }
	streams, per := 20, 50
	if b.smoke {
		streams, per = 4, 10
	}
	cfg, err := b.writeConfig("burst", map[string]any{"approval_mode": "yolo", "limits": map[string]any{"calls_per_stream": per}})
	if err != nil {
		row.Error = err.Error()
		return []*Row{row}
	}
	d, err := b.startToold(ctx, ws, "--config", cfg)
	if err != nil {
		row.Error = err.Error()
		return []*Row{row}
	}
	defer d.stop()
	if c, err := openConv(ctx, d.client, &pb.Hello{}); err == nil {
		_, _ = c.call("run_command", `{"command":"true"}`)
		c.close()
	}
	time.Sleep(500 * time.Millisecond)
	thr0 := procThreads(d.pid())
	rss0 = must(rssMB(d.pid()))
	convs := make([]*conv, streams)
	for i := range convs {
		if convs[i], err = openConv(ctx, d.client, &pb.Hello{ConversationId: fmt.Sprint("burst", i)}); err != nil {
			row.Error = err.Error()
			return []*Row{row}
		}
	}
	var peakThr int
	var peakRSS float64
	stopPeak := make(chan struct{})
	peakDone := make(chan struct{})
	go func() {
		defer close(peakDone)
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			peakThr = max(peakThr, procThreads(d.pid()))
			if r, err := rssMB(d.pid()); err == nil {
				peakRSS = max(peakRSS, r)
			}
			select {
			case <-stopPeak:
				return
			case <-t.C:
			}
		}
	}()
	errs := make(chan error, streams)
	ok := 0
	var okMu sync.Mutex
	for _, cv := range convs {
		go func() {
			for i := 1; i <= per; i++ {
				if err := cv.s.Send(&pb.ClientMessage{Msg: &pb.ClientMessage_Call{Call: &pb.ToolCall{
					CallId: fmt.Sprint(i), Name: "run_command", Arguments: &pb.ToolCall_ArgumentsJson{ArgumentsJson: `{"command":"sleep 2"}`},
				}}}); err != nil {
					errs <- err
					return
				}
			}
			for ended := 0; ended < per; {
				ev, err := cv.s.Recv()
				if err != nil {
					errs <- err
					return
				}
				if e := ev.GetEnd(); e != nil {
					ended++
					if e.GetResult().GetSuccess() {
						okMu.Lock()
						ok++
						okMu.Unlock()
					}
				}
			}
			errs <- nil
		}()
	}
	for range convs {
		if err := <-errs; err != nil && row.Error == "" {
			row.Error = err.Error()
		}
	}
	close(stopPeak)
	<-peakDone
	for _, cv := range convs {
		cv.close()
	}
	time.Sleep(10 * time.Second)
	thr1 := procThreads(d.pid())
	rss1 = must(rssMB(d.pid()))
	row.Toold = Measure{Name: "threads 10 s after", Value: float64(thr1)}
	row.Base = []Measure{
		{Name: "threads before", Value: float64(thr0)},
		{Name: "threads at peak", Value: float64(peakThr)},
	}
	row.Verified = fmt.Sprintf("%d of %d commands ended success; RSS %.1f MB before, %.1f MB at peak, %.1f MB 10 s after", ok, streams*per, rss0, peakRSS, rss1)
	if ok != streams*per && row.Error == "" {
		row.Error = fmt.Sprintf("only %d of %d commands ended success", ok, streams*per)
	}
	return []*Row{row}
}

// procCPU returns the CPU time, in ms, a process used (user and system)
// and the CPU time of its children it has waited for (0, 0 if unknown;
// the kernel counts in clock ticks, 10 ms here).
func procCPU(pid int) (self, children float64) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0
	}
	// The fields after the command name: state is field 3, utime 14,
	// stime 15, cutime 16, cstime 17.
	i := strings.LastIndexByte(string(b), ')')
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 15 {
		return 0, 0
	}
	tick := func(s string) float64 { v, _ := strconv.ParseFloat(s, 64); return v * 10 }
	return tick(f[11]) + tick(f[12]), tick(f[13]) + tick(f[14])
}

// watchChild looks, in a goroutine, for the process running command
// (its argv joined by spaces) below daemon and returns a function that
// gives the child of daemon it runs under (its sandbox helper), 0 when none
// was seen. The search stops once it is found, or when the function is
// called.
func watchChild(daemon int, command string) func() int {
	var found atomic.Int64
	stop := make(chan struct{})
	go func() {
		for {
			if h := childRunning(daemon, command); h > 0 {
				found.Store(int64(h))
				return
			}
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	return func() int {
		close(stop)
		return int(found.Load())
	}
}

// childRunning returns the child of daemon whose tree holds a process
// running command, or 0.
func childRunning(daemon int, command string) int {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil || strings.TrimRight(strings.ReplaceAll(string(b), "\x00", " "), " ") != command {
			continue
		}
		// Up the tree to the daemon's child.
		for p := pid; p > 1; {
			pp := procPPid(p)
			if pp == daemon {
				return p
			}
			p = pp
		}
	}
	return 0
}

// procPPid returns a process's parent pid (0 if unknown).
func procPPid(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	i := strings.LastIndexByte(string(b), ')')
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 2 {
		return 0
	}
	pp, _ := strconv.Atoi(f[1])
	return pp
}

// waitGone waits until pid is no longer a child of parent (it was
// reaped), polling; false after timeout.
func waitGone(parent, pid int, timeout time.Duration) bool {
	for end := time.Now().Add(timeout); time.Now().Before(end); time.Sleep(time.Millisecond) {
		if procPPid(pid) != parent {
			return true
		}
	}
	return false
}

// procSwitches is the number of context switches of a process's live
// threads, voluntary and not (0 if unknown).
func procSwitches(pid int) int {
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/status", pid))
	n := 0
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasSuffix(strings.Fields(line + " x")[0], "ctxt_switches:") {
				v, _ := strconv.Atoi(strings.TrimSpace(line[strings.IndexByte(line, ':')+1:]))
				n += v
			}
		}
	}
	return n
}

// selfCPU is the CPU time, in ms, this process used so far (the client's,
// while it only receives a stream).
func selfCPU() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e6
}

// procThreads returns a process's OS thread count (0 if unknown).
func procThreads(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "Threads:"); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(v))
			return n
		}
	}
	return 0
}

func must[T any](v T, _ error) T { return v }
