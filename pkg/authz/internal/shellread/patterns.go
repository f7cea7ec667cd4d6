package shellread

import (
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"
)

// Patterns of the policy file: word globs (tools, hosts, command words)
// and command patterns; path patterns are in pathpatterns.go.

// WordGlob matches one word: * any run of characters (including /), ? one
// character, [abc] a class, \x a literal x, and | separates alternatives.
type WordGlob struct {
	Src string
	re  *regexp.Regexp
	// lits are the alternatives when all are plain ASCII words (most of the
	// policy's: "git", "rm|rmdir"), matched by comparison, and re is nil: a
	// regexp per word was ~0.3 MB of toold's idle heap (issue 27).
	lits []string
	// Any reports an alternative "*", which also matches a word only
	// known at run time.
	Any bool
}

func CompileWordGlob(s string) (*WordGlob, error) {
	if s == "" {
		return nil, fmt.Errorf("empty pattern")
	}
	g := &WordGlob{Src: s}
	if lits := SplitUnescaped(s, '|'); allLiteral(lits) {
		g.lits = lits
		return g, nil
	}
	var alts []string
	for _, alt := range SplitUnescaped(s, '|') {
		if alt == "*" {
			g.Any = true
		}
		re, err := globRegexp(alt)
		if err != nil {
			return nil, fmt.Errorf("pattern %q: %w", s, err)
		}
		alts = append(alts, re)
	}
	re, err := regexp.Compile("^(?:" + strings.Join(alts, "|") + ")$")
	if err != nil {
		return nil, fmt.Errorf("pattern %q: %w", s, err)
	}
	g.re = re
	return g, nil
}

func (g *WordGlob) Match(s string) bool {
	if g.re == nil {
		return slices.Contains(g.lits, s)
	}
	return g.re.MatchString(s)
}

// allLiteral reports whether every alternative is printable ASCII with none
// of the glob's special characters, so that matching it is comparing with
// it (the regexp would quote each byte and match exactly that).
func allLiteral(alts []string) bool {
	for _, a := range alts {
		for i := 0; i < len(a); i++ {
			if c := a[i]; c < 0x20 || c >= 0x7f || strings.IndexByte(`*?[\|`, c) >= 0 {
				return false
			}
		}
	}
	return true
}

// SplitUnescaped splits s at sep characters not preceded by a backslash.
func SplitUnescaped(s string, sep byte) []string {
	var out []string
	start := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case sep:
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}

// globRegexp translates one glob alternative to a regular expression.
func globRegexp(g string) (string, error) {
	var sb strings.Builder
	for i := 0; i < len(g); i++ {
		c := g[i]
		switch c {
		case '*':
			sb.WriteString(".*")
		case '?':
			sb.WriteString(".")
		case '\\':
			if i+1 < len(g) {
				i++
				sb.WriteString(regexp.QuoteMeta(g[i : i+1]))
			} else {
				sb.WriteString(`\\`)
			}
		case '[':
			j := strings.IndexByte(g[i+1:], ']')
			if j < 0 {
				return "", fmt.Errorf("unterminated [")
			}
			class := g[i+1 : i+1+j]
			if class == "" {
				return "", fmt.Errorf("empty []")
			}
			if class[0] == '!' {
				class = "^" + class[1:]
			}
			sb.WriteString("[" + strings.ReplaceAll(class, `\`, `\\`) + "]")
			i += j + 1
		default:
			sb.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	return sb.String(), nil
}

// CmdPattern matches a simple command. Its first word matches the command
// name (its base name, unless the pattern word has a /). A word starting
// with - is a flag the command must have anywhere before "--": -rf is
// satisfied by -rf, -fr or -r -f; --force by --force or --force=x;
// alternatives separated by | (-r|-R|--recursive). The other words match
// the command's other words (its positional words) in order, as a prefix:
// "git push" matches "git push origin main". A word ** matches any number
// of words: "rm -r ** /" matches "rm -r a b /".
type CmdPattern struct {
	Src       string
	Name      *WordGlob
	NameSlash bool
	Flags     [][]string // alternatives per required flag
	Pos       []*WordGlob
}

// splitPatternWords splits a command pattern into words at unquoted
// spaces. Quotes group words; what they quote is literal (glob characters
// are escaped). Backslashes outside quotes are kept for the glob.
func splitPatternWords(s string) ([]string, error) {
	var out []string
	var sb strings.Builder
	in := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\' && i+1 < len(s):
			sb.WriteByte(c)
			sb.WriteByte(s[i+1])
			i++
			in = true
		case c == '\'' || c == '"':
			j := strings.IndexByte(s[i+1:], c)
			if j < 0 {
				return nil, fmt.Errorf("unterminated quote")
			}
			for _, q := range []byte(s[i+1 : i+1+j]) {
				if strings.IndexByte(`*?[]\|`, q) >= 0 {
					sb.WriteByte('\\')
				}
				sb.WriteByte(q)
			}
			i += j + 1
			in = true
		case c == ' ' || c == '\t' || c == '\n':
			if in {
				out = append(out, sb.String())
				sb.Reset()
				in = false
			}
		default:
			sb.WriteByte(c)
			in = true
		}
	}
	if in {
		out = append(out, sb.String())
	}
	return out, nil
}

func CompileCmdPattern(s string) (*CmdPattern, error) {
	words, err := splitPatternWords(s)
	if err != nil {
		return nil, fmt.Errorf("command pattern %q: %w", s, err)
	}
	if len(words) == 0 {
		return nil, fmt.Errorf("empty command pattern")
	}
	p := &CmdPattern{Src: s}
	if strings.HasPrefix(words[0], "-") || words[0] == "**" {
		return nil, fmt.Errorf("command pattern %q must start with the command name", s)
	}
	if p.Name, err = CompileWordGlob(words[0]); err != nil {
		return nil, fmt.Errorf("command pattern %q: %w", s, err)
	}
	p.NameSlash = strings.Contains(words[0], "/")
	for _, w := range words[1:] {
		switch {
		case w == "**":
			p.Pos = append(p.Pos, nil)
		case len(w) > 1 && w[0] == '-':
			alts := SplitUnescaped(w, '|')
			for _, a := range alts {
				if len(a) < 2 || a[0] != '-' || a == "--" {
					return nil, fmt.Errorf("command pattern %q: flag %q: every alternative must be a flag such as -r or --recursive", s, w)
				}
			}
			p.Flags = append(p.Flags, alts)
		default:
			g, err := CompileWordGlob(w)
			if err != nil {
				return nil, fmt.Errorf("command pattern %q: %w", s, err)
			}
			p.Pos = append(p.Pos, g)
		}
	}
	return p, nil
}

func mustCmdPattern(s string) *CmdPattern {
	p, err := CompileCmdPattern(s)
	if err != nil {
		panic(err)
	}
	return p
}

// systemBinDirs hold programs that a command name with a / may name and
// still match a rule written for the bare name (/usr/bin/git is git).
var systemBinDirs = []string{"/bin", "/sbin", "/usr/bin", "/usr/sbin", "/usr/local/bin", "/usr/local/sbin"}

func InSystemBin(name string) bool {
	d := path.Dir(path.Clean(name))
	for _, s := range systemBinDirs {
		if d == s {
			return true
		}
	}
	return false
}

// Shape is a command's words sorted into flags and positional words.
type Shape struct {
	longs   []string // --name (value dropped)
	singles []string // -abc as written
	letters map[byte]bool
	Pos     []Word
}

func ShapeOf(words []Word) Shape {
	s := Shape{letters: map[byte]bool{}}
	dashdash := false
	for _, w := range words[1:] {
		if !dashdash && w.Literal {
			t := w.Text
			if t == "--" {
				dashdash = true
				continue
			}
			if strings.HasPrefix(t, "--") {
				name, _, _ := strings.Cut(t, "=")
				s.longs = append(s.longs, name)
				continue
			}
			if len(t) > 1 && t[0] == '-' {
				s.singles = append(s.singles, t)
				for i := 1; i < len(t); i++ {
					s.letters[t[i]] = true
				}
				continue
			}
		}
		s.Pos = append(s.Pos, w)
	}
	return s
}

// Match reports whether the pattern matches words (a command after
// unwrapping). strictName refuses to Match a command run by a path outside
// the system's bin directories by its base name: an allow rule for "ls"
// does not allow ./ls or /tmp/x/ls.
func (p *CmdPattern) Match(words []Word, strictName bool, home string) bool {
	if len(words) == 0 || !words[0].Literal || words[0].Glob {
		return false
	}
	name := words[0].Text
	if p.NameSlash {
		if !p.Name.Match(name) && !p.Name.Match(path.Clean(name)) {
			return false
		}
	} else {
		if strictName && strings.Contains(name, "/") && !InSystemBin(name) {
			return false
		}
		if !p.Name.Match(path.Base(name)) {
			return false
		}
	}
	sh := ShapeOf(words)
	for _, alts := range p.Flags {
		// Deny and ask rules (and the checks for options that run
		// programs) also match abbreviations of long options, which
		// getopt_long, git and npm accept (--to-comm for --to-command), and
		// Go's --flag for -flag; allow rules match only what is written.
		if !sh.HasFlag(alts, !strictName) {
			return false
		}
	}
	return matchSeq(p.Pos, sh.Pos, home)
}

// HasFlag reports whether the command has one of the flags alts; with
// abbrev, a long option matches when it is a prefix of a long alternative
// (--exp for --expression), and --name matches the Go-style flag -name.
func (s Shape) HasFlag(alts []string, abbrev bool) bool {
	for _, a := range alts {
		if strings.HasPrefix(a, "--") {
			for _, l := range s.longs {
				if l == a || (abbrev && len(l) > 2 && strings.HasPrefix(a, l)) {
					return true
				}
			}
			continue
		}
		if abbrev {
			// Go's flag package takes --name for -name.
			for _, l := range s.longs {
				if l == "-"+a {
					return true
				}
			}
		}
		for _, w := range s.singles {
			if w == a || strings.HasPrefix(w, a+"=") {
				return true
			}
		}
		all := true
		for i := 1; i < len(a); i++ {
			if !s.letters[a[i]] {
				all = false
				break
			}
		}
		if all {
			return true
		}
	}
	return false
}

// matchSeq matches positional patterns (nil is **) against words, as a
// prefix.
func matchSeq(pats []*WordGlob, ws []Word, home string) bool {
	if len(pats) == 0 {
		return true
	}
	if pats[0] == nil {
		for k := 0; k <= len(ws); k++ {
			if matchSeq(pats[1:], ws[k:], home) {
				return true
			}
		}
		return false
	}
	if len(ws) == 0 || !MatchWord(pats[0], ws[0], home) {
		return false
	}
	return matchSeq(pats[1:], ws[1:], home)
}

// MatchWord matches one command word: as written, as a clean path, and
// with the home directory written as ~. A word only known at run time
// matches only *.
func MatchWord(g *WordGlob, w Word, home string) bool {
	if !w.Literal {
		return g.Any
	}
	for _, c := range wordForms(w.Text, home) {
		if g.Match(c) {
			return true
		}
	}
	return false
}

func wordForms(t, home string) []string {
	forms := []string{t}
	if strings.Contains(t, "/") || strings.HasPrefix(t, ".") {
		if c := path.Clean(t); c != t {
			forms = append(forms, c)
		}
	}
	if home != "" {
		for _, f := range forms {
			if rest, ok := CutDir(path.Clean(f), home); ok {
				if rest == "." {
					forms = append(forms, "~")
				} else {
					forms = append(forms, "~/"+rest)
				}
			}
		}
	}
	return forms
}

// CutDir returns p relative to dir when p is dir or below it.
func CutDir(p, dir string) (string, bool) {
	if dir == "" {
		return "", false
	}
	if p == dir {
		return ".", true
	}
	if dir == "/" {
		return strings.TrimPrefix(p, "/"), true
	}
	if strings.HasPrefix(p, dir+"/") {
		return p[len(dir)+1:], true
	}
	return "", false
}

// MayMatch reports whether the pattern would match words for some value of
// their run-time words: such a word may be any flag, and may stand for any
// one positional word its literal beginning and end allow (or, when it has
// neither, for any number of words).
func (p *CmdPattern) MayMatch(words []Word, home string) bool {
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
	return pats[0].MayMatch(w) && maySeq(pats[1:], ws[1:], home)
}

// MayMatch reports whether the glob could match a word that starts with
// w.prefix and ends with w.suffix.
func (g *WordGlob) MayMatch(w Word) bool {
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
