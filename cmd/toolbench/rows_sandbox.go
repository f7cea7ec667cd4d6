// Rows of the sandbox: run_command true sandboxed (the default
// configuration) vs unsandboxed (terminal.sandbox: off) vs a bare exec,
// and opening a terminal session either way, in the same run (row 6s);
// then the same calls 20 ms apart, the sandbox's pool idle before each.

package main

import (
	"context"
	"fmt"
	"os/exec"
	"time"

	pb "github.com/toold/toold/gen/toold/v1"
)

// sandboxTargetMs is the bound on what the sandbox adds to a
// command (difference of the p50s).
const sandboxTargetMs = 3.0

// idleGap separates the calls of row 6s's second measure.
const idleGap = 20 * time.Millisecond

func (b *bench) rowSandbox(ctx context.Context, ws string) []*Row {
	run := &Row{ID: "run-true-sandbox", Title: "6s. `run_command true` sandboxed (default) vs unsandboxed vs bare exec", Kind: Latency,
		Target: fmt.Sprintf("sandbox adds ≤ %.0f ms", sandboxTargetMs),
		check:  func(r *Row) bool { return r.Toold.P50-r.Base[0].P50 <= sandboxTargetMs }}
	sess := &Row{ID: "session-open-sandbox", Title: "6t. create_session (sh) + close sandboxed vs unsandboxed", Kind: Latency,
		Target: "— (reported)"}
	rows := []*Row{run, sess}
	fail := func(err error) []*Row {
		for _, r := range rows {
			if r.Error == "" {
				r.Error = err.Error()
			}
		}
		return rows
	}
	var convs [2]*conv
	for i, mode := range []string{"auto", "off"} {
		cfg, err := b.writeConfig("sandbox-"+mode, map[string]any{"approval_mode": "yolo", "terminal": map[string]any{"sandbox": mode}})
		if err != nil {
			return fail(err)
		}
		d, err := b.startToold(ctx, ws, "--config", cfg)
		if err != nil {
			return fail(err)
		}
		defer d.stop()
		if convs[i], err = openConv(ctx, d.client, &pb.Hello{OmitExecuting: true, ConversationId: "bench-" + mode}); err != nil {
			return fail(err)
		}
		defer convs[i].close()
	}
	call := func(c *conv) func() (time.Duration, error) {
		return timed(func() error {
			res, err := c.call("run_command", `{"command":"true"}`)
			if err != nil {
				return err
			}
			if !res.GetSuccess() || res.GetStructured().GetFields()["exit_code"].GetNumberValue() != 0 {
				return fmt.Errorf("run_command failed: %v", res.GetError())
			}
			return nil
		})
	}
	n := b.iters(300)
	if _, _, err := rounds(20, 2, call(convs[0]), call(convs[1])); err != nil {
		return fail(err)
	}
	ds, du, err := rounds(n, 20, call(convs[0]), call(convs[1]))
	if err != nil {
		return fail(err)
	}
	// The same calls 20 ms apart (the pause is not timed), as an agent
	// that thinks between commands makes them: the sandbox's pool is full
	// and idle when each starts, so this is the command's path alone,
	// without the refill of the previous command's helper competing for
	// the cores (docs/terminal.md, Cost). The target is checked back to
	// back, above.
	apart := func(f func() (time.Duration, error)) func() (time.Duration, error) {
		return func() (time.Duration, error) {
			time.Sleep(idleGap)
			return f()
		}
	}
	is, iu, err := rounds(n/3, 10, apart(call(convs[0])), apart(call(convs[1])))
	if err != nil {
		return fail(err)
	}
	var dbare []time.Duration
	for i := 0; i < n/2; i++ {
		d, _ := timed(func() error { return exec.Command("bash", "-c", "true").Run() })()
		dbare = append(dbare, d)
	}
	run.Toold = latencies("toold sandboxed", ds)
	idleS, idleU := latencies("toold sandboxed, calls 20 ms apart", is), latencies("toold sandbox: off, calls 20 ms apart", iu)
	run.Base = []Measure{latencies("toold sandbox: off", du), latencies("exec bash -c true", dbare), idleS, idleU}
	run.Verified = fmt.Sprintf("exit code 0 both ways; the sandbox adds %s back to back, %s with calls 20 ms apart (its pool idle)",
		ms(run.Toold.P50-run.Base[0].P50), ms(idleS.P50-idleU.P50))

	open := func(c *conv) func() (time.Duration, error) {
		return timed(func() error {
			res, err := c.call("create_session", `{"shell":"sh"}`)
			if err != nil {
				return err
			}
			if !res.GetSuccess() {
				return fmt.Errorf("create_session failed: %v", res.GetError())
			}
			id := res.GetStructured().GetFields()["session_id"].GetStringValue()
			if res, err := c.call("close_session", fmt.Sprintf(`{"session_id":%q}`, id)); err != nil || !res.GetSuccess() {
				return fmt.Errorf("close_session: %v %v", err, res.GetError())
			}
			return nil
		})
	}
	m := b.iters(60)
	ss, su, err := rounds(m, 6, open(convs[0]), open(convs[1]))
	if err != nil {
		sess.Error = err.Error()
		return rows
	}
	sess.Toold = latencies("toold sandboxed", ss)
	sess.Base = []Measure{latencies("toold sandbox: off", su)}
	sess.Verified = fmt.Sprintf("%d sessions opened and closed each way; the sandbox adds %s", len(ss), ms(sess.Toold.P50-sess.Base[0].P50))
	return rows
}
