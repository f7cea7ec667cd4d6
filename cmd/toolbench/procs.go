package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	pb "github.com/toold/toold/gen/toold/v1"
)

var sockSeq atomic.Int32

// daemon is a toold process the harness started.
type daemon struct {
	cmd     *exec.Cmd
	sock    string
	conn    *grpc.ClientConn
	client  pb.ToolServiceClient
	startup time.Duration // from exec to health SERVING
	log     string

	// With -profiles: toold's CPU and allocation profiles (written when it
	// stops), kept under profDir for the rows in missed.
	cpuProf, memProf, profDir string
	trace                     string // the execution trace (-trace), or ""
	missed                    []string
	stopped                   bool
}

// startToold starts the toold binary on a fresh socket with workspace and
// waits until its health check reports SERVING.
func (b *bench) startToold(ctx context.Context, workspace string, extra ...string) (*daemon, error) {
	return b.startTooldEnv(ctx, nil, workspace, extra...)
}

// startTooldEnv is startToold with env added to toold's environment (after
// toolbench's own settings, so it overrides them).
func (b *bench) startTooldEnv(ctx context.Context, env []string, workspace string, extra ...string) (*daemon, error) {
	sock := filepath.Join(b.tmp, fmt.Sprintf("toold%d.sock", sockSeq.Add(1)))
	logPath := sock + ".log"
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	args := append([]string{"--socket", sock, "--workspace", workspace, "--log-level", "warn", "--state-dir", sock + ".state"}, extra...)
	d := &daemon{sock: sock, log: logPath}
	if b.profiles != "" {
		d.cpuProf, d.memProf, d.profDir = sock+".cpu.pprof", sock+".allocs.pprof", b.profiles
		args = append(args, "--cpuprofile", d.cpuProf, "--memprofile", d.memProf)
		if b.trace {
			d.trace = sock + ".trace"
			args = append(args, "--trace", d.trace)
		}
		b.current = d
	}
	cmd := exec.Command(b.toold, args...)
	cmd.Stderr = logf
	cmd.Stdout = logf
	cmd.Env = append(append(os.Environ(), "OTEL_TRACES_EXPORTER=none"), env...)
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	d.cmd = cmd
	conn, err := waitServing(ctx, sock)
	if err != nil {
		d.stop()
		log, _ := os.ReadFile(logPath)
		return nil, fmt.Errorf("toold did not become SERVING: %v\n%s", err, log)
	}
	d.startup = time.Since(t0)
	d.conn, d.client = conn, pb.NewToolServiceClient(conn)
	return d, nil
}

// waitServing connects to the gRPC server starting on sock and returns once
// its health check answers SERVING (within 20 s). It retries every
// millisecond, so that a measured start-up is the server's, not the
// client's reconnect backoff.
func waitServing(ctx context.Context, sock string) (*grpc.ClientConn, error) {
	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithConnectParams(grpc.ConnectParams{Backoff: backoff.Config{BaseDelay: time.Millisecond, Multiplier: 1, MaxDelay: time.Millisecond}, MinConnectTimeout: time.Second}))
	if err != nil {
		return nil, err
	}
	hc := healthpb.NewHealthClient(conn)
	deadline := time.Now().Add(20 * time.Second)
	for {
		cctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		resp, err := hc.Check(cctx, &healthpb.HealthCheckRequest{}, grpc.WaitForReady(true))
		cancel()
		if err == nil && resp.GetStatus() == healthpb.HealthCheckResponse_SERVING {
			return conn, nil
		}
		if time.Now().After(deadline) {
			conn.Close()
			return nil, err
		}
		time.Sleep(time.Millisecond)
	}
}

// startBareIdle starts a bare gRPC server (serve-bare, answering nothing
// but health) and measures it as startToold measures toold: from exec to
// health SERVING. It is the floor of a Go gRPC daemon's start-up and
// memory on this machine, measured in the same run.
func (b *bench) startBareIdle(ctx context.Context) (*bareServer, time.Duration, error) {
	sock := filepath.Join(b.tmp, fmt.Sprintf("bare%d.sock", sockSeq.Add(1)))
	replyPath := sock + ".reply"
	if err := os.WriteFile(replyPath, nil, 0o600); err != nil {
		return nil, 0, err
	}
	cmd := exec.Command(b.self, "serve-bare", "-socket", sock, "-reply", replyPath)
	cmd.Stderr = os.Stderr
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, 0, err
	}
	conn, err := waitServing(ctx, sock)
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, 0, fmt.Errorf("bare server did not become SERVING: %v", err)
	}
	d := time.Since(t0)
	return &bareServer{cmd: cmd, conn: conn, client: pb.NewToolServiceClient(conn)}, d, nil
}

// pid returns the daemon's process id.
func (d *daemon) pid() int { return d.cmd.Process.Pid }

// stop ends the daemon with SIGTERM and waits.
func (d *daemon) stop() {
	if d.conn != nil {
		d.conn.Close()
	}
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = d.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		_ = d.cmd.Process.Kill()
		<-done
	}
	d.stopped = true
	for _, id := range d.missed {
		d.keepProfiles(id)
	}
}

// keepProfiles copies the daemon's profiles (once it has stopped) to
// profDir as ID.cpu.pprof and ID.allocs.pprof, and its execution trace as
// ID.trace.
func (d *daemon) keepProfiles(id string) {
	if err := os.MkdirAll(d.profDir, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "toolbench: profiles:", err)
		return
	}
	keep := map[string]string{d.cpuProf: id + ".cpu.pprof", d.memProf: id + ".allocs.pprof"}
	if d.trace != "" {
		keep[d.trace] = id + ".trace"
	}
	for src, name := range keep {
		b, err := os.ReadFile(src)
		if err == nil {
			err = os.WriteFile(filepath.Join(d.profDir, name), b, 0o644)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "toolbench: profiles:", err)
		}
	}
}

// rssMB reads a process's resident set size.
// rssParts returns a process's resident memory in MB by kind (RssAnon: what
// it allocated; RssFile: mapped files, its executable's pages above all).
func rssParts(pid int) (anon, file float64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		kb, _ := strconv.Atoi(f[1])
		switch f[0] {
		case "RssAnon:":
			anon = float64(kb) / 1024
		case "RssFile:":
			file = float64(kb) / 1024
		}
	}
	return anon, file, nil
}

// fileMB is the size of a file in MB (0 when it cannot be read).
func fileMB(path string) float64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return float64(fi.Size()) / (1 << 20)
}

func rssMB(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "VmRSS:") {
			f := strings.Fields(line)
			kb, err := strconv.Atoi(f[1])
			return float64(kb) / 1024, err
		}
	}
	return 0, errors.New("no VmRSS")
}

// conv is one ExecuteTool stream.
type conv struct {
	s   pb.ToolService_ExecuteToolClient
	seq int
}

func openConv(ctx context.Context, c pb.ToolServiceClient, hello *pb.Hello) (*conv, error) {
	s, err := c.ExecuteTool(ctx)
	if err != nil {
		return nil, err
	}
	if hello != nil {
		if err := s.Send(&pb.ClientMessage{Msg: &pb.ClientMessage_Hello{Hello: hello}}); err != nil {
			return nil, err
		}
		if _, err := s.Recv(); err != nil { // Welcome
			return nil, err
		}
	}
	return &conv{s: s}, nil
}

// call sends one call and reads until its end.
func (c *conv) call(name, args string) (*pb.ToolResult, error) {
	c.seq++
	id := strconv.Itoa(c.seq)
	err := c.s.Send(&pb.ClientMessage{Msg: &pb.ClientMessage_Call{Call: &pb.ToolCall{
		CallId: id, Name: name, Arguments: &pb.ToolCall_ArgumentsJson{ArgumentsJson: args},
	}}})
	if err != nil {
		return nil, err
	}
	for {
		ev, err := c.s.Recv()
		if err != nil {
			return nil, err
		}
		if e := ev.GetEnd(); e != nil && ev.GetCallId() == id {
			return e.GetResult(), nil
		}
	}
}

// close ends the client side of the stream.
func (c *conv) close() { _ = c.s.CloseSend() }

// bareServer is the limit: toold's service and messages on the same kind of
// socket, answering each call with one reply and doing nothing else. It runs
// as its own process, like toold.
type bareServer struct {
	cmd    *exec.Cmd
	conn   *grpc.ClientConn
	client pb.ToolServiceClient
}

// startBare starts `toolbench serve-bare` answering every call with the
// replies, in order (the last one must be a ToolCallEnd).
func (b *bench) startBare(replies ...*pb.ServerEvent) (*bareServer, error) {
	return b.startBareStreaming(0, replies...)
}

// startBareStreaming starts a bare server that, when stream > 0, answers
// every call with that many bytes of output in Progress chunks of
// streamChunk bytes (as toold sends a command's output) before the replies.
func (b *bench) startBareStreaming(stream int, replies ...*pb.ServerEvent) (*bareServer, error) {
	return b.startServer("serve-bare", replies, "-stream", strconv.Itoa(stream))
}

// startServer starts `toolbench MODE -socket S -reply F ARGS...`, the
// replies written to F, and waits for it to print "ready".
func (b *bench) startServer(mode string, replies []*pb.ServerEvent, args ...string) (*bareServer, error) {
	sock := filepath.Join(b.tmp, fmt.Sprintf("bare%d.sock", sockSeq.Add(1)))
	replyPath := sock + ".reply"
	var raw []byte
	for _, r := range replies {
		m, err := proto.Marshal(r)
		if err != nil {
			return nil, err
		}
		raw = protowire.AppendBytes(raw, m)
	}
	if err := os.WriteFile(replyPath, raw, 0o600); err != nil {
		return nil, err
	}
	cmd := exec.Command(b.self, append([]string{mode, "-socket", sock, "-reply", replyPath}, args...)...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "ready" {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, fmt.Errorf("%s did not start: %q %v", mode, line, err)
	}
	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, err
	}
	return &bareServer{cmd: cmd, conn: conn, client: pb.NewToolServiceClient(conn)}, nil
}

func (s *bareServer) stop() {
	s.conn.Close()
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	_ = s.cmd.Wait()
}

// streamChunk is the size of the bare server's output chunks: toold's
// largest (events.QueueConfig.MaxChunk).
const streamChunk = 256 << 10

// pingPong answers every ToolCall with copies of replies, and nothing else;
// with stream > 0 it first sends that many bytes as output chunks.
type pingPong struct {
	pb.UnimplementedToolServiceServer
	replies []*pb.ServerEvent
	stream  int
	chunk   []byte
}

func (p *pingPong) ExecuteTool(s pb.ToolService_ExecuteToolServer) error {
	for {
		m, err := s.Recv()
		if err != nil {
			return nil
		}
		if m.GetCall() == nil {
			continue
		}
		for off := 0; off < p.stream; off += len(p.chunk) {
			data := p.chunk[:min(len(p.chunk), p.stream-off)]
			ev := &pb.ServerEvent{CallId: m.GetCall().GetCallId(), Event: &pb.ServerEvent_Progress{Progress: &pb.Progress{
				Output: &pb.OutputChunk{Data: data, Offset: uint64(off)},
			}}}
			if err := s.Send(ev); err != nil {
				return err
			}
		}
		for _, reply := range p.replies {
			r := proto.Clone(reply).(*pb.ServerEvent)
			r.CallId = m.GetCall().GetCallId()
			if err := s.Send(r); err != nil {
				return err
			}
		}
	}
}

// serveBare is the serve-bare mode: serve until SIGTERM.
func serveBare(args []string) error {
	fs := flag.NewFlagSet("serve-bare", flag.ContinueOnError)
	sock := fs.String("socket", "", "unix socket to serve on")
	replyPath := fs.String("reply", "", "file with the ServerEvent to answer with")
	stream := fs.Int("stream", 0, "bytes of output to stream before the replies")
	if err := fs.Parse(args); err != nil {
		return err
	}
	replies, err := readReplies(*replyPath)
	if err != nil {
		return err
	}
	return serveUntilSignal(*sock, &pingPong{replies: replies, stream: *stream, chunk: make([]byte, streamChunk)})
}

// readReplies reads the events startServer wrote.
func readReplies(path string) ([]*pb.ServerEvent, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var replies []*pb.ServerEvent
	for len(raw) > 0 {
		m, n := protowire.ConsumeBytes(raw)
		if n < 0 {
			return nil, fmt.Errorf("bad reply file")
		}
		r := &pb.ServerEvent{}
		if err := proto.Unmarshal(m, r); err != nil {
			return nil, err
		}
		replies = append(replies, r)
		raw = raw[n:]
	}
	return replies, nil
}

// serveUntilSignal serves srv and health (SERVING) on the unix socket
// sock, says "ready" on stdout, and stops at SIGTERM.
func serveUntilSignal(sock string, srv pb.ToolServiceServer) error {
	l, err := net.Listen("unix", sock)
	if err != nil {
		return err
	}
	gs := grpc.NewServer()
	healthpb.RegisterHealthServer(gs, health.NewServer()) // SERVING
	pb.RegisterToolServiceServer(gs, srv)
	go func() {
		sigs := make(chan os.Signal, 1)
		signalNotify(sigs)
		<-sigs
		gs.Stop()
	}()
	fmt.Println("ready")
	return gs.Serve(l)
}

func signalNotify(c chan<- os.Signal) { signal.Notify(c, syscall.SIGTERM, os.Interrupt) }

func protoSize(m proto.Message) int { return proto.Size(m) }
