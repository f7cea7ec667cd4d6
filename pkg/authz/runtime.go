package authz

import (
	"fmt"
	"github.com/toold/toold/pkg/authz/internal/shellread"
	"strings"
)

// Values known only at run time. A rule that denies "rm -rf /" must also
// hold for "rm -rf $(echo /)", "rm -rf ${x:-/}" and "echo / | xargs rm -rf":
// toold cannot know those values, so a command that a deny or ask rule
// would match for some value of its run-time words asks in every mode, and
// no grant covers it.

// ruleDynamicTarget names that decision.
const ruleDynamicTarget = "builtin:dynamic-target"

// unknownWord stands for words a wrapper adds when the command runs (xargs
// appends its input; find -exec replaces {}).
var unknownWord = shellread.Word{Src: "…"}

// runtimeWords returns c's words in layer l with the words only known at
// run time marked; ok is false when none is.
func runtimeWords(c *shellread.Command, l []shellread.Word, last bool) ([]shellread.Word, bool) {
	dyn := false
	out := make([]shellread.Word, 0, len(l)+1)
	for _, w := range l {
		switch {
		case !w.Literal:
			dyn = true
		case c.DynArgs && strings.Contains(w.Text, "{}"):
			w = shellread.Word{Src: w.Src, Prefix: w.Text[:strings.Index(w.Text, "{}")], Suffix: w.Text[strings.LastIndex(w.Text, "{}")+2:]}
			dyn = true
		}
		out = append(out, w)
	}
	if c.DynArgs && last {
		out = append(out, unknownWord)
		dyn = true
	}
	return out, dyn
}

// mayMatchCommand reports whether a deny or ask rule would match c for some
// value of its run-time words.
func (r *rule) mayMatchCommand(c *shellread.Command, home string) bool {
	if !r.pipeMatches(c) {
		return false
	}
	for i, l := range c.Layers {
		ws, dyn := runtimeWords(c, l, i == len(c.Layers)-1)
		if !dyn {
			continue
		}
		for _, p := range r.commands {
			if p.MayMatch(ws, home) {
				return true
			}
		}
	}
	return false
}

// runtimeRule returns the first deny rule, else the first ask rule, that
// would match c for some value of its run-time words.
func (j *judgement) runtimeRule(c *shellread.Command) *rule {
	var ask *rule
	for _, r := range j.e.rules {
		if r.kind() != kindCommand || r.decision == Allow || !r.callMatches(j.req.Tool, j.req.Operation, j.req.Args) {
			continue
		}
		if !r.mayMatchCommand(c, j.e.home) {
			continue
		}
		if r.decision == Deny {
			return r
		}
		if ask == nil {
			ask = r
		}
	}
	return ask
}

// runtimeReason explains a run-time match of r.
func runtimeReason(r *rule) string {
	what := "would be denied"
	if r.decision == Ask {
		what = "would need approval"
	}
	why := r.reason
	if why == "" {
		why = "rule " + r.name
	}
	return fmt.Sprintf("it %s by rule %s (%s) for some value it takes only when it runs, so a person must approve it in every mode", what, r.name, why)
}
