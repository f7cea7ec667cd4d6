package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	pb "github.com/toold/toold/gen/toold/v1"
)

// rung is one server of the ladder: a bare server (ladderd) with some of
// toold's layers, or toold itself configured with some of its layers.
type rung struct {
	id, title string
	flags     []string // ladderd's flags (nil for toold)
	toold     bool
	config    map[string]any // toold's config
	env       []string       // toold's environment
	events    int            // ladderd: 1 answers with the End only, else toold's events
	otlp      bool           // toold exports its spans over OTLP/gRPC to the bench's sink
}

// ladderRungs are the ladder's servers, each adding one of toold's layers
// to the one before.
var ladderRungs = []rung{
	{id: "a", title: "bare ping-pong (one reply, the size of toold's End)", flags: []string{}, events: 1},
	{id: "b", title: "bare, replying with toold's 3 events", flags: []string{}},
	{id: "c", title: "+ toold's codec and message limit (service.CodecServerOptions)", flags: []string{"-codec"}},
	{id: "d", title: "+ the otelgrpc stats handler and interceptor chain (daemon.ServerChain)", flags: []string{"-codec", "-chain"}},
	{id: "e", title: "+ one sender goroutine per stream, fed by the receiver", flags: []string{"-codec", "-chain", "-sender"}},
	{id: "f", title: "toold: event log, executor, think; audit and history off (metrics always on)", toold: true,
		config: map[string]any{"audit": map[string]any{"enabled": false}, "history": map[string]any{"backend": "off"}}},
	{id: "g", title: "toold + audit", toold: true,
		config: map[string]any{"history": map[string]any{"backend": "off"}}},
	{id: "h", title: "toold + history: toold's defaults (row 1)", toold: true},
	{id: "i", title: "toold + spans recorded and exported (OTLP/gRPC to a collector that counts them)", toold: true, otlp: true},
	{id: "j", title: "toold + spans exported for 1 call in 10 (OTEL_TRACES_SAMPLER=parentbased_traceidratio, 0.1)", toold: true, otlp: true,
		env: []string{"OTEL_TRACES_SAMPLER=parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG=0.1"}},
}

// rowLadder is the ladder: in one run, alternating in rounds so that the
// machine's drift lands on every rung alike, the p50 round trip of a
// think call through servers that each add one of toold's layers to the
// one before, all on a unix socket with the same client. Each rung is
// reported with its ratio to (a) and what it adds to the rung before: the
// same-run evidence of where row 1's time goes.
func (b *bench) rowLadder(ctx context.Context, ws string) []*Row {
	fail := func(err error) []*Row {
		return []*Row{{ID: "ladder", Title: "L. the round trip's ladder", Kind: Latency, Error: err.Error()}}
	}
	ladderd := b.ladderd
	if ladderd == "" {
		ladderd = filepath.Join(filepath.Dir(b.self), "ladderd")
	}
	if _, err := os.Stat(ladderd); err != nil {
		return fail(fmt.Errorf("the ladder's server is missing (go build -o %s/ ./cmd/toolbench/ladderd): %v", filepath.Dir(ladderd), err))
	}
	type live struct {
		rung
		conv  *conv
		stop  func()
		pid   int
		times []time.Duration
		// What the rung's server and the client spent during its
		// batches: CPU and times a thread was scheduled in (schedstat).
		srv, cli sched
	}
	var ls []*live
	defer func() {
		for _, l := range ls {
			if l.conv != nil {
				l.conv.close()
			}
			if l.stop != nil {
				l.stop()
			}
		}
	}()
	var events []*pb.ServerEvent
	sinks := map[string]*otlpSink{} // an exporting rung's collector
	defer func() {
		for _, s := range sinks {
			s.stop()
		}
	}()
	for _, r := range ladderRungs {
		if r.toold {
			env := r.env
			if r.otlp {
				sink, err := startOTLPSink()
				if err != nil {
					return fail(err)
				}
				sinks[r.id] = sink
				env = append(append([]string(nil), env...), sink.env()...)
			}
			args := []string{}
			if r.config != nil {
				cfg, err := b.writeConfig("ladder-"+r.id, r.config)
				if err != nil {
					return fail(err)
				}
				args = append(args, "--config", cfg)
			}
			d, err := b.startTooldEnv(ctx, env, ws, args...)
			if err != nil {
				return fail(fmt.Errorf("rung %s: %v", r.id, err))
			}
			if b.profiles != "" {
				// Every toold rung's profiles are kept (as ladder-ID),
				// target or not: they say what its step is made of.
				d.missed = append(d.missed, "ladder-"+r.id)
				b.current = nil
			}
			cv, err := openConv(ctx, d.client, &pb.Hello{})
			if err != nil {
				d.stop()
				return fail(err)
			}
			ls = append(ls, &live{rung: r, conv: cv, stop: d.stop, pid: d.pid()})
			if events == nil {
				if events, err = captureCall(ctx, d.client, &pb.Hello{}); err != nil {
					return fail(err)
				}
			}
			continue
		}
		ls = append(ls, &live{rung: r}) // started once toold's events are known
	}
	for _, l := range ls {
		if l.toold {
			continue
		}
		replies := events
		if l.events == 1 {
			replies = events[len(events)-1:]
		}
		flags := l.flags
		if b.profiles != "" {
			// Its CPU profile too, written when it stops.
			flags = append(append([]string(nil), flags...), "-cpuprofile", filepath.Join(b.profiles, "ladder-"+l.id+".cpu.pprof"))
			if b.trace {
				flags = append(flags, "-trace", filepath.Join(b.profiles, "ladder-"+l.id+".trace"))
			}
		}
		conn, pid, stop, err := b.startLadderd(ladderd, flags, replies)
		if err != nil {
			return fail(fmt.Errorf("rung %s: %v", l.id, err))
		}
		cv, err := openConv(ctx, pb.NewToolServiceClient(conn), nil)
		if err != nil {
			stop()
			return fail(err)
		}
		l.conv, l.stop, l.pid = cv, stop, pid
	}
	call := func(l *live) (time.Duration, error) {
		t0 := time.Now()
		res, err := l.conv.call("think", thinkArgs)
		d := time.Since(t0)
		if err == nil && l.toold && !res.GetSuccess() {
			err = fmt.Errorf("rung %s: think failed: %v", l.id, res.GetError())
		}
		return d, err
	}
	// Warm up, then rounds: each rung in turn, per calls each.
	rounds, per := 20, b.iters(400)
	if b.smoke {
		rounds = 1
	}
	for _, l := range ls {
		for range b.iters(500) {
			if _, err := call(l); err != nil {
				return fail(err)
			}
		}
	}
	self := os.Getpid()
	for range rounds {
		for _, l := range ls {
			s0, c0 := schedOf(l.pid), schedOf(self)
			for range per {
				d, err := call(l)
				if err != nil {
					return fail(err)
				}
				l.times = append(l.times, d)
			}
			l.srv.add(schedOf(l.pid).minus(s0))
			l.cli.add(schedOf(self).minus(c0))
		}
	}
	// An exporting rung's toold is stopped first (an orderly stop exports
	// what it still holds), so the sink has counted every span it sent.
	exported := map[string]int64{}
	for _, l := range ls {
		if l.otlp {
			l.conv.close()
			l.stop()
			l.conv, l.stop = nil, func() {}
			exported[l.id] = sinks[l.id].spans.Load()
		}
	}
	base := latencies("(a) bare ping-pong", ls[0].times)
	var rows []*Row
	prev := base
	for _, l := range ls {
		m := latencies("("+l.id+")", l.times)
		n := max(1, len(l.times))
		row := &Row{
			ID: "ladder-" + l.id, Title: fmt.Sprintf("L%s. %s", l.id, l.title), Kind: Latency,
			Toold: m, Base: []Measure{base}, Target: "— (reported)",
			Verified: fmt.Sprintf("%d calls in %d rounds alternating with every rung; every call ended; per call: server CPU %.1f µs, %.2f thread wake-ups, %.2f reads, %.2f writes; client CPU %.1f µs, %.2f wake-ups, %.2f reads",
				n, rounds, l.srv.cpuUs(n), l.srv.per(n), float64(l.srv.reads)/float64(n), float64(l.srv.writes)/float64(n),
				l.cli.cpuUs(n), l.cli.per(n), float64(l.cli.reads)/float64(n)),
		}
		if l.otlp {
			row.Verified += fmt.Sprintf("; the collector received %d spans (%.2f a call, warm-up included)", exported[l.id], float64(exported[l.id])/float64(n+b.iters(500)))
		}
		if l.id != "a" {
			row.Note = fmt.Sprintf("— p50 %+.1f µs over the rung before", (m.P50-prev.P50)*1000)
		}
		prev = m
		rows = append(rows, row)
	}
	if la, err := loadAverage(); err == nil {
		rows[0].Note = "— load average at the end: " + la
	}
	return rows
}

// startLadderd starts a ladderd with flags answering every call with
// replies, and connects to it.
func (b *bench) startLadderd(ladderd string, flags []string, replies []*pb.ServerEvent) (*grpc.ClientConn, int, func(), error) {
	sock := filepath.Join(b.tmp, fmt.Sprintf("ladder%d.sock", sockSeq.Add(1)))
	replyPath := sock + ".reply"
	var raw []byte
	for _, r := range replies {
		m, err := proto.Marshal(r)
		if err != nil {
			return nil, 0, nil, err
		}
		raw = protowire.AppendBytes(raw, m)
	}
	if err := os.WriteFile(replyPath, raw, 0o600); err != nil {
		return nil, 0, nil, err
	}
	cmd := exec.Command(ladderd, append([]string{"-socket", sock, "-reply", replyPath}, flags...)...)
	cmd.Env = append(os.Environ(), "OTEL_TRACES_EXPORTER=none")
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, 0, nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, 0, nil, err
	}
	stop := func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "ready" {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, 0, nil, fmt.Errorf("ladderd did not start: %q %v", line, err)
	}
	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		stop()
		return nil, 0, nil, err
	}
	return conn, cmd.Process.Pid, func() { conn.Close(); stop() }, nil
}

// loadAverage is /proc/loadavg's first three fields.
func loadAverage() (string, error) {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "", err
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "", fmt.Errorf("bad /proc/loadavg")
	}
	return strings.Join(f[:3], " "), nil
}

// sched is what a process's threads spent: CPU time and the number of
// times one was scheduled in (the first and third fields of each
// /proc/PID/task/TID/schedstat, summed). A thread that exited in between
// is missed: the figures are a floor.
type sched struct{ cpu, slices, reads, writes int64 }

func schedOf(pid int) sched {
	var s sched
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if err != nil {
			continue
		}
		var cpu, wait, slices int64
		if _, err := fmt.Sscan(string(b), &cpu, &wait, &slices); err == nil {
			s.cpu += cpu
			s.slices += slices
		}
	}
	// Read and write system calls (/proc/PID/io's syscr, syscw): how many
	// writes a call's events took, how many reads its message.
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid)); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			k, v, _ := strings.Cut(line, ": ")
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			switch k {
			case "syscr":
				s.reads = n
			case "syscw":
				s.writes = n
			}
		}
	}
	return s
}

func (s sched) minus(o sched) sched {
	return sched{s.cpu - o.cpu, s.slices - o.slices, s.reads - o.reads, s.writes - o.writes}
}

func (s *sched) add(o sched) {
	s.cpu += max(0, o.cpu)
	s.slices += max(0, o.slices)
	s.reads += max(0, o.reads)
	s.writes += max(0, o.writes)
}
func (s sched) cpuUs(n int) float64 { return float64(s.cpu) / 1e3 / float64(max(1, n)) }
func (s sched) per(n int) float64   { return float64(s.slices) / float64(max(1, n)) }
