package terminal

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"

	"github.com/toold/toold/pkg/errdefs"
)

// DefaultPassEnv names the variables of toold's environment that commands
// inherit when Config.PassEnv is nil. Nothing else of toold's environment
// (tokens, credentials: TOOLD_TOKEN, cloud keys) reaches a command.
var DefaultPassEnv = []string{"PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LC_ALL", "LC_CTYPE", "LC_MESSAGES", "TZ", "TMPDIR"}

// baseEnv builds the environment every command starts from: the passed
// variables of toold's environment, sane defaults for PATH, HOME and LANG,
// then the configured extras.
func baseEnv(pass []string, extra map[string]string) map[string]string {
	if pass == nil {
		pass = DefaultPassEnv
	}
	env := map[string]string{}
	for _, k := range pass {
		if strings.HasPrefix(k, "TOOLD_") {
			continue // toold's own settings (its token) never reach commands
		}
		if v, ok := os.LookupEnv(k); ok {
			env[k] = v
		}
	}
	if env["PATH"] == "" {
		env["PATH"] = "/usr/local/bin:/usr/bin:/bin"
	}
	if env["HOME"] == "" {
		if h, err := os.UserHomeDir(); err == nil {
			env["HOME"] = h
		}
	}
	if env["LANG"] == "" && env["LC_ALL"] == "" {
		env["LANG"] = "C.UTF-8"
	}
	for k, v := range extra {
		env[k] = v
	}
	return env
}

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// checkEnv validates a call's env argument.
func checkEnv(env map[string]string) error {
	for k, v := range env {
		if !envName.MatchString(k) {
			return errdefs.Invalid("/env/"+k, "propertyNames", "environment variable name %q is not valid: use letters, digits and _, not starting with a digit", k)
		}
		if strings.IndexByte(v, 0) >= 0 {
			return errdefs.Invalid("/env/"+k, "pattern", "the value of environment variable %s contains a NUL byte", k)
		}
	}
	return nil
}

// environ merges layers (later ones win) into a sorted KEY=VALUE list.
func environ(layers ...map[string]string) []string {
	m := map[string]string{}
	for _, l := range layers {
		for k, v := range l {
			m[k] = v
		}
	}
	out := make([]string, 0, len(m))
	for k, v := range m {
		out = append(out, fmt.Sprintf("%s=%s", k, v))
	}
	slices.Sort(out)
	return out
}
