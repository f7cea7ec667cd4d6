package authz

import (
	"fmt"
	"path"
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
var unknownWord = Word{Src: "…"}

// runtimeWords returns c's words in layer l with the words only known at
// run time marked; ok is false when none is.
func runtimeWords(c *Command, l []Word, last bool) ([]Word, bool) {
	dyn := false
	out := make([]Word, 0, len(l)+1)
	for _, w := range l {
		switch {
		case !w.Literal:
			dyn = true
		case c.DynArgs && strings.Contains(w.Text, "{}"):
			w = Word{Src: w.Src, Prefix: w.Text[:strings.Index(w.Text, "{}")], Suffix: w.Text[strings.LastIndex(w.Text, "{}")+2:]}
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

// mayMatch reports whether the pattern would match words for some value of
// their run-time words: such a word may be any flag, and may stand for any
// one positional word its literal beginning and end allow (or, when it has
// neither, for any number of words).
func (p *CmdPattern) mayMatch(words []Word, home string) bool {
	if len(words) == 0 || !words[0].Literal || words[0].Glob {
		return false
	}
	name := words[0].Text
	if p.NameSlash {
		if !p.Name.Match(name) && !p.Name.Match(path.Clean(name)) {
			return false
		}
	} else if !p.Name.Match(path.Base(name)) {
		return false
	}
	sh := ShapeOf(words)
	anyFlag := false
	for _, w := range sh.Pos {
		if !w.Literal && (w.Prefix == "" || strings.HasPrefix(w.Prefix, "-")) && w.Suffix == "" {
			anyFlag = true
		}
	}
	for _, alts := range p.Flags {
		if !anyFlag && !sh.HasFlag(alts, true) {
			return false
		}
	}
	return maySeq(p.Pos, sh.Pos, home)
}

// maySeq is matchSeq where run-time words may match.
func maySeq(pats []*WordGlob, ws []Word, home string) bool {
	if len(pats) == 0 {
		return true
	}
	if pats[0] == nil {
		for k := 0; k <= len(ws); k++ {
			if maySeq(pats[1:], ws[k:], home) {
				return true
			}
		}
		return false
	}
	if len(ws) == 0 {
		return false
	}
	w := ws[0]
	if w.Literal {
		return MatchWord(pats[0], w, home) && maySeq(pats[1:], ws[1:], home)
	}
	if w.Prefix == "" && w.Suffix == "" {
		// It may split into any number of words, or none.
		for k := 0; k <= len(pats); k++ {
			if maySeq(pats[k:], ws[1:], home) {
				return true
			}
		}
		return false
	}
	return pats[0].mayMatch(w) && maySeq(pats[1:], ws[1:], home)
}

// mayMatch reports whether the glob could match a word that starts with
// w.prefix and ends with w.suffix.
func (g *WordGlob) mayMatch(w Word) bool {
	if g.Any {
		return true
	}
	for _, alt := range SplitUnescaped(g.Src, '|') {
		pre, suf := globEnds(alt)
		if (strings.HasPrefix(pre, w.Prefix) || strings.HasPrefix(w.Prefix, pre)) &&
			(strings.HasSuffix(suf, w.Suffix) || strings.HasSuffix(w.Suffix, suf)) {
			return true
		}
	}
	return false
}

// globEnds returns the literal text of a glob before its first wildcard and
// after its last one (the whole text when it has none), escapes removed.
func globEnds(alt string) (pre, suf string) {
	var b strings.Builder
	first := true
	for i := 0; i < len(alt); i++ {
		c := alt[i]
		switch {
		case c == '\\' && i+1 < len(alt):
			i++
			b.WriteByte(alt[i])
		case c == '*' || c == '?' || c == '[':
			if first {
				pre, first = b.String(), false
			}
			b.Reset()
			if c == '[' {
				if j := strings.IndexByte(alt[i:], ']'); j > 0 {
					i += j
				}
			}
		default:
			b.WriteByte(c)
		}
	}
	if first {
		return b.String(), b.String()
	}
	return pre, b.String()
}

// mayMatchCommand reports whether a deny or ask rule would match c for some
// value of its run-time words.
func (r *rule) mayMatchCommand(c *Command, home string) bool {
	if !r.pipeMatches(c) {
		return false
	}
	for i, l := range c.Layers {
		ws, dyn := runtimeWords(c, l, i == len(c.Layers)-1)
		if !dyn {
			continue
		}
		for _, p := range r.commands {
			if p.mayMatch(ws, home) {
				return true
			}
		}
	}
	return false
}

// runtimeRule returns the first deny rule, else the first ask rule, that
// would match c for some value of its run-time words.
func (j *judgement) runtimeRule(c *Command) *rule {
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
