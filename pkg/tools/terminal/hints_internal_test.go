package terminal

import (
	"strings"
	"testing"
)

func TestExitHint(t *testing.T) {
	tests := []struct {
		code   int
		output string
		want   string // substring; "" means no hint
	}{
		{127, "bash: line 1: rgg: command not found\n", `"rgg" is not installed`},
		{127, "sh: 1: rgg: not found\n", `command -v rgg`},
		{127, "make: *** No rule\n", ""},
		{126, "bash: line 1: ./x.sh: Permission denied\n", `chmod +x ./x.sh`},
		{126, "bash: line 1: ./src: Is a directory\n", `"./src" is a directory`},
		{1, "bash: line 1: rgg: command not found\n", ""},
		{0, "", ""},
	}
	for _, tt := range tests {
		got := exitHint(tt.code, tt.output)
		if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
			t.Errorf("exitHint(%d, %q) = %q, want it to contain %q", tt.code, tt.output, got, tt.want)
		}
	}
}
