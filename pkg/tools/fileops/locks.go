package fileops

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"sync"
)

// pathLocks serializes the calls that change the same paths, and only
// those: calls on unrelated paths run in parallel.
//
// A call locks every path it changes exclusively and every ancestor
// directory of those paths shared, so two calls conflict when they change
// the same path or when one changes a directory (a recursive delete, a
// move) that holds a path the other changes. Keys are absolute paths with
// symlinks resolved (workspace.Location.Abs), so two spellings of one file
// share a lock.
//
// A call takes all its keys at once, in sorted order: every call acquires
// keys in the same global order, so calls cannot deadlock. An ancestor sorts
// before its descendants, and a waiting exclusive locker holds back later
// shared lockers of its key, so a stream of writes below a directory cannot
// starve a delete of it.
//
// Entries are reference counted and removed when no call holds or waits for
// them: the map is as large as the set of paths in use.
type pathLocks struct {
	mu sync.Mutex
	m  map[string]*keyLock
	// held, when set, is called with the paths once a lock holds them all
	// (a test sets it on its own tool to see which calls overlap).
	held func(paths []string)
}

// keyLock is the state of one key. Fields are guarded by pathLocks.mu.
type keyLock struct {
	readers int  // shared holders
	writer  bool // an exclusive holder
	waitW   int  // exclusive lockers waiting
	refs    int  // holders and waiters
	// wake is closed, and replaced, whenever the key is released.
	wake chan struct{}
}

// lockReq is one key a call needs.
type lockReq struct {
	key       string
	exclusive bool
}

// lockSet returns the keys a call needs to change paths (absolute, clean):
// each path exclusive, each ancestor shared, sorted and without duplicates
// (exclusive wins).
func lockSet(paths ...string) []lockReq {
	mode := map[string]bool{}
	for _, p := range paths {
		mode[p] = true
		for d := filepath.Dir(p); ; d = filepath.Dir(d) {
			if _, ok := mode[d]; !ok {
				mode[d] = false
			}
			if d == "/" || d == "." {
				break
			}
		}
	}
	reqs := make([]lockReq, 0, len(mode))
	for k, x := range mode {
		reqs = append(reqs, lockReq{k, x})
	}
	slices.SortFunc(reqs, func(a, b lockReq) int { return comparePaths(a.key, b.key) })
	return reqs
}

// comparePaths orders paths component by component, so that a directory
// sorts right before its descendants ("a" < "a/b" < "a-b").
func comparePaths(a, b string) int {
	return strings.Compare(strings.ReplaceAll(a, "/", "\x00"), strings.ReplaceAll(b, "/", "\x00"))
}

// lock acquires the locks to change paths (absolute, clean). It waits
// until it has them all or ctx is done; then it returns ctx's error and
// holds nothing. The caller calls unlock exactly once.
func (l *pathLocks) lock(ctx context.Context, paths ...string) (unlock func(), err error) {
	reqs := lockSet(paths...)
	for i, r := range reqs {
		if err := l.acquire(ctx, r); err != nil {
			l.release(reqs[:i])
			return nil, err
		}
	}
	if l.held != nil {
		l.held(paths)
	}
	var once sync.Once
	return func() { once.Do(func() { l.release(reqs) }) }, nil
}

func (l *pathLocks) acquire(ctx context.Context, r lockReq) error {
	l.mu.Lock()
	if l.m == nil {
		l.m = map[string]*keyLock{}
	}
	k := l.m[r.key]
	if k == nil {
		k = &keyLock{wake: make(chan struct{})}
		l.m[r.key] = k
	}
	k.refs++
	if r.exclusive {
		k.waitW++
	}
	for {
		if r.exclusive && !k.writer && k.readers == 0 {
			k.waitW--
			k.writer = true
			l.mu.Unlock()
			return nil
		}
		if !r.exclusive && !k.writer && k.waitW == 0 {
			k.readers++
			l.mu.Unlock()
			return nil
		}
		wake := k.wake
		l.mu.Unlock()
		select {
		case <-wake:
			l.mu.Lock()
		case <-ctx.Done():
			l.mu.Lock()
			if r.exclusive {
				k.waitW--
				// Shared lockers may have waited for this writer.
				l.wakeLocked(k)
			}
			l.dropLocked(r.key, k)
			l.mu.Unlock()
			return context.Cause(ctx)
		}
	}
}

func (l *pathLocks) release(reqs []lockReq) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, r := range reqs {
		k := l.m[r.key]
		if r.exclusive {
			k.writer = false
		} else {
			k.readers--
		}
		l.wakeLocked(k)
		l.dropLocked(r.key, k)
	}
}

func (l *pathLocks) wakeLocked(k *keyLock) {
	close(k.wake)
	k.wake = make(chan struct{})
}

func (l *pathLocks) dropLocked(key string, k *keyLock) {
	if k.refs--; k.refs == 0 {
		delete(l.m, key)
	}
}

// size returns the number of keys in use, for tests.
func (l *pathLocks) size() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.m)
}
