package leftover_test

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

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

// A toold that was killed and that its parent has not reaped yet (a
// zombie) is dead: what it left is removed by a toold that restarts before
// the reaping.
func TestZombieIsDead(t *testing.T) {
	z := exec.Command("sh", "-c", "kill -9 $$")
	if err := z.Start(); err != nil {
		t.Fatal(err)
	}
	defer z.Wait()
	mark := ""
	// The process is a zombie until Wait reaps it: its mark stays readable.
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(z.Process.Pid) + "/stat")
		if err == nil && strings.Contains(string(b), ") Z ") {
			mark, _ = leftover.MarkOf(z.Process.Pid)
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if mark == "" {
		t.Fatal("the killed process never showed as a zombie")
	}
	if !leftover.Dead(mark) {
		t.Errorf("Dead(%q) of a zombie = false", mark)
	}
}
