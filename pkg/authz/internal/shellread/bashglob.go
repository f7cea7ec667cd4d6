package shellread

import (
	"regexp"

	"mvdan.cc/sh/v3/pattern"
)

// BashGlob compiles one path component of a bash glob (*, ?, [...] with !
// or ^ negation, a leading ] taken literally, POSIX classes such as
// [[:alpha:]], backslash escapes) to a regular expression with
// mvdan.cc/sh's pattern package, which reads them as bash does (Go's
// filepath.Match reads [!x] and [[:alpha:]] differently). ok is false for a
// pattern it cannot translate (equivalence classes [[=e=]], collating
// symbols [[.e.]]): that pattern cannot be judged.
func BashGlob(pat string) (*regexp.Regexp, bool) {
	expr, err := pattern.Regexp(pat, pattern.Filenames|pattern.EntireString)
	if err != nil {
		return nil, false
	}
	re, err := regexp.Compile(expr)
	return re, err == nil
}

// GlobMatch reports whether name matches the bash glob component pat; ok
// is false when the pattern cannot be judged.
func GlobMatch(pat, name string) (matched, ok bool) {
	re, ok := BashGlob(pat)
	if !ok {
		return false, false
	}
	return re.MatchString(name), true
}
