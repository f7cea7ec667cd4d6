package fileops

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/tools"
)

func grepTree() map[string]string {
	return map[string]string{
		".gitignore":           "*.log\ngen/\n",
		".git/config":          "needle in git\n",
		".hidden/h.go":         "needle hidden\n",
		".github/ci.yml":       "needle ci\n",
		"a.go":                 "package a\n\n// Needle here\nfunc needle() {}\n",
		"b.txt":                "one\ntwo needle\nthree\nfour\nfive\nsix needle\nseven\n",
		"app.log":              "needle in a log\n",
		"bin.dat":              "needle\x00binary\n",
		"gen/x.go":             "needle generated\n",
		"sub/.gitignore":       "local.go\n!keep.log\n",
		"sub/local.go":         "needle local\n",
		"sub/keep.log":         "needle kept\n",
		"sub/c.go":             "x\nneedle\n",
		"web/app.ts":           "const needle = 1\n",
		"web/app.tsx":          "<Needle />\n",
		"long.txt":             strings.Repeat("a", 30) + "needle" + strings.Repeat("b", 30) + "\n",
		"link.go":              "->a.go",
		"deep/er/est/file.txt": "the needle is deep\n",
	}
}

func TestGrep(t *testing.T) {
	f, _ := newTool(t, tools.Limits{LineChars: 40}, grepTree())
	tests := []struct {
		name      string
		args      string
		want      string
		trunc     *tools.Truncation
		structure map[string]any
	}{
		{name: "default", args: `{"pattern":"needle"}`,
			want: strings.Join([]string{
				"a.go:4:func needle() {}",
				"b.txt:2:two needle",
				"b.txt:6:six needle",
				"deep/er/est/file.txt:1:the needle is deep",
				"long.txt:1:" + strings.Repeat("a", 30) + "needlebbbb … [line cut: 26 more bytes]",
				"sub/c.go:2:needle",
				"sub/keep.log:1:needle kept",
				"web/app.ts:1:const needle = 1",
			}, "\n"),
			structure: map[string]any{"total_matches": 8, "files_matched": 7, "files_searched": 8, "binary_files_skipped": 1}},
		{name: "ignore case", args: `{"pattern":"NEEDLE","ignore_case":true,"path":"web"}`,
			want: "web/app.ts:1:const needle = 1\nweb/app.tsx:1:<Needle />"},
		{name: "regex", args: `{"pattern":"^(two|six) \\w+$"}`, want: "b.txt:2:two needle\nb.txt:6:six needle"},
		{name: "include by name", args: `{"pattern":"needle","include":"*.go"}`,
			want: "a.go:4:func needle() {}\nsub/c.go:2:needle"},
		{name: "include braces", args: `{"pattern":"(?i)needle","include":"**/*.{ts,tsx}"}`,
			want: "web/app.ts:1:const needle = 1\nweb/app.tsx:1:<Needle />"},
		{name: "include with a slash", args: `{"pattern":"needle","include":"sub/*.go"}`, want: "sub/c.go:2:needle"},
		{name: "include relative to path", args: `{"pattern":"needle","path":"deep","include":"er/*/*.txt"}`,
			want: "deep/er/est/file.txt:1:the needle is deep"},
		{name: "include names hidden", args: `{"pattern":"needle","include":".github/*.yml"}`, want: ".github/ci.yml:1:needle ci"},
		{name: "hidden path given", args: `{"pattern":"needle","path":".hidden"}`, want: ".hidden/h.go:1:needle hidden"},
		{name: "ignored path given", args: `{"pattern":"needle","path":"gen"}`, want: "gen/x.go:1:needle generated"},
		{name: "single file", args: `{"pattern":"needle","path":"b.txt"}`, want: "b.txt:2:two needle\nb.txt:6:six needle",
			structure: map[string]any{"files_searched": 1}},
		{name: "single ignored file", args: `{"pattern":"needle","path":"app.log"}`, want: "app.log:1:needle in a log"},
		{name: "single binary file", args: `{"pattern":"needle","path":"bin.dat"}`,
			want:      `No matches for "needle" in bin.dat (0 files searched; .git, hidden, binary and .gitignore'd files are skipped).`,
			structure: map[string]any{"binary_files_skipped": 1}},
		{name: "context", args: `{"pattern":"needle","path":"b.txt","context_lines":1}`,
			want: "b.txt-1-one\nb.txt:2:two needle\nb.txt-3-three\n--\nb.txt-5-five\nb.txt:6:six needle\nb.txt-7-seven"},
		{name: "context merges", args: `{"pattern":"needle","path":"b.txt","context_lines":2}`,
			want: "b.txt-1-one\nb.txt:2:two needle\nb.txt-3-three\nb.txt-4-four\nb.txt-5-five\nb.txt:6:six needle\nb.txt-7-seven"},
		{name: "context across files", args: `{"pattern":"needle","include":"*.go","context_lines":1}`,
			want: "a.go-3-// Needle here\na.go:4:func needle() {}\n--\nsub/c.go-1-x\nsub/c.go:2:needle"},
		{name: "max results", args: `{"pattern":"needle","max_results":3}`,
			want: "a.go:4:func needle() {}\nb.txt:2:two needle\nb.txt:6:six needle\n\n" +
				"[Showing 3 of 8 matching lines in 7 files (8 files searched), cut at max_results=3. Narrow the search with path, include or a more specific pattern, or raise max_results (up to 2000).]",
			trunc:     &tools.Truncation{ShownItems: 3, TotalItems: 8, Continuation: "narrow the search with path, include or a more specific pattern"},
			structure: map[string]any{"total_matches": 8, "files_matched": 7}},
		{name: "max results with context", args: `{"pattern":"needle","max_results":2,"context_lines":1}`,
			want: "a.go-3-// Needle here\na.go:4:func needle() {}\n--\nb.txt-1-one\nb.txt:2:two needle\nb.txt-3-three\n\n" +
				"[Showing 2 of 8 matching lines in 7 files (8 files searched), cut at max_results=2. Narrow the search with path, include or a more specific pattern, or raise max_results (up to 2000).]",
			trunc: &tools.Truncation{ShownItems: 2, TotalItems: 8, Continuation: "narrow the search with path, include or a more specific pattern"}},
		{name: "no match", args: `{"pattern":"haystack","include":"*.go"}`,
			want:      `No matches for "haystack" in . (2 files searched; .git, hidden, binary and .gitignore'd files are skipped). Only files matching "*.go" were searched.`,
			structure: map[string]any{"total_matches": 0, "files_matched": 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := mustRun(t, f, "grep_search", tt.args)
			if res.Text != tt.want {
				t.Errorf("text:\n%s\nwant:\n%s", res.Text, tt.want)
			}
			switch {
			case tt.trunc == nil && res.Truncation != nil:
				t.Errorf("unexpected Truncation %+v", *res.Truncation)
			case tt.trunc != nil && (res.Truncation == nil || *res.Truncation != *tt.trunc):
				t.Errorf("Truncation = %+v, want %+v", res.Truncation, *tt.trunc)
			}
			for k, v := range tt.structure {
				if got := res.Structured[k]; fmt.Sprint(got) != fmt.Sprint(v) {
					t.Errorf("Structured[%q] = %v, want %v", k, got, v)
				}
			}
		})
	}

	t.Run("structured matches", func(t *testing.T) {
		res := mustRun(t, f, "grep_search", `{"pattern":"needle","path":"b.txt","context_lines":1}`)
		got := fmt.Sprint(res.Structured["matches"])
		want := "[map[line:2 path:b.txt text:two needle] map[line:6 path:b.txt text:six needle]]"
		if got != want {
			t.Errorf("matches = %s, want %s", got, want)
		}
	})
}

func TestGrepErrors(t *testing.T) {
	f, _ := newTool(t, tools.Limits{}, map[string]string{"a.txt": "x\n", "fifo/": ""})
	tests := []struct {
		name, args string
		class      error
		parts      []string
	}{
		{"bad regex", `{"pattern":"func("}`, errdefs.ErrInvalidArgument, []string{`pattern "func(" is not a valid regular expression`, "missing closing )"}},
		{"newline", `{"pattern":"a\nb"}`, errdefs.ErrInvalidArgument, []string{"one line at a time"}},
		{"bad include", `{"pattern":"x","include":"[a"}`, errdefs.ErrInvalidArgument, []string{"include"}},
		{"no pattern", `{}`, errdefs.ErrInvalidArgument, []string{"pattern is required"}},
		{"context too big", `{"pattern":"x","context_lines":11}`, errdefs.ErrInvalidArgument, []string{"context_lines"}},
		{"max_results too big", `{"pattern":"x","max_results":2001}`, errdefs.ErrInvalidArgument, []string{"max_results"}},
		{"missing path", `{"pattern":"x","path":"nope"}`, errdefs.ErrFailed, []string{`"nope" does not exist`}},
		{"outside", `{"pattern":"x","path":"/"}`, errdefs.ErrDenied, []string{"outside the workspace"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := run(t, f, "grep_search", tt.args)
			wantErr(t, err, tt.class, tt.parts...)
			var e *errdefs.Error
			if errors.As(err, &e) && errors.Is(err, errdefs.ErrInvalidArgument) && e.Field == "" {
				t.Errorf("invalid argument error without a field: %+v", e)
			}
		})
	}
}

func TestGrepOutputCap(t *testing.T) {
	files := map[string]string{}
	for i := range 50 {
		files[fmt.Sprintf("f%02d.txt", i)] = strings.Repeat("match this line\n", 10)
	}
	f, _ := newTool(t, tools.Limits{ReadBytes: 1000}, files)
	res := mustRun(t, f, "grep_search", `{"pattern":"match","max_results":2000}`)
	if len(res.Text) > 1300 {
		t.Errorf("text is %d bytes, want about 1000", len(res.Text))
	}
	if !strings.Contains(res.Text, "of 500 matching lines in 50 files (50 files searched), cut at the output limit of 1000 B.") {
		t.Errorf("no note about the output limit:\n%s", res.Text)
	}
	if res.Truncation == nil || res.Truncation.TotalItems != 500 || res.Truncation.ShownItems == 0 {
		t.Errorf("Truncation = %+v", res.Truncation)
	}
}

// bigTree is a tree of many small files for the tests that stop a search.
func bigTree(n int) map[string]string {
	files := map[string]string{}
	for i := range n {
		files[fmt.Sprintf("d%02d/f%04d.txt", i%40, i)] = strings.Repeat("some text\n", 20) + "needle\n"
	}
	return files
}

// TestGrepCancel cancels a search after a few files: it must stop promptly
// with ErrCanceled and leave nothing running.
func TestGrepCancel(t *testing.T) {
	f, _ := newTool(t, tools.Limits{}, bigTree(2000))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var searched atomic.Int64
	f.fileSearched = func() {
		if searched.Add(1) == 20 {
			cancel()
		}
	}
	defer func() { f.fileSearched = nil }()
	_, err := runCtx(ctx, t, f, "grep_search", `{"pattern":"needle"}`, nil)
	wantErr(t, err, errdefs.ErrCanceled, "canceled")
	if n := searched.Load(); n > 200 {
		t.Errorf("%d files searched after the cancel at 20", n)
	}
}

// TestGrepTimeout lets the call's deadline pass while the search runs
// (after its first file): it stops with ErrTimeout.
func TestGrepTimeout(t *testing.T) {
	f, _ := newTool(t, tools.Limits{}, bigTree(500))
	ctx := &expiringContext{Context: context.Background(), done: make(chan struct{})}
	f.fileSearched = ctx.expire
	_, err := runCtx(ctx, t, f, "grep_search", `{"pattern":"needle"}`, nil)
	wantErr(t, err, errdefs.ErrTimeout, "timed out")
}

// expiringContext is a context whose deadline passes when expire is called.
type expiringContext struct {
	context.Context
	done chan struct{}
	once sync.Once
}

func (c *expiringContext) expire()                     { c.once.Do(func() { close(c.done) }) }
func (c *expiringContext) Done() <-chan struct{}       { return c.done }
func (c *expiringContext) Deadline() (time.Time, bool) { return time.Now().Add(time.Hour), true }
func (c *expiringContext) Err() error {
	select {
	case <-c.done:
		return context.DeadlineExceeded
	default:
		return nil
	}
}

func TestGrepProgress(t *testing.T) {
	f, _ := newTool(t, tools.Limits{}, bigTree(200))
	old := progressEvery
	progressEvery = time.Millisecond
	defer func() { progressEvery = old }()
	// The first file's worker waits until a progress report went out, so
	// the search cannot end before one: holdUntilReported sets that up and
	// returns what the sink calls on a report.
	holdUntilReported := func() (reportedFn func()) {
		reported := make(chan struct{})
		var first, once sync.Once
		f.fileSearched = func() { first.Do(func() { <-reported }) }
		return func() { once.Do(func() { close(reported) }) }
	}
	defer func() { f.fileSearched = nil }()

	t.Run("reports", func(t *testing.T) {
		var after atomic.Bool
		reported := holdUntilReported()
		sink := &fakeSink{ProgressFn: func(msg string, fraction float64) error {
			reported()
			if after.Load() {
				t.Error("Progress called after Run returned")
			}
			if fraction >= 0 || !strings.HasPrefix(msg, "searched ") {
				t.Errorf("Progress(%q, %v)", msg, fraction)
			}
			return nil
		}}
		res, err := runCtx(context.Background(), t, f, "grep_search", `{"pattern":"needle"}`, sink.sink())
		after.Store(true)
		if err != nil {
			t.Fatal(err)
		}
		if len(sink.calls()) == 0 {
			t.Error("no progress reported")
		}
		if res.Structured["total_matches"] != 200 {
			t.Errorf("total_matches = %v", res.Structured["total_matches"])
		}
	})
	t.Run("sink gone", func(t *testing.T) {
		reported := holdUntilReported()
		sink := &fakeSink{ProgressFn: func(string, float64) error { reported(); return errors.New("stream closed") }}
		_, err := runCtx(context.Background(), t, f, "grep_search", `{"pattern":"needle"}`, sink.sink())
		wantErr(t, err, errdefs.ErrCanceled, "client is gone")
	})
}

// TestGrepDeterministic runs the same search many times: the output must
// not depend on the order the workers find files in.
func TestGrepDeterministic(t *testing.T) {
	f, _ := newTool(t, tools.Limits{}, bigTree(300))
	first := mustRun(t, f, "grep_search", `{"pattern":"needle|text","max_results":50,"context_lines":1}`).Text
	for range 10 {
		if got := mustRun(t, f, "grep_search", `{"pattern":"needle|text","max_results":50,"context_lines":1}`).Text; got != first {
			t.Fatalf("output changed between runs:\n%s\n---\n%s", got, first)
		}
	}
	if !strings.HasPrefix(first, "d00/f0000.txt:1:some text\n") {
		t.Errorf("output does not start with the first file:\n%s", first[:200])
	}
}
