package textcalls_test

import (
	"strings"
	"testing"

	"github.com/toold/toold/pkg/textcalls"
)

// SWE-agent's format: with the format named, any command line in the last
// block is a call (bash for a command SWE-agent does not define); detected
// automatically, only SWE-agent's own commands are, so an ordinary code
// block in an answer is never taken for a command.
func TestSWEAgentFormat(t *testing.T) {
	text := "DISCUSSION\nLet's run the reproduction script.\n\n```\npython reproduce.py --fast\n```\n"
	res, err := textcalls.Parse(text, textcalls.SWEAgent)
	if err != nil || len(res.Calls) != 1 || res.Calls[0].Name != "bash" || res.Calls[0].Arguments != `{"command":"python reproduce.py --fast"}` {
		t.Fatalf("bash command: %+v %v", res, err)
	}
	if res.Text != "DISCUSSION\nLet's run the reproduction script." {
		t.Errorf("text %q", res.Text)
	}
	if res, _ := textcalls.Parse(text, textcalls.Auto); len(res.Calls) != 0 {
		t.Errorf("auto-detection took a plain code block for a command: %+v", res.Calls)
	}
	// Only the last block is the action.
	two := "Earlier I ran:\n```\nls\n```\nNow:\n```\nsearch_dir \"TimeDelta\" src\n```"
	res, _ = textcalls.Parse(two, textcalls.Auto)
	if len(res.Calls) != 1 || res.Calls[0].Name != "search_dir" || res.Calls[0].Arguments != `{"dir":"src","search_term":"TimeDelta"}` {
		t.Fatalf("last block: %+v", res.Calls)
	}
	// A known command with the wrong arguments is a call with the error.
	for text, want := range map[string]string{
		"```\nopen\n```":                     "takes 1 to 2 arguments",
		"```\ngoto ten\n```":                 "line number",
		"```\nedit 3:4\nx = 1\n```":          "end_of_edit",
		"```\nfind_file 'unclosed\n```":      "unclosed",
		"```\nsearch_file a b c\n```":        "takes 1 to 2 arguments",
		"```\nedit 'only one argument'\n```": "<search> <replace>",
	} {
		res, err := textcalls.Parse(text, textcalls.SWEAgent)
		if err != nil || len(res.Calls) != 1 || !strings.Contains(res.Calls[0].Err, want) {
			t.Errorf("%q: %+v %v, want an error with %q", text, res.Calls, err, want)
		}
	}
}
