package daemon_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/toold/toold/gen/toold/v1"
	"github.com/toold/toold/pkg/audit"
	"github.com/toold/toold/pkg/config"
	"github.com/toold/toold/pkg/daemon"
	"github.com/toold/toold/pkg/daemon/daemontest"
	"github.com/toold/toold/pkg/history"
)

// The HistoryService and AuditService answer over the daemon's socket, and
// the debug address serves the metrics as Prometheus text.
func TestObserveServices(t *testing.T) {
	d := daemontest.Start(t, daemontest.WithConfig(func(c *config.Config) { c.DebugAddr = "127.0.0.1:0" }))
	ctx := context.Background()

	// History.
	t0 := time.Now().UTC().Truncate(time.Millisecond)
	code := 3
	for i, name := range []string{"read_file", "run_command"} {
		e := history.Entry{Conversation: "conv", CallID: name, Name: name, Tool: "t", Arguments: "{}", Decision: "allow",
			Outcome: "success", Summary: "ok", Started: t0.Add(time.Duration(i) * time.Second), Ended: t0.Add(time.Duration(i)*time.Second + time.Millisecond)}
		if name == "run_command" {
			e.ExitCode = &code
		}
		if _, err := d.Main.History().Record(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	hc := pb.NewHistoryServiceClient(d.Conn)
	resp, err := hc.Query(d.AsOperator(ctx), &pb.QueryHistoryRequest{ConversationId: "conv"})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Entries) != 2 || resp.Entries[0].Name != "run_command" || resp.Entries[0].GetExitCode() != 3 || resp.Entries[0].Duration.AsDuration() != time.Millisecond {
		t.Fatalf("history: %v", resp)
	}
	if _, err := hc.Query(d.AsOperator(ctx), &pb.QueryHistoryRequest{Limit: 100000}); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("bad limit: %v", err)
	}

	// Audit.
	for _, k := range []string{audit.KindDecision, audit.KindCallStart, audit.KindCallEnd} {
		if _, err := d.Main.Audit().Append(audit.Record{Kind: k, Conversation: "conv", CallID: "1"}); err != nil {
			t.Fatal(err)
		}
	}
	ac := pb.NewAuditServiceClient(d.Conn)
	tail, err := ac.Tail(d.AsOperator(ctx), &pb.TailAuditRequest{Count: 2})
	if err != nil || len(tail.Records) != 2 || tail.Records[1].Kind != audit.KindCallEnd || tail.Records[1].Seq != 3 {
		t.Fatalf("tail: %v %v", err, tail)
	}
	v, err := ac.Verify(d.AsOperator(ctx), &pb.VerifyAuditRequest{})
	if err != nil || !v.Ok || v.Records != 3 {
		t.Fatalf("verify: %v %v", err, v)
	}
	st, err := ac.Export(d.AsOperator(ctx), &pb.ExportAuditRequest{FromSeq: 2})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	for {
		chunk, err := st.Recv()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		out.Write(chunk.Jsonl)
	}
	if n := strings.Count(out.String(), "\n"); n != 2 {
		t.Fatalf("export: %d lines: %s", n, out.String())
	}

	// Metrics.
	d.Main.Metrics().CallEnded(ctx, "think", "", "success", "", time.Millisecond)
	r, err := http.Get("http://" + d.Main.DebugAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	body, _ := io.ReadAll(r.Body)
	if r.StatusCode != 200 || !strings.Contains(string(body), `toold_calls_total{code="",operation="",outcome="success",tool="think"} 1`) ||
		!strings.Contains(string(body), "\ntoold_processes_running 0\n") || !strings.Contains(string(body), "\ntoold_sessions_open 0\n") {
		t.Fatalf("/metrics: %d\n%s", r.StatusCode, body)
	}
}

// With audit and history off their RPCs answer UNAVAILABLE.
func TestObserveOff(t *testing.T) {
	off := false
	d := daemontest.Start(t, daemontest.WithConfig(func(c *config.Config) {
		c.Audit.Enabled = &off
		c.History.Backend = "off"
	}))
	ctx := context.Background()
	if d.Main.Audit() != nil || d.Main.History() != nil {
		t.Fatal("audit or history opened while off")
	}
	if _, err := pb.NewHistoryServiceClient(d.Conn).Query(d.AsOperator(ctx), &pb.QueryHistoryRequest{}); status.Code(err) != codes.Unavailable {
		t.Fatalf("history off: %v", err)
	}
	if _, err := pb.NewAuditServiceClient(d.Conn).Verify(d.AsOperator(ctx), &pb.VerifyAuditRequest{}); status.Code(err) != codes.Unavailable {
		t.Fatalf("audit off: %v", err)
	}
}

// An audit log that cannot be opened stops toold only when audit.enabled
// asks for it explicitly; on by default, toold starts and the AuditService
// says why it has none.
func TestAuditUnavailable(t *testing.T) {
	blocker := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(blocker, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	on := true
	m := &daemon.Main{Config: config.Default(), Logger: slog.New(slog.DiscardHandler)}
	m.Config.Socket = filepath.Join(t.TempDir(), "s.sock")
	m.Config.Workspace = t.TempDir()
	m.Config.StateDir = t.TempDir()
	m.Config.Audit = config.Audit{Enabled: &on, Dir: filepath.Join(blocker, "audit")}
	if err := m.Run(context.Background()); err == nil || !strings.Contains(err.Error(), "audit log") {
		m.Close()
		t.Fatalf("Run = %v, want the audit log's error", err)
	}
	d := daemontest.Start(t, daemontest.WithConfig(func(c *config.Config) { c.Audit.Dir = filepath.Join(blocker, "audit") }))
	_, err := pb.NewAuditServiceClient(d.Conn).Tail(d.AsOperator(context.Background()), &pb.TailAuditRequest{})
	if status.Code(err) != codes.Unavailable || !strings.Contains(status.Convert(err).Message(), "could not be opened") {
		t.Fatalf("tail: %v", err)
	}
}

// A call's records are made after its End (the executor's recorder), yet
// a client that has the End finds them: the HistoryService and the
// AuditService flush the records of the calls that ended before they read.
// Neither is polled here.
func TestRecordsFlushedBeforeReads(t *testing.T) {
	d := daemontest.Start(t, daemontest.WithConfig(func(c *config.Config) { c.ApprovalMode = "yolo" }))
	ctx := context.Background()
	x := newSession(t, d)
	x.send(&pb.ClientMessage{Msg: &pb.ClientMessage_Hello{Hello: &pb.Hello{ConversationId: "flushed"}}})
	if w, err := x.s.Recv(); err != nil || w.GetWelcome() == nil {
		t.Fatalf("welcome: %v %v", w, err)
	}
	for i, id := range []string{"t1", "t2", "t3"} {
		if res, _ := x.call(id, "think", `{"thought":"x"}`); !res.GetSuccess() {
			t.Fatalf("think: %v", res)
		}
		hist, err := pb.NewHistoryServiceClient(d.Conn).Query(d.AsOperator(ctx), &pb.QueryHistoryRequest{ConversationId: "flushed"})
		if err != nil {
			t.Fatal(err)
		}
		if n := len(hist.GetEntries()); n != i+1 || hist.GetEntries()[0].GetCallId() != id {
			t.Fatalf("history right after %s's End: %v", id, hist.GetEntries())
		}
		tail, err := pb.NewAuditServiceClient(d.Conn).Tail(d.AsOperator(ctx), &pb.TailAuditRequest{Count: 3})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, r := range tail.GetRecords() {
			got = append(got, r.GetCallId()+" "+r.GetKind())
		}
		if want := []string{id + " decision", id + " call.start", id + " call.end"}; strings.Join(got, ",") != strings.Join(want, ",") {
			t.Fatalf("audit tail right after %s's End: %v, want %v", id, got, want)
		}
	}
}
