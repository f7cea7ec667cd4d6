package client_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	pb "github.com/toold/toold/gen/toold/v1"
	"github.com/toold/toold/pkg/client"
	"github.com/toold/toold/pkg/config"
	"github.com/toold/toold/pkg/daemon/daemontest"
	"github.com/toold/toold/pkg/sandbox"
)

func TestMain(m *testing.M) {
	// Commands run under a helper process; the test binary stands in.
	sandbox.RunHelperIfRequested()
	goleak.VerifyTestMain(m)
}

// proxy forwards a unix socket to toold's and can break every connection
// it carries (a connection reset, as far as both ends can tell).
type proxy struct {
	l     net.Listener
	to    string
	mu    sync.Mutex
	conns []net.Conn
	wg    sync.WaitGroup
}

func newProxy(t *testing.T, to string) *proxy {
	l, err := net.Listen("unix", filepath.Join(t.TempDir(), "p.sock"))
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{l: l, to: to}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("unix", to)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, up)
			p.mu.Unlock()
			p.wg.Add(2)
			go func() { defer p.wg.Done(); _, _ = io.Copy(up, c); up.Close() }()
			go func() { defer p.wg.Done(); _, _ = io.Copy(c, up); c.Close() }()
		}
	}()
	t.Cleanup(func() { l.Close(); p.cut(); p.wg.Wait() })
	return p
}

// cut closes every connection the proxy carries.
func (p *proxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// A Stream whose connection is reset while a command streams output
// resumes by itself: the caller receives every byte once, in order, and
// the End.
func TestStreamResumesOnConnectionReset(t *testing.T) {
	d := daemontest.Start(t, daemontest.WithConfig(func(c *config.Config) { c.ApprovalMode = "yolo" }))
	p := newProxy(t, d.Socket)
	conn, err := grpc.NewClient("unix://"+p.l.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	st, err := client.Open(ctx, pb.NewToolServiceClient(conn), &pb.Hello{ClientName: "client-test"}, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	const total = 10 << 20 / 13 * 13
	cmd := fmt.Sprintf(`awk 'BEGIN { for (o = 0; o < %d; o += 13) printf "%%012d\n", o }'`, total)
	if err := st.Send(&pb.ClientMessage{Msg: &pb.ClientMessage_Call{Call: &pb.ToolCall{CallId: "c", Name: "run_command",
		Arguments: &pb.ToolCall_ArgumentsJson{ArgumentsJson: fmt.Sprintf(`{"command":%q}`, cmd)}}}}); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	cut := false
	for {
		ev, err := st.Recv()
		if err != nil {
			t.Fatalf("recv after %d bytes: %v", out.Len(), err)
		}
		if o := ev.GetProgress().GetOutput(); o != nil {
			if o.GetOffset() != uint64(out.Len()) {
				t.Fatalf("chunk at offset %d after %d bytes", o.GetOffset(), out.Len())
			}
			out.Write(o.GetData())
			if !cut && out.Len() >= 1<<20 {
				cut = true
				p.cut()
			}
		}
		if e := ev.GetEnd(); e != nil {
			if !e.GetResult().GetSuccess() {
				t.Fatalf("end = %v", e)
			}
			break
		}
	}
	if out.Len() != total || st.Resumes() != 1 {
		t.Fatalf("received %d of %d bytes, %d resumes", out.Len(), total, st.Resumes())
	}
	for o := 0; o < out.Len(); o += 13 {
		if n, err := strconv.Atoi(string(out.Bytes()[o : o+12])); err != nil || n != o {
			t.Fatalf("line at %d: %q", o, out.Bytes()[o:o+13])
		}
	}
	if err := st.CloseSend(); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Recv(); err != io.EOF {
		t.Fatalf("after CloseSend: %v, want EOF", err)
	}
}
