package terminal_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/toold/toold/pkg/tools/terminal"
)

// A command's environment, built once per Manager when the call has no
// extra variables, is still what each call must see: calls with and
// without extras run at once (a call that exported, or a caller that
// appended to the cached list, would show in the others), the operator's
// variables and the daemon's secrets scrubbed, and a Manager of another
// configuration sees its own.
func TestCommandEnvNotShared(t *testing.T) {
	t.Setenv("TOOLD_TOKEN", "daemon-secret")
	t.Setenv("SOME_API_KEY", "daemon-secret")
	e := newEnv(t, func(c *terminal.Config) { c.Env["OPERATOR_VAR"] = "op" })
	const cmd = `echo "[${CALL_VAR-}][$OPERATOR_VAR][$TERM][${TOOLD_TOKEN-}${SOME_API_KEY-}]"; export CALL_VAR=exported OPERATOR_VAR=exported`
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			args := map[string]any{"command": cmd}
			want := "[][op][dumb][]"
			if i%2 == 0 {
				args["env"] = map[string]any{"CALL_VAR": fmt.Sprint("call-", i), "OPERATOR_VAR": fmt.Sprint("override-", i)}
				want = fmt.Sprintf("[call-%d][override-%d][dumb][]", i, i)
			}
			res, err := e.call(nil, "conv", fmt.Sprint("c", i), "run_command", args, nil)
			if err != nil {
				t.Error(err)
				return
			}
			if !strings.Contains(res.Text, want) || strings.Contains(res.Text, "daemon-secret") {
				t.Errorf("call %d: %q, want %s", i, res.Text, want)
			}
		})
	}
	wg.Wait()
	if res := e.must("conv", "run_command", map[string]any{"command": cmd}); !strings.Contains(res.Text, "[][op][dumb][]") {
		t.Errorf("after the calls: %q", res.Text)
	}
	other := newEnv(t, func(c *terminal.Config) { c.Env["OPERATOR_VAR"] = "other" })
	if res := other.must("conv", "run_command", map[string]any{"command": cmd}); !strings.Contains(res.Text, "[][other][dumb][]") {
		t.Errorf("another Manager: %q", res.Text)
	}
}
