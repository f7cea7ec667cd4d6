package fileops

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/tools"

	"github.com/toold/toold/pkg/testenv"
)

func TestLockSet(t *testing.T) {
	got := lockSet("/w/b", "/w/a/x", "/w/a-b", "/w/a")
	want := []lockReq{{"/", false}, {"/w", false}, {"/w/a", true}, {"/w/a/x", true}, {"/w/a-b", true}, {"/w/b", true}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("lockSet = %v, want %v", got, want)
	}
}

// TestLocksSamePathSerialized checks that calls changing one file hold it
// one at a time.
func TestLocksSamePathSerialized(t *testing.T) {
	f, _ := newTool(t, tools.Limits{}, nil)
	var inside, most atomic.Int32
	f.locks.held = func([]string) {
		n := inside.Add(1)
		for {
			m := most.Load()
			if n <= m || most.CompareAndSwap(m, n) {
				break
			}
		}
		time.Sleep(2 * time.Millisecond)
		inside.Add(-1)
	}
	defer func() { f.locks.held = nil }()
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			// Two spellings of one path share the lock.
			p := "same.txt"
			if i%2 == 1 {
				p = "./sub/../same.txt"
			}
			if _, err := run(t, f, "write_file", jsonArgs(t, map[string]any{"path": p, "content": fmt.Sprint(i)})); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if most.Load() != 1 {
		t.Errorf("%d calls held the same path at once", most.Load())
	}
	if n := f.locks.size(); n != 0 {
		t.Errorf("%d lock entries left", n)
	}
}

// TestLocksDifferentPathsParallel checks that calls on different files
// run at the same time: each waits inside its lock for the other.
func TestLocksDifferentPathsParallel(t *testing.T) {
	f, dir := newTool(t, tools.Limits{}, map[string]string{"d/": ""})
	var arrived sync.WaitGroup
	arrived.Add(2)
	both := make(chan struct{})
	go func() { arrived.Wait(); close(both) }()
	f.locks.held = func([]string) {
		arrived.Done()
		select {
		case <-both:
		case <-time.After(5 * time.Second):
			t.Error("the calls did not overlap: writes of different files were serialized")
		}
	}
	defer func() { f.locks.held = nil }()
	var wg sync.WaitGroup
	for _, p := range []string{"d/one.txt", "d/two.txt"} {
		wg.Go(func() {
			if _, err := run(t, f, "write_file", jsonArgs(t, map[string]any{"path": p, "content": p})); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	for _, p := range []string{"d/one.txt", "d/two.txt"} {
		if readFile(t, filepath.Join(dir, p)) != p {
			t.Errorf("%s not written", p)
		}
	}
}

// TestLocksDirectoryHoldsBelow checks that a call changing a directory
// (a recursive delete, a move) excludes calls below it.
func TestLocksDirectoryHoldsBelow(t *testing.T) {
	f, dir := newTool(t, tools.Limits{}, map[string]string{"d/x": "x"})
	unlock, err := f.locks.lock(context.Background(), filepath.Join(f.ws.Dir(), "d"))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := run(t, f, "write_file", `{"path":"d/y","content":"y"}`)
		done <- err
	}()
	// The write waits on the directory's key, held by us: a holder and a
	// waiter.
	d := filepath.Join(f.ws.Dir(), "d")
	waitFor(t, func() bool { return f.locks.refs(d) == 2 })
	select {
	case err := <-done:
		t.Fatalf("a write below a locked directory did not wait (err %v)", err)
	default:
	}
	unlock()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if readFile(t, filepath.Join(dir, "d/y")) != "y" {
		t.Error("not written")
	}
}

// TestLocksWriterNotStarved checks that a waiting exclusive locker holds
// back new shared lockers of its key.
func TestLocksWriterNotStarved(t *testing.T) {
	var l pathLocks
	ctx := context.Background()
	unlockBelow, _ := l.lock(ctx, "/w/d/a") // holds /w/d shared
	var order []string
	var mu sync.Mutex
	record := func(s string) { mu.Lock(); order = append(order, s); mu.Unlock() }
	dirDone := make(chan struct{})
	go func() {
		unlock, _ := l.lock(ctx, "/w/d") // waits for /w/d/a
		record("dir")
		unlock()
		close(dirDone)
	}()
	waitFor(t, func() bool { l.mu.Lock(); defer l.mu.Unlock(); return l.m["/w/d"] != nil && l.m["/w/d"].waitW == 1 })
	belowDone := make(chan struct{})
	go func() {
		unlock, _ := l.lock(ctx, "/w/d/b") // must queue behind the directory
		record("below")
		unlock()
		close(belowDone)
	}()
	// "below" waits too: /w/d has its holder and two waiters.
	waitFor(t, func() bool { return l.refs("/w/d") == 3 })
	unlockBelow()
	<-dirDone
	<-belowDone
	if fmt.Sprint(order) != "[dir below]" {
		t.Errorf("order = %v, want the directory first", order)
	}
	if l.size() != 0 {
		t.Errorf("%d entries left", l.size())
	}
}

func TestLocksCanceledWhileWaiting(t *testing.T) {
	f, _ := newTool(t, tools.Limits{}, nil)
	unlock, err := f.locks.lock(context.Background(), filepath.Join(f.ws.Dir(), "busy.txt"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	_, err = runCtx(ctx, t, f, "write_file", `{"path":"busy.txt","content":"x"}`, nil)
	wantErr(t, err, errdefs.ErrTimeout, "write_file timed out")
	unlock()
	if n := f.locks.size(); n != 0 {
		t.Errorf("%d lock entries left", n)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	testenv.Poll(t, 5*time.Second, "the condition", cond)
}

// refs returns the holders and waiters of key.
func (l *pathLocks) refs(key string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if k := l.m[key]; k != nil {
		return k.refs
	}
	return 0
}
