package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	pb "github.com/toold/toold/gen/toold/v1"
)

// Row: the cost of recording what calls change (checkpoints, for rewind)
// on a 10,000-file workspace: a no-op command and a one-file edit, each on
// a toold that records and on one that does not (checkpoints.disable),
// alternated in the same run. Target: recording adds at most a few
// milliseconds per call.
func (b *bench) rowRewind(ctx context.Context, _ string) []*Row {
	noop := &Row{ID: "rewind-noop", Title: "Recording a no-op command (`run_command true`) on a 10,000-file workspace", Kind: Latency,
		Target: "overhead ≤ 3 ms", check: func(r *Row) bool { return r.Toold.P50-r.Base[0].P50 <= 3 }}
	edit := &Row{ID: "rewind-edit", Title: "Recording a one-file `edit_file` on a 10,000-file workspace", Kind: Latency,
		Target: "overhead ≤ 3 ms", check: func(r *Row) bool { return r.Toold.P50-r.Base[0].P50 <= 3 }}
	rows := []*Row{noop, edit}
	fail := func(err error) []*Row {
		for _, r := range rows {
			r.Error = err.Error()
		}
		return rows
	}
	files := 10000
	if b.smoke {
		files = 200
	}
	// One workspace per toold, the same tree: edits on one do not show in
	// the other's recording.
	var convs [2]*conv
	var first [2]time.Duration
	for i, disable := range []bool{false, true} {
		ws, err := os.MkdirTemp(b.tmp, "rewind-ws")
		if err != nil {
			return fail(err)
		}
		for d := range files / 20 {
			dir := filepath.Join(ws, fmt.Sprintf("pkg%03d", d), "sub")
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return fail(err)
			}
			for f := range 20 {
				if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%02d.go", f)), []byte(fmt.Sprintf("package p%d\n\nvar x%d = %d\n", d, f, f)), 0o644); err != nil {
					return fail(err)
				}
			}
		}
		cfg, err := b.writeConfig(fmt.Sprintf("rewind%d", i), map[string]any{"approval_mode": "yolo",
			"checkpoints": map[string]any{"disable": disable}})
		if err != nil {
			return fail(err)
		}
		d, err := b.startToold(ctx, ws, "--config", cfg)
		if err != nil {
			return fail(err)
		}
		defer d.stop()
		tc, err := openConv(ctx, d.client, &pb.Hello{OmitExecuting: true, ConversationId: "bench"})
		if err != nil {
			return fail(err)
		}
		defer tc.close()
		convs[i] = tc
		// The first call waits for the recorder's first walk of the
		// workspace (reported, not part of the per-call cost).
		t0 := time.Now()
		if _, err := tc.call("run_command", `{"command":"true"}`); err != nil {
			return fail(err)
		}
		first[i] = time.Since(t0)
	}
	call := func(c *conv, name, args string) func() (time.Duration, error) {
		return timed(func() error {
			res, err := c.call(name, args)
			if err == nil && !res.GetSuccess() {
				err = fmt.Errorf("%s failed: %v", name, res.GetError())
			}
			return err
		})
	}
	n := b.iters(300)
	dt, db, err := rounds(n, 20, call(convs[0], "run_command", `{"command":"true"}`), call(convs[1], "run_command", `{"command":"true"}`))
	if err != nil {
		return fail(err)
	}
	noop.Toold, noop.Base = latencies("recording", dt), []Measure{latencies("not recording", db)}
	noop.Verified = fmt.Sprintf("overhead %s; first call (the recorder's first walk of %d files) %s vs %s", ms(noop.Toold.P50-noop.Base[0].P50),
		files, ms(float64(first[0])/1e6), ms(float64(first[1])/1e6))
	k := [2]int{}
	editOn := func(i int) func() (time.Duration, error) {
		return func() (time.Duration, error) {
			k[i]++
			old, new := fmt.Sprintf("var x10 = %d", k[i]-1), fmt.Sprintf("var x10 = %d", k[i])
			if k[i] == 1 {
				old = "var x10 = 10"
			}
			return call(convs[i], "edit_file", fmt.Sprintf(`{"path":"pkg%03d/sub/f10.go","old_string":%q,"new_string":%q}`, files/40, old, new))()
		}
	}
	if dt, db, err = rounds(n, 20, editOn(0), editOn(1)); err != nil {
		return fail(err)
	}
	edit.Toold, edit.Base = latencies("recording", dt), []Measure{latencies("not recording", db)}
	edit.Verified = "overhead " + ms(edit.Toold.P50-edit.Base[0].P50)
	return rows
}
