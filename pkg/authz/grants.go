package authz

import (
	"github.com/toold/toold/pkg/authz/internal/shellread"
	"path"
	"strings"
	"sync"
	"time"
)

// grantStore holds the grants of all conversations, oldest first. One
// mutex guards it: checking whether grants cover a call and consuming the
// one-time grants used happen under it at once, so two calls cannot both
// use one one-time grant.
type grantStore struct {
	mu     sync.Mutex
	grants []Grant
}

// sweep removes expired grants; the caller holds mu.
func (s *grantStore) sweep(now time.Time) {
	kept := s.grants[:0]
	for _, g := range s.grants {
		if now.Before(g.ExpiresAt) {
			kept = append(kept, g)
		}
	}
	clear(s.grants[len(kept):])
	s.grants = kept
}

func (s *grantStore) add(g Grant, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sweep(now)
	s.grants = append(s.grants, g)
}

func (s *grantStore) list(conv string, now time.Time) []Grant {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sweep(now)
	var out []Grant
	for _, g := range s.grants {
		if conv == "" || g.ConversationID == conv {
			out = append(out, g)
		}
	}
	return out
}

func (s *grantStore) revoke(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, g := range s.grants {
		if g.ID == id {
			s.grants = append(s.grants[:i], s.grants[i+1:]...)
			return true
		}
	}
	return false
}

// cover finds live grants of the conversation for tool and op that cover
// every facet; a grant that lasts is preferred to a one-time grant. It
// returns the grant that covers each facet, or false when some facet is
// not covered. With consume, the one-time grants used are removed.
func (s *grantStore) cover(conv, tool, op, args string, facets []*facet, consume bool, now time.Time) ([]Grant, bool) {
	if conv == "" || len(facets) == 0 {
		return nil, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sweep(now)
	used := make([]Grant, len(facets))
	for i, f := range facets {
		found := false
		for pass := 0; pass < 2 && !found; pass++ {
			for _, g := range s.grants {
				if g.ConversationID != conv || g.Once != (pass == 1) || !g.covers(tool, op, args, f) {
					continue
				}
				used[i], found = g, true
				break
			}
		}
		if !found {
			return nil, false
		}
	}
	if consume {
		for _, g := range used {
			if !g.Once {
				continue
			}
			for j, h := range s.grants {
				if h.ID == g.ID {
					s.grants = append(s.grants[:j], s.grants[j+1:]...)
					break
				}
			}
		}
	}
	return used, true
}

// covers reports whether the grant covers facet f of a call of tool and op
// with the canonical arguments args (Scope.Tool may also be the
// operation's flat name). No grant covers an ask that only a person may
// answer for each call (hard: what cannot be judged, code-running
// environment variables, raised privileges). A grant with a path prefix
// covers paths under it; one with a command prefix covers commands that are
// exactly their words (grantable) and start with it; one bound to exact
// arguments covers only a call with those arguments; one with none of these
// covers every other part of the tool's calls (of its operation, when set).
func (g Grant) covers(tool, op, args string, f *facet) bool {
	sc := g.Scope
	switch {
	case sc.Tool == tool && (sc.Operation == "" || sc.Operation == op):
	case sc.Operation == "" && sc.Tool == op:
		// The operation's own flat name ("write_file" for
		// file_operations.write_file).
	default:
		return false
	}
	if f.hard || (f.kind == facetEnv && sc.Arguments == "") {
		return false
	}
	switch {
	case sc.Arguments != "" && sc.Arguments != args:
		return false
	case sc.PathPrefix != "":
		return f.kind == facetPath && f.loc.Abs != "" && underDir(f.loc.Abs, sc.PathPrefix)
	case sc.CommandPrefix != "":
		return f.kind == facetCommand && f.grantable && wordsHavePrefix(f.words, strings.Fields(sc.CommandPrefix))
	case sc.Host != "":
		return f.kind == facetHost && f.host == sc.Host
	}
	return true
}

// wordsHavePrefix reports whether a command's words start with prefix; the
// command name compares by base name when it is run from a system bin
// directory (/usr/bin/git is git; ./git is not).
func wordsHavePrefix(words, prefix []string) bool {
	if len(words) < len(prefix) || len(prefix) == 0 {
		return false
	}
	for i, p := range prefix {
		w := words[i]
		if i == 0 && strings.Contains(w, "/") && shellread.InSystemBin(w) {
			w = path.Base(w)
		}
		if w != p {
			return false
		}
	}
	return true
}
