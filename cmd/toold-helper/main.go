// Command toold-helper is toold's command helper as a small binary of its
// own: the process that supervises (and, with the sandbox, confines) each
// command, background process and terminal session toold runs. See
// pkg/sandbox.
//
// toold works without it, re-executing itself in its helper mode; but toold
// is a large program whose start costs milliseconds per command, while this
// one starts in about one. toold uses a toold-helper found next to its own
// executable (make build puts both in ./bin), or the one configured as
// terminal.helper. It is not meant to be run by hand.
package main

import (
	"os"

	"github.com/toold/toold/pkg/sandbox"
)

func main() {
	os.Exit(sandbox.HelperMain())
}
