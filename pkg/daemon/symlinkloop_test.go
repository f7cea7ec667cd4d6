package daemon_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	pb "github.com/toold/toold/gen/toold/v1"
	"github.com/toold/toold/pkg/daemon/daemontest"
)

// read_file of a symlink loop in the workspace fails at once with a clear
// error (DENIED: "too many levels of symbolic links") in AUTO mode; nobody
// is asked about a path that leads nowhere (the session's call fails the
// test on an approval).
func TestReadSymlinkLoop(t *testing.T) {
	d := daemontest.Start(t)
	for _, l := range [][2]string{{"b", "a"}, {"a", "b"}} {
		if err := os.Symlink(l[0], filepath.Join(d.Workspace, l[1])); err != nil {
			t.Fatal(err)
		}
	}
	x := newSession(t, d)
	for i, p := range []string{"a", "a/x.txt"} {
		res, _ := x.call(string(rune('1'+i)), "read_file", `{"path": "`+p+`"}`)
		if res.GetSuccess() || res.GetError().GetCode() != pb.ErrorCode_ERROR_CODE_DENIED ||
			!strings.Contains(res.GetError().GetMessage(), "symbolic links") {
			t.Errorf("read_file %s: %v", p, res)
		}
	}
}
