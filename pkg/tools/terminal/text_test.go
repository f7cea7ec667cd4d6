package terminal

import (
	"bytes"
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/toold/toold/pkg/tools"
)

func TestRing(t *testing.T) {
	t.Parallel()
	r := newRing(8)
	r.write([]byte("abcd"))
	if got := string(r.read(0, 10)); got != "abcd" || r.start() != 0 || r.end != 4 {
		t.Fatalf("read %q start %d end %d", got, r.start(), r.end)
	}
	r.write([]byte("efghij")) // wraps: keeps cdefghij
	if r.start() != 2 || r.end != 10 {
		t.Fatalf("start %d end %d, want 2 10", r.start(), r.end)
	}
	tests := []struct {
		from  int64
		limit int
		want  string
	}{
		{2, 100, "cdefghij"},
		{5, 3, "fgh"},
		{9, 5, "j"},
		{10, 5, ""}, // at the end
		{1, 5, ""},  // dropped
	}
	for _, tt := range tests {
		if got := string(r.read(tt.from, tt.limit)); got != tt.want {
			t.Errorf("read(%d, %d) = %q, want %q", tt.from, tt.limit, got, tt.want)
		}
	}
	r.write([]byte("0123456789ABC")) // longer than the ring
	if got := string(r.read(r.start(), 100)); got != "56789ABC" || r.end != 23 {
		t.Errorf("after a long write: %q end %d", got, r.end)
	}
}

func TestCleanText(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, in, want string }{
		{"plain", "hello\nworld\n", "hello\nworld\n"},
		{"crlf", "a\r\nb\r\n", "a\nb\n"},
		{"progress overwrite", "10%\r50%\r100%\ndone\n", "100%\ndone\n"},
		{"colors", "\x1b[1;31mred\x1b[0m plain\n", "red plain\n"},
		{"osc title", "\x1b]0;title\x07prompt$ ", "prompt$ "},
		{"osc with ST", "\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\\n", "link\n"},
		{"charset", "\x1b(Bok\n", "ok\n"},
		{"bracketed paste", "\x1b[?2004hcmd\x1b[?2004l\n", "cmd\n"},
		{"backspace", "abc\b\bX\n", "aX\n"},
		{"bell and nul", "a\x07b\x00c\n", "abc\n"},
		{"tab kept", "a\tb\n", "a\tb\n"},
		{"invalid utf8", "ok \xff\xfe!\n", "ok \uFFFD!\n"},
		{"multibyte", "héllo ✓\n", "héllo ✓\n"},
		{"trailing cr kept", "partial\r", "partial"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := cleanText([]byte(tt.in)); got != tt.want {
				t.Errorf("cleanText(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestCutView(t *testing.T) {
	t.Parallel()
	var all bytes.Buffer
	for i := 1; i <= 1000; i++ {
		fmt.Fprintf(&all, "line %d\n", i)
	}
	b := all.Bytes()
	h, tl, from, to := cutView(b[:200], b[len(b)-200:], int64(len(b)), 200)
	if from >= to || !strings.HasPrefix(string(h), "line 1\n") || !strings.HasSuffix(string(h), "\n") {
		t.Errorf("head %q cut [%d,%d)", h, from, to)
	}
	if !strings.HasSuffix(string(tl), "line 1000\n") || strings.HasPrefix(string(tl), "ine") {
		t.Errorf("tail %q", tl)
	}
	if int64(len(h)) != from || int64(len(b))-int64(len(tl)) != to {
		t.Errorf("cut [%d,%d) does not match head %d and tail %d", from, to, len(h), len(tl))
	}
	// Short output: all of it.
	h, tl, from, to = cutView(b[:50], b[:50], 50, 200)
	if string(h) != string(b[:50]) || tl != nil || from != to {
		t.Errorf("short: %q %q [%d,%d)", h, tl, from, to)
	}
	// A multi-byte character is never split.
	s := []byte(strings.Repeat("é", 300))
	h, tl, _, _ = cutView(s, s, int64(len(s)), 101)
	if !bytes.Equal(h, []byte(strings.Repeat("é", len(h)/2))) || len(tl)%2 != 0 {
		t.Errorf("split a character: head %d bytes, tail %d bytes", len(h), len(tl))
	}
}

func TestTrimPartialRune(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want int
	}{
		{"abc", 0}, {"ab\xc3", 1}, {"ab\xc3\xa9", 0}, {"\xe2\x9c", 2}, {"\xe2\x9c\x93", 0}, {"\xf0\x9f\x98", 3}, {"", 0},
	}
	for _, tt := range tests {
		if got := trimPartialRune([]byte(tt.in)); got != tt.want {
			t.Errorf("trimPartialRune(%q) = %d, want %d", tt.in, got, tt.want)
		}
	}
}

// The store keeps the head of a record in its file up to the per-call
// limit, and its tail; reads of the middle report the gap; the oldest
// finished records are evicted to stay under the total.
func TestStore(t *testing.T) {
	t.Parallel()
	s, err := newStore(t.TempDir(), 1000, 2500, 100)
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	stream := func(n int) []byte {
		var b bytes.Buffer
		for i := 0; b.Len() < n; i++ {
			fmt.Fprintf(&b, "%05d\n", i)
		}
		return b.Bytes()[:n]
	}
	data := stream(3000)
	r := s.create("conv", "call-1", "gen")
	for i := 0; i < len(data); i += 7 {
		r.write(tools.Stdout, data[i:min(i+7, len(data))])
	}
	// While running: the tail is in memory.
	if c := r.read(2950, 100); string(c.data) != string(data[2950:]) || c.gapTo != 0 {
		t.Errorf("tail while running: %q gap [%d,%d)", c.data, c.gapFrom, c.gapTo)
	}
	r.finish("exit code 0")
	tests := []struct {
		name      string
		from      int64
		limit     int
		want      []byte
		gapFrom   int64
		gapTo     int64
		wantFrom  int64
		gapReason string
	}{
		{name: "head", from: 0, limit: 50, want: data[:50], wantFrom: 0},
		{name: "up to the limit", from: 990, limit: 50, want: data[990:1000], wantFrom: 990},
		{name: "middle not kept", from: 1500, limit: 50, want: data[2900:2950], gapFrom: 1500, gapTo: 2900, wantFrom: 2900, gapReason: "per-call limit"},
		{name: "tail", from: 2950, limit: 100, want: data[2950:], wantFrom: 2950},
		{name: "end", from: 3000, limit: 10, want: nil, wantFrom: 3000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := r.read(tt.from, tt.limit)
			if !bytes.Equal(c.data, tt.want) || c.from != tt.wantFrom || c.gapFrom != tt.gapFrom || c.gapTo != tt.gapTo {
				t.Errorf("read(%d,%d) = %q from %d gap [%d,%d) %q", tt.from, tt.limit, c.data, c.from, c.gapFrom, c.gapTo, c.gapWhy)
			}
			if tt.gapReason != "" && !strings.Contains(c.gapWhy, tt.gapReason) {
				t.Errorf("gap reason %q lacks %q", c.gapWhy, tt.gapReason)
			}
		})
	}
	head, tail, total := r.view(100)
	if total != 3000 || !bytes.Equal(head, data[:100]) || !bytes.Equal(tail, data[2900:]) {
		t.Errorf("view: total %d head %q tail %q", total, head, tail)
	}
	ms, n, partial, err := r.grep(context.Background(), regexp.MustCompile(`^0010[0-9]$`), 5, 100)
	if err != nil || n != 10 || len(ms) != 5 || !partial || ms[0].line != 101 || ms[0].offset != 600 || ms[0].text != "00100" {
		t.Errorf("grep: %v matches (%d total, partial %v): %+v", len(ms), n, partial, ms)
	}

	// Two more records of 1100 bytes push the first out (2500 in total).
	for _, id := range []string{"call-2", "call-3"} {
		r2 := s.create("conv", id, "gen")
		r2.write(tools.Stdout, stream(1000))
		r2.finish("exit code 0")
	}
	if _, err := s.lookup("conv", "call-1"); err == nil || !strings.Contains(err.Error(), "evicted") {
		t.Errorf("call-1: %v, want evicted", err)
	}
	if _, err := s.lookup("other", "call-2"); err == nil {
		t.Error("another conversation read call-2")
	}
	if r3, err := s.lookup("conv", "call-3"); err != nil || len(r3.read(0, 2000).data) != 1000 {
		t.Errorf("call-3: %v", err)
	}
}
