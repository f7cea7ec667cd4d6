package authz

import (
	"sync"

	"github.com/toold/toold/pkg/authz/internal/shellread"
)

// Reading a command line (shellread.ParseLine: mvdan.cc/sh's parse, the walk
// of its tree, unwrapping and the checks of each command) is a third of the
// judge's time for a short line, and agents run the same lines again and
// again. The parse depends only on the line, the engine's home (fixed when
// the engine is made) and whether the line is typed into a terminal, so it
// is kept by exactly those: nothing the policy, the grants, the containment
// or the file system say enters it, and a policy reload, which makes a new
// Engine, starts with an empty cache. What depends on them (the
// directories a line runs in, globs, the rules) is judged on every call from
// a clone of the kept parse, which the judge may change
// (shellread.ParsedLine.Clone).

const (
	// lineCacheSize bounds the lines kept; when full, an arbitrary one
	// is dropped for the new one.
	lineCacheSize = 256
	// lineCacheMaxLen bounds the length of a line that is kept: long
	// lines are rarely repeated and their parse is large.
	lineCacheMaxLen = 2048
)

type lineKey struct {
	line        string
	interactive bool
}

// lineCache keeps parsed command lines; safe for concurrent use.
type lineCache struct {
	mu    sync.Mutex
	lines map[lineKey]*shellread.ParsedLine
}

// parse returns line parsed as shellread.ParseLine(line, home,
// interactive) does, as a copy of its own.
func (c *lineCache) parse(line, home string, interactive bool) *shellread.ParsedLine {
	if len(line) > lineCacheMaxLen {
		return shellread.ParseLine(line, home, interactive)
	}
	k := lineKey{line, interactive}
	c.mu.Lock()
	pl, ok := c.lines[k]
	c.mu.Unlock()
	if !ok {
		pl = shellread.ParseLine(line, home, interactive)
		c.mu.Lock()
		if c.lines == nil {
			c.lines = make(map[lineKey]*shellread.ParsedLine, lineCacheSize)
		}
		if len(c.lines) >= lineCacheSize {
			for old := range c.lines {
				delete(c.lines, old)
				break
			}
		}
		c.lines[k] = pl
		c.mu.Unlock()
	}
	return pl.Clone()
}
