package sandbox

import "testing"

func TestCommandCgroup(t *testing.T) {
	for _, tc := range []struct{ cg, own, want string }{
		{"/", "/", ""},
		{"/user.slice/toold.service", "/user.slice/toold.service", ""},
		{"/user.slice/toold.service/toold-42-ab12cd34/c7", "/user.slice/toold.service", "/user.slice/toold.service/toold-42-ab12cd34"},
		{"/toold-42-ab12cd34", "/", "/toold-42-ab12cd34"},
		{"/toold-42-ab12cd34/x", "", "/toold-42-ab12cd34"},
		// A toold that is itself another toold's command: its own
		// ancestors' command cgroups do not count.
		{"/toold-1-aa/c1", "/toold-1-aa/c1", ""},
		{"/toold-1-aa/c1/toold-9-bb/c2", "/toold-1-aa/c1", "/toold-1-aa/c1/toold-9-bb"},
		{"/system.slice/docker-abc.scope", "/", ""},
		{"/toold-x-ab", "/", ""},
	} {
		if got := commandCgroup(tc.cg, tc.own); got != tc.want {
			t.Errorf("commandCgroup(%q, %q) = %q, want %q", tc.cg, tc.own, got, tc.want)
		}
	}
}
