package terminal

import "testing"

// TestEndsWithPrompt: the output a waiting read returns early (after
// promptSettle rather than the full settle) ends like a prompt, control
// sequences after it aside; anything else waits the full settle.
func TestEndsWithPrompt(t *testing.T) {
	for _, tc := range []struct {
		out  string
		want bool
	}{
		{"# ", true},
		{"user@host:~/ws$ ", true},
		{"sh-5.2$ ", true},
		{"\x1b[01;32muser@host\x1b[00m:\x1b[01;34m~\x1b[00m$ ", true},
		{"$ \x1b[?2004h", true},
		{"\x1b]0;user@host: ~\x07user@host:~$ ", true},
		{">>> ", true},
		{"> ", true},
		{"host% ", true},
		{"", false},
		{" ", false},
		{"building...\r\n", false},
		{"Password: ", false},
		{"total 4$", false},
		{"50% done", false},
		{"a $ b\r\n", false},
	} {
		if got := endsWithPrompt([]byte(tc.out)); got != tc.want {
			t.Errorf("endsWithPrompt(%q) = %v, want %v", tc.out, got, tc.want)
		}
	}
}
