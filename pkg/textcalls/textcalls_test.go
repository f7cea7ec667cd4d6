package textcalls_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/toold/toold/pkg/textcalls"
)

type wantCall struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

type fixture struct {
	Format string     `json:"format"`
	Calls  []wantCall `json:"calls"`
	Text   string     `json:"text"`
}

// TestTranscripts parses every transcript in testdata, with its format
// named and with auto-detection, and checks the calls and the text left.
func TestTranscripts(t *testing.T) {
	files, err := filepath.Glob("testdata/transcripts/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no transcripts: %v", err)
	}
	seen := map[textcalls.Format]bool{}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".txt")
		text, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(strings.TrimSuffix(f, ".txt") + ".json")
		if err != nil {
			t.Fatal(err)
		}
		var want fixture
		if err := json.Unmarshal(b, &want); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		formats := []textcalls.Format{textcalls.Auto}
		if want.Format != "" {
			formats = append(formats, textcalls.Format(want.Format))
			seen[textcalls.Format(want.Format)] = true
		}
		for _, ff := range formats {
			t.Run(name+"/"+string(ff), func(t *testing.T) {
				res, err := textcalls.Parse(string(text), ff)
				if err != nil {
					t.Fatal(err)
				}
				if string(res.Format) != want.Format {
					t.Errorf("format %q, want %q", res.Format, want.Format)
				}
				if len(res.Calls) != len(want.Calls) {
					t.Fatalf("%d calls %+v, want %d", len(res.Calls), res.Calls, len(want.Calls))
				}
				for i, c := range res.Calls {
					if c.Err != "" {
						t.Fatalf("call %d: %s", i, c.Err)
					}
					if c.Name != want.Calls[i].Name {
						t.Errorf("call %d name %q, want %q", i, c.Name, want.Calls[i].Name)
					}
					if !jsonEqual(t, c.Arguments, string(want.Calls[i].Arguments)) {
						t.Errorf("call %d arguments %s, want %s", i, c.Arguments, want.Calls[i].Arguments)
					}
					if string(text)[c.Start:c.End] != c.Raw || c.Raw == "" {
						t.Errorf("call %d raw %q does not match its offsets", i, c.Raw)
					}
				}
				if res.Text != want.Text {
					t.Errorf("text %q, want %q", res.Text, want.Text)
				}
			})
		}
	}
	for _, f := range textcalls.Formats {
		if !seen[f] {
			t.Errorf("no transcript of format %s", f)
		}
	}
}

func jsonEqual(t *testing.T, a, b string) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal([]byte(a), &x); err != nil {
		t.Errorf("not JSON: %s", a)
		return false
	}
	if err := json.Unmarshal([]byte(b), &y); err != nil {
		t.Fatalf("fixture not JSON: %s", b)
	}
	return reflect.DeepEqual(x, y)
}

// TestParseMalformed covers text marked as a call that cannot be read:
// the call comes back with an error saying what was wrong, never dropped.
func TestParseMalformed(t *testing.T) {
	tests := []struct {
		text    string
		format  textcalls.Format
		wantErr string
	}{
		{text: "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": 1}\n</tool_call>", wantErr: "does not hold a JSON object"},
		{text: "[TOOL_CALLS] [{\"name\": \"f\"", wantErr: "not complete"},
		{text: "[TOOL_CALLS] hello", wantErr: "neither a JSON list nor NAME[ARGS]"},
		{text: "```tool_code\nget_weather(\"Paris\")\n```", wantErr: "positional argument"},
		{text: "<|python_tag|>import sys; print(sys.version)<|eom_id|>", wantErr: "neither a JSON call"},
		{text: "TOOL_CALL: just words here", wantErr: "must be"},
		{text: "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather{\"a\":1}<｜tool▁call▁end｜><｜tool▁calls▁end｜>", wantErr: "without <｜tool▁sep｜>"},
	}
	for _, tt := range tests {
		t.Run(tt.text, func(t *testing.T) {
			res, err := textcalls.Parse(tt.text, tt.format)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Calls) != 1 || !strings.Contains(res.Calls[0].Err, tt.wantErr) {
				t.Fatalf("calls %+v, want one with error containing %q", res.Calls, tt.wantErr)
			}
		})
	}
	if _, err := textcalls.Parse("x", "klingon"); err == nil || !strings.Contains(err.Error(), "hermes") {
		t.Fatalf("unknown format: err = %v, want one listing the formats", err)
	}
}
