package daemon

import (
	"bufio"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// exeMappings returns, for each mapping of the test executable, its Rss
// and Anonymous in kB, keyed by "range perms".
func exeMappings(t *testing.T) map[string][2]int {
	t.Helper()
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string][2]int{}
	cur := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) >= 5 && strings.Contains(fs[0], "-") {
			cur = ""
			if len(fs) >= 6 && fs[5] == exe {
				cur = fs[0] + " " + fs[1]
				out[cur] = [2]int{}
			}
			continue
		}
		if cur == "" || len(fs) < 2 {
			continue
		}
		kb, _ := strconv.Atoi(fs[1])
		v := out[cur]
		switch fs[0] {
		case "Rss:":
			v[0] = kb
		case "Anonymous:":
			v[1] = kb
		}
		out[cur] = v
	}
	return out
}

// TestDropStartupText checks that the executable's read-only pages leave
// the process's page tables, that written (copied-on-write) pages of the
// executable stay, and that the process runs on as before.
func TestDropStartupText(t *testing.T) {
	before := exeMappings(t)
	n, err := dropStartupText()
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Fatal("no mapping of the executable was dropped")
	}
	after := exeMappings(t)
	var rssBefore, rssAfter int
	for k, b := range before {
		a := after[k]
		if strings.HasSuffix(k, "r-xp") || strings.HasSuffix(k, "r--p") {
			rssBefore += b[0]
			rssAfter += a[0]
		}
		if b[1] > 0 && a[1] != b[1] {
			t.Errorf("mapping %s had %d kB of written pages, now %d: they must never be dropped", k, b[1], a[1])
		}
	}
	for k, b := range before {
		if b[1] > 0 {
			t.Logf("kept: %s, %d kB written", k, b[1])
		}
	}
	t.Logf("read-only mappings of the executable: %d kB resident before, %d kB after", rssBefore, rssAfter)
	if rssAfter >= rssBefore {
		t.Errorf("resident read-only pages of the executable: %d kB before, %d kB after; want fewer", rssBefore, rssAfter)
	}
	// Code and data not run since fault back in.
	re := regexp.MustCompile(`^(\w+)-(\d+)$`)
	if got := fmt.Sprint(re.FindStringSubmatch("toold-27")); got != "[toold-27 toold 27]" {
		t.Errorf("after the drop: %s", got)
	}
}
