package fileops

import (
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/toold/toold/pkg/leftover"
)

// tempName's names are what RemoveLeftovers looks for: this toold's are
// never leftovers, the same name with a dead owner's mark is.
func TestTempNameIsFoundAsLeftover(t *testing.T) {
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	dead := strconv.Itoa(gone.Process.Pid) + "p1"
	for _, name := range []string{"main.go", ".env.local", strings.Repeat("n", 300), "a.toold-1p1-0123456789ab.tmp"} {
		tmp := tempName(name)
		if !strings.Contains(tmp, ".toold-"+leftover.Mark()+"-") || len(tmp) > maxNameBytes {
			t.Fatalf("tempName(%q) = %q", name, tmp)
		}
		if isLeftoverTemp(tmp) {
			t.Errorf("%q: a live toold's temp file taken for a leftover", tmp)
		}
		if other := strings.Replace(tmp, ".toold-"+leftover.Mark()+"-", ".toold-"+dead+"-", 1); !isLeftoverTemp(other) {
			t.Errorf("%q: a dead toold's temp file not found", other)
		}
	}
}
