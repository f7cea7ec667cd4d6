// Command toolbench measures toold against the limit and against what users
// would pick instead, in one run.
//
// It starts a real toold (the binary given by -toold), the baselines and the
// peers itself, runs every row, and prints a markdown table and JSON. Each
// row reports toold's figure and its baseline's from the same run and their
// ratio: these machines are shared and noisy, so ratios are what compare.
// Results are verified (same hits, same bytes) so that a fast wrong answer
// cannot win.
//
//	toolbench -toold bin/toold [-smoke] [-rows REGEXP] [-json FILE] [-md FILE]
//
// -smoke runs a few iterations per row and checks no targets (CI runs it so
// the harness cannot rot).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"time"
)

// bench is one harness run.
type bench struct {
	toold    string // path of the toold binary
	self     string // path of this binary (for the bare server)
	smoke    bool
	corpus   string // the tree grep/glob rows search (GOROOT/src)
	tmp      string
	rows     []*Row
	only     *regexp.Regexp
	profiles string  // directory for pprof profiles of rows that miss
	trace    bool    // with profiles: toold's execution trace too
	peersDir string  // testdata/mcp, where the MCP peers are installed
	ladderd  string  // the ladder row's server (default: ladderd beside toolbench)
	current  *daemon // the toold started last, when profiling
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "serve-mcp-proxy" {
		if err := serveMCPProxy(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "toolbench serve-mcp-proxy:", err)
			os.Exit(1)
		}
		return
	}
	if len(os.Args) > 1 && os.Args[1] == "serve-bare" {
		if err := serveBare(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "toolbench serve-bare:", err)
			os.Exit(1)
		}
		return
	}
	var (
		toold    = flag.String("toold", "bin/toold", "the toold binary to measure")
		smoke    = flag.Bool("smoke", false, "a few iterations per row; no targets checked")
		rows     = flag.String("rows", "", "run only rows whose id matches this regexp")
		jsonOut  = flag.String("json", "", "write the results as JSON to this file")
		mdOut    = flag.String("md", "", "write the markdown table to this file")
		corpus   = flag.String("corpus", runtime.GOROOT()+"/src", "the tree the search rows search")
		profiles = flag.String("profiles", "", "write CPU and allocation profiles of toold for rows that miss their target into this directory")
		trace    = flag.Bool("trace", false, "with -profiles: also keep toold's execution trace (ID.trace, for go tool trace), and row 8's hop's (ID.hop-start.trace)")
		peersDir = flag.String("peers", "testdata/mcp", "where `make mcp-peers` installed the MCP peers")
		ladderd  = flag.String("ladderd", "", "the ladder row's server (default: ladderd beside toolbench; go build ./cmd/toolbench/ladderd)")
	)
	flag.Parse()
	self, err := os.Executable()
	if err != nil {
		fatal(err)
	}
	tmp, err := os.MkdirTemp("", "toolbench")
	if err != nil {
		fatal(err)
	}
	defer os.RemoveAll(tmp)
	b := &bench{toold: *toold, self: self, smoke: *smoke, corpus: *corpus, tmp: tmp, profiles: *profiles, trace: *trace, peersDir: *peersDir, ladderd: *ladderd}
	if *rows != "" {
		b.only = regexp.MustCompile(*rows)
	}
	ctx := context.Background()
	started := time.Now()
	if err := b.run(ctx); err != nil {
		fatal(err)
	}
	rep := report{
		Date:    time.Now().UTC().Format("2006-01-02"),
		Machine: machine(),
		Smoke:   b.smoke,
		Elapsed: time.Since(started).Round(time.Second).String(),
		Rows:    b.rows,
	}
	md := rep.markdown()
	fmt.Print(md)
	if *mdOut != "" {
		if err := os.WriteFile(*mdOut, []byte(md), 0o644); err != nil {
			fatal(err)
		}
	}
	if *jsonOut != "" {
		j, _ := json.MarshalIndent(rep, "", "  ")
		if err := os.WriteFile(*jsonOut, append(j, '\n'), 0o644); err != nil {
			fatal(err)
		}
	}
	for _, r := range b.rows {
		if r.Error != "" {
			fmt.Fprintf(os.Stderr, "toolbench: row %s failed: %s\n", r.ID, r.Error)
			os.Exit(1)
		}
	}
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "toolbench:", err)
	os.Exit(1)
}

// iters picks an iteration count: full or smoke.
func (b *bench) iters(full int) int {
	if b.smoke {
		return max(3, full/200)
	}
	return full
}

// span picks a measuring duration: full or smoke.
func (b *bench) span(full time.Duration) time.Duration {
	if b.smoke {
		return 100 * time.Millisecond
	}
	return full
}

func (b *bench) want(id string) bool { return b.only == nil || b.only.MatchString(id) }

// add records a row (and prints progress on stderr).
func (b *bench) add(r *Row) {
	r.finish(b.smoke)
	b.rows = append(b.rows, r)
	status := "ok"
	switch {
	case r.Error != "":
		status = "ERROR " + r.Error
	case r.Met != nil && !*r.Met:
		status = "MISSES TARGET"
		if d := b.current; d != nil {
			// The row was measured against the toold started last.
			if d.stopped {
				d.keepProfiles(r.ID)
			} else {
				d.missed = append(d.missed, r.ID)
			}
			status += " (profiles: " + filepath.Join(b.profiles, r.ID) + ".{cpu,allocs}.pprof)"
		}
	}
	fmt.Fprintf(os.Stderr, "toolbench: %-24s %s\n", r.ID, status)
}
