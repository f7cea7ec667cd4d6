package daemon_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	pb "github.com/toold/toold/gen/toold/v1"
	"github.com/toold/toold/pkg/audit/auditconfig"
	"github.com/toold/toold/pkg/config"
	"github.com/toold/toold/pkg/daemon/daemontest"
	"github.com/toold/toold/pkg/testenv"
)

// The audit log on a full disk (a real 256 KiB tmpfs, filled): with the
// default audit.on_failure (refuse) a call that cannot be recorded does not
// run and ends UNAVAILABLE saying why; the log never holds a torn line, so
// `audit verify` passes while toold runs; freeing space is enough — the
// next call runs and is recorded, after a record of what was lost. With
// on_failure: continue the calls run.
func TestAuditFullDisk(t *testing.T) {
	for _, mode := range []string{auditconfig.Refuse, auditconfig.Continue} {
		t.Run(mode, func(t *testing.T) {
			fs := testenv.SmallFS(t, 256<<10)
			d := daemontest.Start(t, daemontest.WithConfig(func(c *config.Config) {
				c.Audit.Dir = filepath.Join(fs, "audit")
				c.Audit.OnFailure = mode
			}))
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			verify := func(when string) *pb.VerifyAuditResponse {
				t.Helper()
				v, err := pb.NewAuditServiceClient(d.Conn).Verify(d.AsOperator(ctx), &pb.VerifyAuditRequest{})
				if err != nil || !v.GetOk() {
					t.Fatalf("audit verify %s: %v %v", when, v, err)
				}
				return v
			}
			x := newSession(t, d)
			hello(x, "disk")
			if res, _ := x.call("ok", "think", `{"thought": "room"}`); !res.GetSuccess() {
				t.Fatalf("before: %v", res)
			}
			canary := filepath.Join(d.Workspace, "canary")
			filler := testenv.Fill(t, fs, "filler")
			// The last page of the log's file may still have room for a few
			// records: use it up (a call writes three).
			for i := 0; i < 100; i++ {
				if res, _ := x.call(fmt.Sprint("slack", i), "think", `{"thought": "x"}`); !res.GetSuccess() {
					break
				}
			}
			// A write that must not happen when it cannot be recorded.
			args := fmt.Sprintf(`{"path": %q, "content": "written"}`, canary)
			approve := func(r *pb.RequiresApproval) *pb.ApprovalDecision {
				return &pb.ApprovalDecision{ApprovalId: r.GetApprovalId(), Approve: true, ScopeId: "once"}
			}
			res, evs := x.call("full", "write_file", args, approve)
			_, statErr := os.Stat(canary)
			switch mode {
			case auditconfig.Refuse:
				if res.GetSuccess() || res.GetError().GetCode() != pb.ErrorCode_ERROR_CODE_UNAVAILABLE ||
					!strings.Contains(res.GetError().GetMessage(), "audit log cannot record") || !strings.Contains(res.GetError().GetMessage(), "no space left on device") {
					t.Fatalf("on a full disk: %v", res)
				}
				if statErr == nil {
					t.Fatal("the refused write_file wrote its file")
				}
				for _, ev := range evs {
					if ev.GetExecuting() != nil {
						t.Fatalf("a refused call said Executing: %v", evs)
					}
				}
			case auditconfig.Continue:
				if !res.GetSuccess() || statErr != nil {
					t.Fatalf("on_failure continue: %v %v", res, statErr)
				}
			}
			verify("on a full disk")
			if err := os.Remove(filler); err != nil {
				t.Fatal(err)
			}
			if res, _ := x.call("after", "think", `{"thought": "room again"}`); !res.GetSuccess() {
				t.Fatalf("after freeing space: %v", res)
			}
			// A think's records are queued when its End goes out (it has
			// no effect to precede, docs/audit.md): wait for their write.
			var tail *pb.TailAuditResponse
			var recovered, after bool
			testenv.Until(10*time.Second, func() bool {
				var err error
				tail, err = pb.NewAuditServiceClient(d.Conn).Tail(d.AsOperator(ctx), &pb.TailAuditRequest{Count: 50})
				if err != nil {
					t.Fatal(err)
				}
				recovered, after = false, false
				for _, r := range tail.GetRecords() {
					recovered = recovered || (r.GetKind() == "audit.recovered" && strings.Contains(r.GetDetail(), "could not be written"))
					after = after || (r.GetCallId() == "after" && r.GetKind() == "call.end")
				}
				return recovered && after
			})
			v := verify("after freeing space")
			if !recovered || !after {
				t.Fatalf("want the recovery told and the next call recorded (last %d): %v", v.GetLastSeq(), tail.GetRecords())
			}
		})
	}
}
