package authz

import (
	_ "embed"
	"fmt"
	"path/filepath"
	"sync"
)

// Containment says which layers of the kernel sandbox hold for the command
// lines toold runs on a model's behalf (run_command, terminal sessions and
// what is typed into them, tasks): the sandbox the daemon found in force,
// as it reports it to clients. The zero value is "no sandbox": the judge is
// then the boundary, as before the sandbox existed.
//
// Where every layer holds, the judge stops asking about what the kernel
// contains anyway. A command line whose text cannot be followed (a program
// run with code given on the command line, a script written and run by the
// same line, arguments only known at run time, a directory only known at
// run time, variables that make programs load code, keys typed into a
// terminal) runs without asking in AUTO and YOLO: whatever it does, it
// writes only in the workspace and the writable directories, reads no
// secret and reaches the network only through the egress proxy. What the
// judge still does is in docs/policy.md ("What the judge does").
type Containment struct {
	// Writes: a command writes, creates and deletes only in the workspace,
	// in Writable and in its private temp directory.
	Writes bool
	// Reads: a command cannot read the sensitive paths (keys, credentials,
	// .env files, toold's state), which the kernel masks.
	Reads bool
	// Network: a command reaches the network only through toold's egress
	// proxy, which judges each host (no UDP, no raw sockets, no other TCP).
	Network bool
	// Writable are absolute directories outside the workspace that a
	// command may write in (its temp directory, operator-named caches).
	Writable []string
}

// Full reports whether every layer holds.
func (c Containment) Full() bool { return c.Writes && c.Reads && c.Network }

// writable reports whether abs is in a writable directory.
func (c Containment) writable(abs string) bool {
	for _, d := range c.Writable {
		if underDir(abs, d) {
			return true
		}
	}
	return false
}

// cleanWritable makes the writable directories absolute and clean, with
// their symlinks resolved as well.
func (c Containment) cleanWritable() (Containment, error) {
	var out []string
	for _, d := range c.Writable {
		if !filepath.IsAbs(d) {
			return c, fmt.Errorf("containment: writable directory %q must be absolute", d)
		}
		d = filepath.Clean(d)
		out = append(out, d)
		if real, err := filepath.EvalSymlinks(d); err == nil && real != d {
			out = append(out, real)
		}
	}
	c.Writable = out
	return c, nil
}

//go:embed classes.yaml
var classesYAML []byte

// dangerClasses returns the judge's dangerous classes (classes.yaml):
// commands AUTO asks about although the sandbox runs them, because their
// effect is beyond what a sandbox on this machine can hold or undo.
var dangerClasses = sync.OnceValue(func() []*rule {
	p, err := parsePolicy(classesYAML, "yaml", "builtin", "builtin:")
	if err != nil {
		panic(fmt.Sprintf("authz: dangerous classes: %v", err))
	}
	for _, r := range p.rules {
		if r.decision != Ask || r.kind() != kindCommand {
			panic(fmt.Sprintf("authz: dangerous class %s must be an ask rule on commands", r.name))
		}
	}
	return p.rules
})
