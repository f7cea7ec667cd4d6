package authz

import (
	"regexp"
	"strings"
)

// bashGlob compiles one path component of a bash glob (*, ?, [...] with !
// or ^ negation, a leading ] taken literally, POSIX classes such as
// [[:alpha:]], backslash escapes) to a regular expression; ok is false for
// a pattern the judge cannot match exactly (equivalence classes [[=e=]],
// collating symbols [[.e.]], or one that does not compile), which then
// cannot be judged. Go's filepath.Match reads [!x] and [[:alpha:]]
// differently from bash, so it is not used for what bash expands.
func bashGlob(pat string) (*regexp.Regexp, bool) {
	var b strings.Builder
	b.WriteString("^")
	for i := 0; i < len(pat); i++ {
		c := pat[i]
		switch c {
		case '\\':
			if i+1 < len(pat) {
				i++
				b.WriteString(regexp.QuoteMeta(pat[i : i+1]))
			} else {
				b.WriteString(`\\`)
			}
		case '*':
			b.WriteString(`[^/]*`)
		case '?':
			b.WriteString(`[^/]`)
		case '[':
			end, class, ok := bracket(pat, i)
			if !ok {
				return nil, false
			}
			if end < 0 {
				b.WriteString(`\[`)
				continue
			}
			b.WriteString(class)
			i = end
		default:
			b.WriteString(regexp.QuoteMeta(pat[i : i+1]))
		}
	}
	b.WriteString("$")
	re, err := regexp.Compile(b.String())
	return re, err == nil
}

// bracket reads the bracket expression that starts at pat[i] == '['. It
// returns the index of its closing ], the expression as a regular
// expression class, and ok false when the judge cannot match it. end is -1
// when the [ has no closing ] (bash then matches it literally).
func bracket(pat string, i int) (end int, class string, ok bool) {
	var b strings.Builder
	b.WriteByte('[')
	j := i + 1
	if j < len(pat) && (pat[j] == '!' || pat[j] == '^') {
		b.WriteByte('^')
		j++
	}
	first := true
	for ; j < len(pat); j++ {
		c := pat[j]
		switch {
		case c == ']' && !first:
			b.WriteByte(']')
			return j, b.String(), true
		case c == '[' && j+1 < len(pat) && (pat[j+1] == ':' || pat[j+1] == '=' || pat[j+1] == '.'):
			kind := pat[j+1]
			k := strings.Index(pat[j+2:], string(kind)+"]")
			if k < 0 {
				return -1, "", true
			}
			if kind != ':' {
				return 0, "", false
			}
			b.WriteString(pat[j : j+2+k+2])
			j += 2 + k + 1
		case c == '\\' && j+1 < len(pat):
			j++
			b.WriteString(regexp.QuoteMeta(pat[j : j+1]))
		case c == '\\' || c == '[' || c == '^' || c == ']':
			b.WriteByte('\\')
			b.WriteByte(c)
		default:
			b.WriteByte(c)
		}
		first = false
	}
	return -1, "", true
}

// globMatch reports whether name matches the bash glob component pat; ok
// is false when the pattern cannot be judged.
func globMatch(pat, name string) (matched, ok bool) {
	re, ok := bashGlob(pat)
	if !ok {
		return false, false
	}
	return re.MatchString(name), true
}
