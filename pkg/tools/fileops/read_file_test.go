package fileops

import (
	"encoding/json"
	"fmt"
	"github.com/toold/toold/pkg/tools/fileops/internal/scan"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/tools"
)

// numbered returns lines from..to of a file whose line i is "line i".
func numbered(from, to int) string {
	var b strings.Builder
	for i := from; i <= to; i++ {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	return b.String()
}

// catN renders lines from..to of such a file as read_file shows them.
func catN(from, to int) string {
	var b strings.Builder
	for i := from; i <= to; i++ {
		fmt.Fprintf(&b, "%6d\tline %d\n", i, i)
	}
	return b.String()
}

func TestReadFile(t *testing.T) {
	png := "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + strings.Repeat("\x00", 64)
	f, _ := newTool(t, tools.Limits{ReadLines: 20, ReadBytes: 4096, LineChars: 50}, map[string]string{
		"ten.txt":        numbered(1, 10),
		"hundred.txt":    numbered(1, 100),
		"noeol.txt":      "a\nb",
		"empty.txt":      "",
		"blank.txt":      "\n",
		"long.txt":       "short\n" + strings.Repeat("x", 120) + "\nend\n",
		"image.png":      png,
		"nul.txt":        "text\x00more text\n",
		"latin1.txt":     "caf\xe9 au lait\nna\xefve\n",
		"garbage.bin":    strings.Repeat("\xff\xfe\x80\x81", 100),
		"dir/inner.go":   "package dir\n",
		"link.txt":       "->ten.txt",
		"wide.txt":       strings.Repeat(strings.Repeat("w", 45)+"\n", 200), // 200 lines of 46 bytes
		"crlf.txt":       "a\r\nb\r\n",
		"unicode.txt":    "héllo wörld\n",
		"subdir/abs.txt": "absolute\n",
	})

	tests := []struct {
		name      string
		args      string
		want      string // exact text, when set
		contains  []string
		trunc     *tools.Truncation
		structure map[string]any
	}{
		{name: "whole file", args: `{"path":"ten.txt"}`, want: catN(1, 10),
			structure: map[string]any{"path": "ten.txt", "total_lines": 10, "start_line": 1, "end_line": 10, "size": int64(len(numbered(1, 10))), "final_newline": true}},
		{name: "offset and limit", args: `{"path":"ten.txt","offset":3,"limit":2}`,
			want:      catN(3, 4) + "\n[Showing lines 3-4 of 10. To read more, call read_file with offset=5.]",
			structure: map[string]any{"start_line": 3, "end_line": 4, "total_lines": 10, "final_newline": true}},
		{name: "offset to the end", args: `{"path":"ten.txt","offset":9}`, want: catN(9, 10)},
		{name: "limit past the end", args: `{"path":"ten.txt","offset":9,"limit":5}`, want: catN(9, 10)},
		{name: "limit as float", args: `{"path":"ten.txt","limit":2.0}`,
			want: catN(1, 2) + "\n[Showing lines 1-2 of 10. To read more, call read_file with offset=3.]"},
		{name: "default line cap", args: `{"path":"hundred.txt"}`,
			want:      catN(1, 20) + "\n[Output truncated at 20 lines: showing lines 1-20 of 100. To continue, call read_file with offset=21.]",
			trunc:     &tools.Truncation{ShownBytes: uint64(len(numbered(1, 20))), TotalBytes: uint64(len(numbered(1, 100))), ShownItems: 20, TotalItems: 100, Continuation: "call read_file with offset=21"},
			structure: map[string]any{"start_line": 1, "end_line": 20, "total_lines": 100}},
		{name: "page two", args: `{"path":"hundred.txt","offset":21}`,
			want: catN(21, 40) + "\n[Output truncated at 20 lines: showing lines 21-40 of 100. To continue, call read_file with offset=41.]"},
		{name: "explicit limit above the line cap", args: `{"path":"hundred.txt","limit":30}`,
			contains: []string{"    30\tline 30\n", "[Showing lines 1-30 of 100. To read more, call read_file with offset=31.]"}},
		{name: "byte cap", args: `{"path":"wide.txt","limit":200}`,
			// Each line renders as 7+45+1 = 53 bytes; 4096/53 = 77 lines.
			contains:  []string{"    77\t", "[Output truncated at 4 KiB: showing lines 1-77 of 200. To continue, call read_file with offset=78 (with a smaller limit if lines are long).]"},
			trunc:     &tools.Truncation{ShownBytes: 77 * 46, TotalBytes: 200 * 46, ShownItems: 77, TotalItems: 200, Continuation: "call read_file with offset=78"},
			structure: map[string]any{"end_line": 77}},
		{name: "no trailing newline", args: `{"path":"noeol.txt"}`, want: "     1\ta\n     2\tb\n",
			structure: map[string]any{"total_lines": 2, "final_newline": false}},
		{name: "no trailing newline, counted past the limit", args: `{"path":"noeol.txt","limit":1}`,
			structure: map[string]any{"total_lines": 2, "final_newline": false}},
		{name: "empty file", args: `{"path":"empty.txt"}`, want: "empty.txt is empty (0 bytes).",
			structure: map[string]any{"total_lines": 0, "size": int64(0)}},
		{name: "one blank line", args: `{"path":"blank.txt"}`, want: "     1\t\n",
			structure: map[string]any{"total_lines": 1}},
		{name: "long line cut", args: `{"path":"long.txt"}`,
			want:  "     1\tshort\n     2\t" + strings.Repeat("x", 50) + " … [line cut: 70 more bytes]\n     3\tend\n\n[1 line longer than 50 characters was cut.]",
			trunc: &tools.Truncation{ShownBytes: 6 + 50 + 4, TotalBytes: 6 + 121 + 4, ShownItems: 3, TotalItems: 3}},
		{name: "png", args: `{"path":"image.png"}`, want: fmt.Sprintf("image.png is a binary file (image/png, %d B); read_file shows text files only.", len(png)),
			structure: map[string]any{"binary": true, "mime_type": "image/png"}},
		{name: "NUL byte", args: `{"path":"nul.txt"}`, contains: []string{"nul.txt is a binary file (", "read_file shows text files only"}},
		{name: "invalid UTF-8 everywhere", args: `{"path":"garbage.bin"}`, contains: []string{"is a binary file (application/octet-stream, 400 B)"}},
		{name: "latin-1 is text", args: `{"path":"latin1.txt"}`, want: "     1\tcaf\uFFFD au lait\n     2\tna\uFFFDve\n"},
		{name: "unicode", args: `{"path":"unicode.txt"}`, want: "     1\théllo wörld\n"},
		{name: "crlf kept", args: `{"path":"crlf.txt"}`, want: "     1\ta\r\n     2\tb\r\n"},
		{name: "symlink inside", args: `{"path":"link.txt","limit":1}`, contains: []string{"     1\tline 1\n"}},
		{name: "clean path", args: `{"path":"./dir/../dir/inner.go"}`, want: "     1\tpackage dir\n",
			structure: map[string]any{"path": "dir/inner.go"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := mustRun(t, f, "read_file", tt.args)
			if tt.want != "" && res.Text != tt.want {
				t.Errorf("text:\n%q\nwant:\n%q", res.Text, tt.want)
			}
			for _, c := range tt.contains {
				if !strings.Contains(res.Text, c) {
					t.Errorf("text does not contain %q:\n%s", c, res.Text)
				}
			}
			if tt.trunc != nil {
				if res.Truncation == nil {
					t.Fatalf("no Truncation, want %+v", *tt.trunc)
				}
				if *res.Truncation != *tt.trunc {
					t.Errorf("Truncation = %+v, want %+v", *res.Truncation, *tt.trunc)
				}
			} else if res.Truncation != nil && tt.want != "" && !strings.Contains(tt.want, "truncated") {
				t.Errorf("unexpected Truncation %+v", *res.Truncation)
			}
			for k, v := range tt.structure {
				if got := res.Structured[k]; fmt.Sprint(got) != fmt.Sprint(v) {
					t.Errorf("Structured[%q] = %v, want %v", k, got, v)
				}
			}
		})
	}

	t.Run("absolute path inside", func(t *testing.T) {
		res := mustRun(t, f, "read_file", fmt.Sprintf(`{"path":%q}`, filepath.Join(f.ws.Dir(), "subdir", "abs.txt")))
		if res.Text != "     1\tabsolute\n" {
			t.Errorf("text = %q", res.Text)
		}
	})
}

func TestReadFileErrors(t *testing.T) {
	f, _ := newTool(t, tools.Limits{}, map[string]string{
		"ten.txt": numbered(1, 10),
		"dir/x":   "x",
		"empty":   "",
	})
	tests := []struct {
		name  string
		args  string
		class error
		parts []string
	}{
		{"missing", `{"path":"nope.txt"}`, errdefs.ErrFailed, []string{`"nope.txt" does not exist`}},
		{"missing dir", `{"path":"no/such/file"}`, errdefs.ErrFailed, []string{"does not exist"}},
		{"directory", `{"path":"dir"}`, errdefs.ErrFailed, []string{"is a directory", "list_dir"}},
		{"offset past end", `{"path":"ten.txt","offset":11}`, errdefs.ErrInvalidArgument, []string{"offset 11 is past the end of ten.txt, which has 10 lines"}},
		{"offset far past end", `{"path":"ten.txt","offset":500}`, errdefs.ErrInvalidArgument, []string{"which has 10 lines"}},
		{"offset in empty file", `{"path":"empty","offset":2}`, errdefs.ErrInvalidArgument, []string{"which has 0 lines"}},
		{"negative offset", `{"path":"ten.txt","offset":-1}`, errdefs.ErrInvalidArgument, []string{"offset"}},
		{"negative limit", `{"path":"ten.txt","limit":-1}`, errdefs.ErrInvalidArgument, []string{"limit"}},
		{"no path", `{}`, errdefs.ErrInvalidArgument, []string{"path is required"}},
		{"not a file under a file", `{"path":"ten.txt/x"}`, errdefs.ErrFailed, []string{"not a directory"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := run(t, f, "read_file", tt.args)
			wantErr(t, err, tt.class, tt.parts...)
		})
	}
}

// TestReadFileStreams reads the head of a 1 GiB file: it must not read the
// whole file (the rest is a hole, so reading it would also find NULs).
func TestReadFileStreams(t *testing.T) {
	f, dir := newTool(t, tools.Limits{}, nil)
	p := filepath.Join(dir, "huge.log")
	if err := os.WriteFile(p, []byte(numbered(1, 1000)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(p, 1<<30); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	res := mustRun(t, f, "read_file", `{"path":"huge.log","offset":500,"limit":10}`)
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("reading 10 lines of a 1 GiB file took %v", d)
	}
	want := catN(500, 509) + "\n[Showing lines 500-509 of a 1 GiB file. To read more, call read_file with offset=510.]"
	if res.Text != want {
		t.Errorf("text:\n%s\nwant:\n%s", res.Text, want)
	}
	if _, ok := res.Structured["total_lines"]; ok {
		t.Error("total_lines should be unknown for a huge file")
	}
}

// TestReadFileLongLines reads lines longer than the read buffer.
func TestReadFileLongLines(t *testing.T) {
	huge := strings.Repeat("y", 3*readBufSize+17)
	f, _ := newTool(t, tools.Limits{LineChars: 10}, map[string]string{
		"big.txt": "first\n" + huge + "\nlast",
	})
	res := mustRun(t, f, "read_file", `{"path":"big.txt"}`)
	want := fmt.Sprintf("     1\tfirst\n     2\tyyyyyyyyyy … [line cut: %d more bytes]\n     3\tlast\n\n[1 line longer than 10 characters was cut.]", len(huge)-10)
	if res.Text != want {
		t.Errorf("text:\n%q\nwant:\n%q", res.Text, want)
	}
	res = mustRun(t, f, "read_file", `{"path":"big.txt","offset":3}`)
	if res.Text != "     3\tlast\n" {
		t.Errorf("after the long line: %q", res.Text)
	}
}

func TestBinaryKind(t *testing.T) {
	tests := []struct {
		name, file, head string
		want             string
		binary           bool
	}{
		{"text", "a.txt", "hello\nworld\n", "", false},
		{"go", "a.go", "package main\n\nfunc main() {}\n", "", false},
		{"nul", "a.dat", "abc\x00def", "application/octet-stream", true},
		{"gzip", "a.gz", "\x1f\x8b\x08\x00\x00\x00\x00\x00", "application/x-gzip", true},
		{"pdf", "a.pdf", "%PDF-1.7\n%\xe2\xe3\xcf\xd3\n", "application/pdf", true},
		{"zip", "a.zip", "PK\x03\x04\x14\x00\x00\x00", "application/zip", true},
		{"nul with extension", "a.wasm", "\x00asm\x01\x00\x00\x00", "application/wasm", true},
		{"control chars", "a.x", strings.Repeat("\x01\x02\x03abc", 20), "application/octet-stream", true},
		{"escape sequences are text", "a.log", "\x1b[31mred\x1b[0m\n", "", false},
		{"a cut rune at the end is text", "a.txt", strings.Repeat("é", 10)[:19], "", false},
		{"html is text", "a.html", "<!DOCTYPE html><html></html>", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mt, bin := scan.BinaryKind(tt.file, []byte(tt.head))
			if bin != tt.binary || mt != tt.want {
				t.Errorf("binaryKind = %q, %v; want %q, %v", mt, bin, tt.want, tt.binary)
			}
		})
	}
}

// TestReadFileArgsBind checks read_file's argument binding against bind
// (the JSON round trip it skips for the usual values): the same fields,
// or the same error, for every kind of value a call's arguments may hold.
func TestReadFileArgsBind(t *testing.T) {
	for _, args := range []map[string]any{
		{"path": "a.txt"},
		{"path": "a.txt", "offset": json.Number("10"), "limit": json.Number("5")},
		{"path": "a.txt", "offset": json.Number("1e2"), "limit": json.Number("-3")},
		{"path": "a.txt", "offset": json.Number("1e400")},
		{"path": "a.txt", "offset": json.Number("2.5")},
		{"path": "a.txt", "offset": json.Number("10.0")},
		{"path": "a.txt", "offset": 10.0, "limit": 3},
		{"path": "a.txt", "offset": 1.5},
		{"path": "a.txt", "offset": 1e12},
		{"path": "a.txt", "offset": "7"},
		{"path": "a.txt", "offset": "seven"},
		{"path": "a.txt", "offset": true},
		{"path": "a.txt", "offset": nil, "limit": nil},
		{"path": nil},
		{"path": 5},
		{"path": []any{"a"}},
		{"Path": "b.txt"},
		{"path": "a.txt", "LIMIT": json.Number("4")},
		{"path": "a.txt", "extra": map[string]any{"x": 1}},
		{},
	} {
		call := &tools.Call{Operation: "read_file", Args: args}
		var got, want readFileArgs
		gotErr, wantErr := got.bind(call), bind(call, &want)
		if got != want || fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
			t.Errorf("%v: bound %+v (%v), bind gives %+v (%v)", args, got, gotErr, want, wantErr)
		}
	}
}
