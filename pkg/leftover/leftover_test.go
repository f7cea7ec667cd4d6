package leftover_test

import (
	"os"
	"os/exec"
	"strconv"
	"testing"

	"github.com/toold/toold/pkg/leftover"
)

func TestMarks(t *testing.T) {
	own := leftover.Mark()
	if m, err := leftover.MarkOf(os.Getpid()); err != nil || m != own {
		t.Fatalf("MarkOf(self) = %q, %v; Mark() = %q", m, err, own)
	}
	sleeper := exec.Command("sleep", "60")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { sleeper.Process.Kill(); sleeper.Wait() }()
	live, err := leftover.MarkOf(sleeper.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	pid, start, _ := leftover.ParseMark(live)
	tests := []struct {
		mark string
		dead bool
	}{
		{own, false},
		{live, false},
		// The same pid, started at another time: the pid was reused.
		{strconv.Itoa(pid) + "p" + strconv.FormatUint(start+1, 10), true},
		{strconv.Itoa(gone.Process.Pid) + "p1", true},
		// Nothing is removed on a guess.
		{"", false},
		{"12345", false},
		{"p1", false},
		{"-1p1", false},
		{"0012p1", false},
		{"12p", false},
		{"12p1x", false},
		{"../12p1", false},
	}
	for _, tt := range tests {
		if got := leftover.Dead(tt.mark); got != tt.dead {
			t.Errorf("Dead(%q) = %v, want %v", tt.mark, got, tt.dead)
		}
	}
}
