package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	pb "github.com/toold/toold/gen/toold/v1"
)

// run runs every row in order.
func (b *bench) run(ctx context.Context) error {
	ws, err := os.MkdirTemp(b.tmp, "ws")
	if err != nil {
		return err
	}
	type rowFn struct {
		id string
		fn func(context.Context, string) []*Row
	}
	for _, r := range []rowFn{
		{"ladder", b.rowLadder},
		{"think", b.rowThink},
		{"rate", b.rowRate},
		{"read", b.rowReadFile},
		{"grep", b.rowGrep},
		{"glob", b.rowGlob},
		{"run", b.rowRunCommand},
		{"sandbox", b.rowSandbox},
		{"stream", b.rowStream},
		{"mcp", b.rowMCP},
		{"memory", b.rowMemory},
		{"burst", b.rowBurst},
		{"memops", b.rowMemoryOps},
		{"sessions", b.rowSessions},
		{"mixed", b.rowMixed},
		{"replay", b.rowReplay},
		{"rewind", b.rowRewind},
	} {
		if !b.want(r.id) {
			continue
		}
		for _, row := range r.fn(ctx, ws) {
			b.add(row)
		}
	}
	return nil
}

const thinkArgs = `{"thought":"benchmark"}`

// rounds alternates two measurements in batches, so that both see the same
// machine: noise from other tenants lands on both.
func rounds(n, batches int, a, b func() (time.Duration, error)) (da, db []time.Duration, err error) {
	ds, err := roundsN(n, batches, a, b)
	if err != nil {
		return nil, nil, err
	}
	return ds[0], ds[1], nil
}

// roundsN is rounds for any number of sides, alternating in batches in
// the order given; ds[i] are fs[i]'s durations.
func roundsN(n, batches int, fs ...func() (time.Duration, error)) (ds [][]time.Duration, err error) {
	per := max(1, n/batches)
	ds = make([][]time.Duration, len(fs))
	for i := 0; i < batches; i++ {
		for k, f := range fs {
			for j := 0; j < per; j++ {
				d, err := f()
				if err != nil {
					return nil, err
				}
				ds[k] = append(ds[k], d)
			}
		}
	}
	return ds, nil
}

func timed(f func() error) func() (time.Duration, error) {
	return func() (time.Duration, error) {
		t0 := time.Now()
		err := f()
		return time.Since(t0), err
	}
}

// captureEnd makes one think call on a raw stream and returns its End event,
// so the bare server can answer with a reply of the same size.
func captureEnd(ctx context.Context, c pb.ToolServiceClient) (*pb.ServerEvent, error) {
	evs, err := captureCall(ctx, c, nil)
	if err != nil {
		return nil, err
	}
	return evs[len(evs)-1], nil
}

// captureCall makes one think call and returns its events, Start to End.
func captureCall(ctx context.Context, c pb.ToolServiceClient, hello *pb.Hello) ([]*pb.ServerEvent, error) {
	return captureCallOf(ctx, c, hello, "think", thinkArgs)
}

// captureCallOf makes one call of the tool and returns its events, Start
// to End.
func captureCallOf(ctx context.Context, c pb.ToolServiceClient, hello *pb.Hello, name, args string) ([]*pb.ServerEvent, error) {
	s, err := c.ExecuteTool(ctx)
	if err != nil {
		return nil, err
	}
	defer s.CloseSend()
	if hello != nil {
		if err := s.Send(&pb.ClientMessage{Msg: &pb.ClientMessage_Hello{Hello: hello}}); err != nil {
			return nil, err
		}
	}
	if err := s.Send(&pb.ClientMessage{Msg: &pb.ClientMessage_Call{Call: &pb.ToolCall{
		CallId: "1", Name: name, Arguments: &pb.ToolCall_ArgumentsJson{ArgumentsJson: args},
	}}}); err != nil {
		return nil, err
	}
	var evs []*pb.ServerEvent
	for {
		ev, err := s.Recv()
		if err != nil {
			return nil, err
		}
		if ev.GetCallId() == "1" {
			evs = append(evs, ev)
		}
		if ev.GetEnd() != nil {
			return evs, nil
		}
	}
}

// Row 1: a no-op call's round trip over the unix socket vs a bare gRPC
// bidi ping-pong with a reply of the same size.
func (b *bench) rowThink(ctx context.Context, ws string) []*Row {
	fail := func(err error) []*Row {
		return []*Row{{ID: "think-rt", Title: "1. no-op call (think) round trip", Kind: Latency, Error: err.Error()}}
	}
	d, err := b.startToold(ctx, ws)
	if err != nil {
		return fail(err)
	}
	defer d.stop()
	end, err := captureEnd(ctx, d.client)
	if err != nil {
		return fail(err)
	}
	bare, err := b.startBare(end)
	if err != nil {
		return fail(err)
	}
	defer bare.stop()
	bc, err := openConv(ctx, bare.client, nil)
	if err != nil {
		return fail(err)
	}
	defer bc.close()

	var rows []*Row
	for _, v := range []struct {
		id, title string
		hello     *pb.Hello
	}{
		{"think-rt", "1. no-op call (think) round trip: Start, Executing, End", &pb.Hello{}},
		{"think-rt-omit", "1b. no-op call round trip with omit_executing: Start, End", &pb.Hello{OmitExecuting: true}},
	} {
		// A second bare server answers with the same events toold sends:
		// what the contract's extra messages cost without toold.
		same, err := captureCall(ctx, d.client, v.hello)
		if err != nil {
			return fail(err)
		}
		bareSame, err := b.startBare(same...)
		if err != nil {
			return fail(err)
		}
		sc, err := openConv(ctx, bareSame.client, nil)
		if err != nil {
			bareSame.stop()
			return fail(err)
		}
		tc, err := openConv(ctx, d.client, v.hello)
		if err != nil {
			bareSame.stop()
			return fail(err)
		}
		thinkCall := timed(func() error {
			res, err := tc.call("think", thinkArgs)
			if err == nil && !res.GetSuccess() {
				err = fmt.Errorf("think failed: %v", res.GetError())
			}
			return err
		})
		bareCall := timed(func() error { _, err := bc.call("think", thinkArgs); return err })
		sameCall := timed(func() error { _, err := sc.call("think", thinkArgs); return err })
		// Warm up.
		if _, _, err := rounds(b.iters(2000), 2, thinkCall, bareCall); err != nil {
			bareSame.stop()
			return fail(err)
		}
		n := b.iters(20000)
		dt, db, err := rounds(n, 20, thinkCall, bareCall)
		var ds []time.Duration
		if err == nil {
			_, ds, err = rounds(n/2, 10, func() (time.Duration, error) { return 0, nil }, sameCall)
		}
		tc.close()
		sc.close()
		bareSame.stop()
		if err != nil {
			return fail(err)
		}
		rows = append(rows, &Row{
			ID: v.id, Title: v.title, Kind: Latency,
			Toold: latencies("toold", dt),
			Base: []Measure{latencies("bare gRPC ping-pong", db),
				latencies(fmt.Sprintf("bare, replying with toold's %d events", len(same)), ds)},
			Target:   "p50 ≤ 1.3×",
			Verified: fmt.Sprintf("every call ended success; bare reply %d bytes = toold's ToolCallEnd", protoSize(end)),
			check:    func(r *Row) bool { return r.Ratio <= 1.3 },
		})
	}
	return rows
}

// Row 2: calls per second at concurrency 1, 8 and 64 (one stream per
// client goroutine) vs the bare message rate at the same concurrency.
func (b *bench) rowRate(ctx context.Context, ws string) []*Row {
	var rows []*Row
	d, err := b.startToold(ctx, ws)
	if err != nil {
		return []*Row{{ID: "rate", Title: "2. calls per second", Kind: Rate, Error: err.Error()}}
	}
	defer d.stop()
	end, err := captureEnd(ctx, d.client)
	if err != nil {
		return []*Row{{ID: "rate", Title: "2. calls per second", Kind: Rate, Error: err.Error()}}
	}
	bare, err := b.startBare(end)
	if err != nil {
		return []*Row{{ID: "rate", Title: "2. calls per second", Kind: Rate, Error: err.Error()}}
	}
	defer bare.stop()
	for _, conc := range []int{1, 8, 64} {
		row := &Row{
			ID: fmt.Sprintf("rate-c%d", conc), Title: fmt.Sprintf("2. calls/s at concurrency %d (think)", conc),
			Kind: Rate, Unit: "calls/s", Target: "≥ 0.6×",
			check: func(r *Row) bool { return r.Ratio >= 0.6 },
		}
		var toold, base []float64
		for round := 0; round < 3; round++ {
			t, err := callRate(ctx, d.client, conc, b.span(time.Second), &pb.Hello{})
			if err != nil {
				row.Error = err.Error()
				break
			}
			bb, err := callRate(ctx, bare.client, conc, b.span(time.Second), nil)
			if err != nil {
				row.Error = err.Error()
				break
			}
			toold, base = append(toold, t), append(base, bb)
		}
		row.Toold = Measure{Name: "toold", Rate: median(toold), N: len(toold)}
		row.Base = []Measure{{Name: "bare gRPC ping-pong", Rate: median(base), N: len(base)}}
		row.Verified = "every call ended success (median of 3 alternating runs)"
		rows = append(rows, row)
	}
	return rows
}

// callRate runs conc streams doing sequential round trips for span and
// returns calls per second.
func callRate(ctx context.Context, c pb.ToolServiceClient, conc int, span time.Duration, hello *pb.Hello) (float64, error) {
	var done atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, conc)
	convs := make([]*conv, conc)
	for i := range convs {
		cv, err := openConv(ctx, c, hello)
		if err != nil {
			return 0, err
		}
		convs[i] = cv
	}
	deadline := time.Now().Add(span)
	t0 := time.Now()
	for _, cv := range convs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer cv.close()
			for time.Now().Before(deadline) {
				res, err := cv.call("think", thinkArgs)
				if err == nil && hello != nil && !res.GetSuccess() {
					err = fmt.Errorf("think failed: %v", res.GetError())
				}
				if err != nil {
					errs <- err
					return
				}
				done.Add(1)
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return 0, err
	}
	return float64(done.Load()) / time.Since(t0).Seconds(), nil
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64(nil), v...)
	for i := range s {
		for j := i + 1; j < len(s); j++ {
			if s[j] < s[i] {
				s[i], s[j] = s[j], s[i]
			}
		}
	}
	return s[len(s)/2]
}

// runLines runs a command in dir and returns its wall time and the number
// of output lines.
func runLines(dir string, name string, args ...string) (time.Duration, int, error) {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout = &out
	t0 := time.Now()
	err := cmd.Run()
	d := time.Since(t0)
	if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() == 1 {
		err = nil // no match
	}
	n := 0
	sc := bufio.NewScanner(&out)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		n++
	}
	return d, n, err
}

// Row 4: grep_search over the Go source tree vs ripgrep and grep -r.
func (b *bench) rowGrep(ctx context.Context, _ string) []*Row {
	cases := []struct {
		id, title, pattern string
		icase              bool
	}{
		{"grep-literal", "4a. grep_search literal `func main`", "func main", false},
		{"grep-regex", "4b. grep_search regex `func \\w+\\(ctx context`", `func \w+\(ctx context`, false},
		{"grep-icase", "4c. grep_search -i `http.request`", "http.request", true},
	}
	rg, rgErr := exec.LookPath("rg")
	d, err := b.startToold(ctx, b.corpus)
	var rows []*Row
	for _, c := range cases {
		row := &Row{ID: c.id, Title: c.title, Kind: Latency, Target: "p50 ≤ 1.2× ripgrep",
			check: func(r *Row) bool { return r.Ratio <= 1.2 }}
		rows = append(rows, row)
		if err != nil {
			row.Error = err.Error()
			continue
		}
		if rgErr != nil {
			row.Error = "ripgrep (rg) is not installed: make bench-deps"
			continue
		}
		tc, err := openConv(ctx, d.client, &pb.Hello{OmitExecuting: true})
		if err != nil {
			row.Error = err.Error()
			continue
		}
		args := fmt.Sprintf(`{"pattern":%q,"ignore_case":%v,"max_results":2000}`, c.pattern, c.icase)
		var hits int
		tooldCall := timed(func() error {
			res, err := tc.call("grep_search", args)
			if err != nil {
				return err
			}
			if !res.GetSuccess() {
				return fmt.Errorf("grep_search failed: %v", res.GetError())
			}
			hits = int(res.GetStructured().GetFields()["total_matches"].GetNumberValue())
			return nil
		})
		rgArgs := []string{"-n", "--no-heading", "--no-messages"}
		if c.icase {
			rgArgs = append(rgArgs, "-i")
		}
		rgArgs = append(rgArgs, "--", c.pattern, ".")
		var rgHits int
		rgCall := func() (time.Duration, error) {
			dur, n, err := runLines(b.corpus, rg, rgArgs...)
			rgHits = n
			return dur, err
		}
		n := b.iters(40)
		if _, _, err := rounds(2, 1, tooldCall, rgCall); err != nil { // warm the page cache
			row.Error = err.Error()
			continue
		}
		dt, dr, err := rounds(n, n, tooldCall, rgCall)
		if err != nil {
			row.Error = err.Error()
			continue
		}
		grepArgs := []string{"-rIn"}
		if c.icase {
			grepArgs = append(grepArgs, "-i")
		}
		grepArgs = append(grepArgs, "-E", strings.ReplaceAll(c.pattern, `\w`, `[[:alnum:]_]`), ".")
		var grepHits int
		dg, _, err := rounds(max(3, n/4), max(3, n/4), func() (time.Duration, error) {
			dur, n, err := runLines(b.corpus, "grep", grepArgs...)
			grepHits = n
			return dur, err
		}, func() (time.Duration, error) { return 0, nil })
		if err != nil {
			row.Error = err.Error()
			continue
		}
		tc.close()
		row.Toold = latencies("toold", dt)
		row.Base = []Measure{latencies("ripgrep", dr), latencies("grep -r", dg)}
		row.Verified = fmt.Sprintf("%d matching lines, same as ripgrep's %d", hits, rgHits)
		if hits != rgHits {
			row.Error = fmt.Sprintf("hits differ: toold %d, ripgrep %d", hits, rgHits)
		}
		row.Note = fmt.Sprintf("(grep -r, which reads hidden and ignored files too: %d lines)", grepHits)
	}
	if d != nil {
		d.stop()
	}
	return rows
}

// Row 5: glob **/*_test.go over the Go source tree vs fd.
func (b *bench) rowGlob(ctx context.Context, _ string) []*Row {
	row := &Row{ID: "glob", Title: "5. glob `**/*_test.go`", Kind: Latency, Target: "p50 ≤ 1.5× fd",
		check: func(r *Row) bool { return r.Ratio <= 1.5 }}
	fd, err := exec.LookPath("fdfind")
	if err != nil {
		if fd, err = exec.LookPath("fd"); err != nil {
			row.Error = "fd is not installed: make bench-deps"
			return []*Row{row}
		}
	}
	d, err := b.startToold(ctx, b.corpus)
	if err != nil {
		row.Error = err.Error()
		return []*Row{row}
	}
	defer d.stop()
	tc, err := openConv(ctx, d.client, &pb.Hello{OmitExecuting: true})
	if err != nil {
		row.Error = err.Error()
		return []*Row{row}
	}
	defer tc.close()
	var hits, fdHits int
	tooldCall := timed(func() error {
		res, err := tc.call("glob", `{"pattern":"**/*_test.go"}`)
		if err != nil {
			return err
		}
		if !res.GetSuccess() {
			return fmt.Errorf("glob failed: %v", res.GetError())
		}
		hits = int(res.GetStructured().GetFields()["total"].GetNumberValue())
		return nil
	})
	fdCall := func() (time.Duration, error) {
		dur, n, err := runLines(b.corpus, fd, "--glob", "--type", "f", "*_test.go")
		fdHits = n
		return dur, err
	}
	n := b.iters(60)
	if _, _, err := rounds(2, 1, tooldCall, fdCall); err != nil {
		row.Error = err.Error()
		return []*Row{row}
	}
	dt, df, err := rounds(n, n, tooldCall, fdCall)
	if err != nil {
		row.Error = err.Error()
		return []*Row{row}
	}
	row.Toold = latencies("toold", dt)
	row.Base = []Measure{latencies("fd", df)}
	row.Verified = fmt.Sprintf("%d files, same as fd's %d", hits, fdHits)
	if hits != fdHits {
		row.Error = fmt.Sprintf("hits differ: toold %d, fd %d", hits, fdHits)
	}
	return []*Row{row}
}

// Row 9: daemon memory idle and with 1,000 open streams; time from exec to
// serving.
func (b *bench) rowMemory(ctx context.Context, ws string) []*Row {
	idle := &Row{ID: "rss-idle", Title: "9a. daemon RSS, idle", Kind: Value, Unit: "MB", Target: "≤ 25 MB",
		check: func(r *Row) bool { return r.Toold.Value <= 25 }}
	streams := &Row{ID: "rss-1000-streams", Title: "9b. daemon RSS with 1,000 open streams", Kind: Value, Unit: "MB", Target: "≤ 150 MB",
		check: func(r *Row) bool { return r.Toold.Value <= 150 }}
	startup := &Row{ID: "startup", Title: "9d. exec to health SERVING", Kind: Latency, Target: "p50 ≤ 50 ms",
		check: func(r *Row) bool { return r.Toold.P50 <= 50 }}
	rows := []*Row{idle, streams, startup}
	// toold and a bare gRPC server alternate, so that both see the same
	// machine: the bare one is the floor (exec, Go's runtime, a listener).
	var starts, bareStarts []time.Duration
	for i := 0; i < b.iters(20)+1; i++ {
		d, err := b.startToold(ctx, ws)
		if err != nil {
			startup.Error = err.Error()
			return rows
		}
		starts = append(starts, d.startup)
		d.stop()
		bs, bd, err := b.startBareIdle(ctx)
		if err != nil {
			startup.Error = err.Error()
			return rows
		}
		bareStarts = append(bareStarts, bd)
		bs.stop()
	}
	// The first start of each warms the page cache.
	startup.Toold = latencies("toold", starts[1:])
	startup.Base = []Measure{latencies("bare gRPC server (exec to SERVING)", bareStarts[1:])}
	startup.Verified = "health check answered SERVING"

	d, err := b.startToold(ctx, ws)
	if err != nil {
		idle.Error, streams.Error = err.Error(), err.Error()
		return rows
	}
	defer d.stop()
	// One call first, so the pipeline is initialized as in use.
	if c, err := openConv(ctx, d.client, &pb.Hello{}); err == nil {
		_, _ = c.call("think", thinkArgs)
		c.close()
	}
	time.Sleep(200 * time.Millisecond)
	if idle.Toold.Value, err = rssMB(d.pid()); err != nil {
		idle.Error = err.Error()
	}
	idle.Toold.Name = "toold"
	// What the RSS is made of, and the bare gRPC server's, in the same run:
	// a static Go binary's text and data are mapped from its file, and the
	// kernel maps page-cache folios whole.
	anon, file, _ := rssParts(d.pid())
	if bs, _, err := b.startBareIdle(ctx); err == nil {
		time.Sleep(200 * time.Millisecond)
		v, _ := rssMB(bs.cmd.Process.Pid)
		banon, bfile, _ := rssParts(bs.cmd.Process.Pid)
		bs.stop()
		idle.Base = []Measure{{Name: "bare gRPC server, idle", Value: v}}
		idle.Verified = fmt.Sprintf("toold: %.1f MB anonymous (heap, stacks, runtime), %.1f MB file-backed (its %.0f MB executable's pages); bare server: %.1f MB anonymous, %.1f MB file-backed (%.0f MB executable)",
			anon, file, fileMB(b.toold), banon, bfile, fileMB(b.self))
	}
	n := 1000
	if b.smoke {
		n = 50
	}
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for i := 0; i < n; i++ {
		c, err := openConv(sctx, d.client, &pb.Hello{ConversationId: fmt.Sprint("c", i)})
		if err != nil {
			streams.Error = err.Error()
			return rows
		}
		defer c.close()
	}
	time.Sleep(200 * time.Millisecond)
	if streams.Toold.Value, err = rssMB(d.pid()); err != nil {
		streams.Error = err.Error()
	}
	streams.Toold.Name = "toold"
	streams.Verified = fmt.Sprintf("%d streams each answered Hello with Welcome", n)
	return rows
}
