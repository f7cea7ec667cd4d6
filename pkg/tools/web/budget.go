package web

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/toold/toold/pkg/errdefs"
)

// DefaultFetchMemory is the default daemon-wide budget for the memory held
// by web fetches in flight (Options.FetchMemory).
const DefaultFetchMemory = 128 << 20

// budgetChunk is how much budget a fetch takes at a time as it reads.
const budgetChunk = 256 << 10

// heldPerByte is the budget a decoded body byte costs while its fetch is in
// flight: the body's buffer (which grows by doubling, so up to twice its
// length) and the text the conversion makes of it.
const heldPerByte = 3

// budget bounds the memory that web fetches in flight hold together: the
// decoded bytes of their bodies, counted as they are read (so a
// decompression bomb is counted by what it expands to, not by what it
// sent), weighted by heldPerByte, and each decoder's window, until the
// page is converted.
//
// A fetch that holds nothing waits for its first share (until its context
// ends). A fetch that holds some and needs more waits too, unless every
// other fetch holding budget is itself waiting for more: then waiting
// could never end, and this fetch fails RESOURCE_EXHAUSTED (releasing what
// it held, so that the others go on). A fetch that needs more than the
// whole budget fails at once. Nothing ever waits for a fetch that waits.
// I wrote this rather than use x/sync/semaphore: a weighted semaphore
// cannot tell that its waiters are deadlocked on one another.
type budget struct {
	mu      sync.Mutex
	total   int64
	used    int64
	holders int           // fetches holding budget
	blocked int           // holders waiting for more
	changed chan struct{} // closed (and replaced) when budget is given back
}

func newBudget(total int64) *budget {
	if total <= 0 {
		total = DefaultFetchMemory
	}
	return &budget{total: total, changed: make(chan struct{})}
}

// Used returns the budget held now.
func (b *budget) Used() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

// take gives n units to a fetch that holds held already, waiting as the
// type's comment says; the error is RESOURCE_EXHAUSTED or the context's.
func (b *budget) take(ctx context.Context, n, held int64) error {
	b.mu.Lock()
	for {
		if held+n > b.total {
			b.mu.Unlock()
			return errdefs.New(errdefs.ErrResourceExhausted,
				"this fetch needs more than toold's whole memory budget for web fetches in flight (%s); ask for less with max_bytes", sizeString(b.total))
		}
		if b.used+n <= b.total {
			b.used += n
			if held == 0 {
				b.holders++
			}
			b.mu.Unlock()
			return nil
		}
		if held > 0 && b.blocked+1 >= b.holders {
			b.mu.Unlock()
			return errdefs.New(errdefs.ErrResourceExhausted,
				"toold's memory budget for web fetches in flight (%s, shared by every fetch) is held by other fetches that wait for more too; retry in a moment, or ask for less with max_bytes", sizeString(b.total))
		}
		ch := b.changed
		if held > 0 {
			b.blocked++
		}
		b.mu.Unlock()
		var err error
		select {
		case <-ch:
		case <-ctx.Done():
			err = ctx.Err()
		}
		b.mu.Lock()
		if held > 0 {
			b.blocked--
		}
		if err != nil {
			b.mu.Unlock()
			return err
		}
	}
}

// give returns a fetch's n units: all it held.
func (b *budget) give(n int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.used -= n
	b.holders--
	close(b.changed)
	b.changed = make(chan struct{})
}

// budgetReader reads r, taking budget for every byte before it is read.
// Release gives back all of it; it is safe to call more than once.
type budgetReader struct {
	ctx    context.Context
	b      *budget
	r      io.Reader
	body   int64 // body bytes read
	window int64 // budget reserved for decoders
	held   int64 // budget taken
	once   sync.Once
}

func (b *budget) reader(ctx context.Context, r io.Reader) *budgetReader {
	return &budgetReader{ctx: ctx, b: b, r: r}
}

// grow takes n more units.
func (br *budgetReader) grow(n int64) error {
	if err := br.b.take(br.ctx, n, br.held); err != nil {
		if errors.Is(err, errdefs.ErrResourceExhausted) {
			return err
		}
		return br.waitFailed(err)
	}
	br.held += n
	return nil
}

func (br *budgetReader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	room := br.held - br.used()
	if room < heldPerByte {
		if err := br.grow(budgetChunk); err != nil {
			return 0, err
		}
		room = br.held - br.used()
	}
	if max := room / heldPerByte; int64(len(p)) > max {
		p = p[:max]
	}
	n, err := br.r.Read(p)
	br.body += int64(n)
	return n, err
}

// used returns the budget the bytes read and the windows reserved take.
func (br *budgetReader) used() int64 { return br.body*heldPerByte + br.window }

// reserve takes n units for a decoder's window before the body is read.
func (br *budgetReader) reserve(n int64) error {
	if err := br.grow(n); err != nil {
		return err
	}
	br.window += n
	return nil
}

// waitFailed explains a wait for budget that ended with the fetch's
// context: at its timeout, the budget was the reason.
func (br *budgetReader) waitFailed(err error) error {
	if errors.Is(context.Cause(br.ctx), errFetchTimeout) {
		return errdefs.Wrap(errdefs.ErrResourceExhausted, err,
			"other web fetches in flight held toold's memory budget for fetches (%s) until this fetch's timeout; retry in a moment", sizeString(br.b.total))
	}
	return err
}

// Release gives the budget back.
func (br *budgetReader) Release() {
	br.once.Do(func() {
		if br.held > 0 {
			br.b.give(br.held)
		}
	})
}

func sizeString(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}
