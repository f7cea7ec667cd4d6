package terminal

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/toold/toold/pkg/tools"
)

// store keeps the output of commands so that it can be read after the call
// that ran them ended (read_output, get_output).
//
// Each command's output is a record: one byte stream, stdout and stderr
// interleaved in the order toold read them. Its bytes spill to a file in
// the store's directory; memory holds only the first and last view bytes
// of a running command (for the result), so a command streaming 100 MB
// keeps the daemon's memory flat.
//
// Bounds, and what happens at them:
//   - perCall: a record keeps at most perCall bytes from its start in its
//     file; beyond that only the last viewBytes are kept (in memory while
//     the command runs, appended to the file when it ends). Reads of the
//     middle say the bytes were not kept.
//   - total: all files together hold at most total bytes. To make room the
//     oldest finished records are evicted (their files deleted); when only
//     running records are left, the writer stops keeping (as at perCall).
//     Reads of an evicted record say it was evicted.
//   - maxRecords: at most this many finished records are kept (so at most
//     as many files, plus one per running command); a new record evicts
//     the oldest finished ones beyond it.
//   - maxAge: a record finished longer ago than this is evicted, when the
//     store is next used (a command starts, output is read, or the daemon
//     asks whether a conversation holds anything).
//   - a conversation's records are all dropped when the daemon forgets the
//     conversation (dropConversation).
//
// Records are keyed by conversation and call id: a conversation reads only
// its own. A later record with the same key replaces the earlier one in the
// index (the earlier stays readable through its process, if any).
type store struct {
	dir        string
	perCall    int64
	total      int64
	viewBytes  int
	maxRecords int
	maxAge     time.Duration

	// clock is time.Now, but for tests of the age bound.
	clock func() time.Time

	mu       sync.Mutex
	seq      int
	used     int64 // bytes in files
	records  map[recordKey]*record
	order    []*record // oldest first
	evicted  map[recordKey]eviction
	evictLog []recordKey // oldest first, bounded by maxEvictions
	// ended counts the records of order that ended (record.counted);
	// endedFloor is at most the oldest endedAt among them (0: none), so
	// that a prune finds out without a walk of order that nothing is
	// beyond the count and age bounds — which it asks at every command's
	// start and end. A walk of 1,000 records took ~20 µs, twice per
	// command (bench/profiles-2026-11-27-outpath.md).
	ended      int
	endedFloor int64
}

// maxEvictions bounds the evictions the store remembers to explain.
const maxEvictions = 4096

type recordKey struct{ conv, callID string }

type eviction struct {
	total int64
	at    time.Time
	why   string // "to keep all kept outputs under 1 GiB"
}

// Defaults of the store's count and age bounds.
const (
	defaultKeepCount = 1000
	defaultKeepAge   = time.Hour
)

func newStore(dir string, perCall, total int64, viewBytes int) (*store, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	return &store{
		dir: dir, perCall: perCall, total: total, viewBytes: viewBytes,
		maxRecords: defaultKeepCount, maxAge: defaultKeepAge, clock: time.Now,
		records: map[recordKey]*record{}, evicted: map[recordKey]eviction{},
	}, nil
}

// record is the kept output of one command. Its writer (the command's
// reader goroutines) calls write and finish; any goroutine may read.
type record struct {
	st      *store
	key     recordKey
	path    string
	command string
	created time.Time
	gone    atomic.Bool // evicted: the file is deleted
	// doneFlag and totalHint mirror done and total for the store, which
	// must not take mu.
	doneFlag  atomic.Bool
	totalHint atomic.Int64
	endedAt   atomic.Int64 // unix nanoseconds; set before doneFlag
	fileMade  atomic.Bool  // set before the file is created
	disk      int64        // bytes in the file; guarded by st.mu
	counted   bool         // counted in st.ended; guarded by st.mu

	mu        sync.Mutex
	f         *os.File // created at the first kept byte; open until finish
	total     int64    // bytes produced
	kept      int64    // bytes [0, kept) are at file offset 0
	stopWhy   string   // why keeping stopped before total, if it did
	head      []byte   // first viewBytes bytes, while running
	tail      *ring    // last viewBytes bytes, while running
	tailFrom  int64    // after finish: stream index of the tail segment (-1: none)
	tailLen   int64
	streams   [4]int64 // bytes per tools.Stream
	done      bool
	outcome   string        // how the command ended, set by finish
	changed   chan struct{} // closed and replaced on every change
	lastWrite time.Time
}

// create starts a record for a command of conversation conv run by call
// callID.
func (s *store) create(conv, callID, command string) *record {
	s.mu.Lock()
	s.seq++
	path := filepath.Join(s.dir, strconv.Itoa(s.seq)+".out")
	s.mu.Unlock()
	r := &record{
		st: s, key: recordKey{conv, callID}, path: path, command: command, created: s.clock(),
		tail: newRing(s.viewBytes), tailFrom: -1,
		changed: make(chan struct{}),
	}
	s.mu.Lock()
	s.records[r.key] = r
	delete(s.evicted, r.key)
	s.order = append(s.order, r)
	s.pruneLocked(s.clock())
	s.mu.Unlock()
	return r
}

// pruneLocked evicts ended records beyond maxRecords (oldest first) and
// those ended longer than maxAge ago.
func (s *store) pruneLocked(now time.Time) {
	expired := func(end int64) bool { return s.maxAge > 0 && now.Sub(time.Unix(0, end)) > s.maxAge }
	if s.ended <= s.maxRecords && (s.endedFloor == 0 || !expired(s.endedFloor)) {
		return
	}
	// Only the count bound: evict the oldest ended records and stop; the
	// floor stays a lower bound (the next prune past it walks).
	walk := expired(s.endedFloor)
	var floor int64
	for i := 0; i < len(s.order) && (walk || s.ended > s.maxRecords); {
		o := s.order[i]
		if !o.counted {
			i++
			continue
		}
		switch end := o.endedAt.Load(); {
		case s.ended > s.maxRecords:
			s.evictLocked(i, fmt.Sprintf("to keep at most %d outputs", s.maxRecords))
		case expired(end):
			s.evictLocked(i, fmt.Sprintf("because outputs are kept for %s", s.maxAge))
		default:
			if floor == 0 || end < floor {
				floor = end
			}
			i++
		}
	}
	if walk {
		s.endedFloor = floor
	}
}

// count adds r, which just ended, to the records the count and age bounds
// apply to, and applies them.
func (s *store) count(r *record) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !r.counted && !r.gone.Load() {
		r.counted = true
		s.ended++
		if end := r.endedAt.Load(); s.endedFloor == 0 || end < s.endedFloor {
			s.endedFloor = end
		}
	}
	s.pruneLocked(s.clock())
}

// holds reports whether conversation conv has kept output.
func (s *store) holds(conv string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pruneLocked(s.clock())
	for _, o := range s.order {
		if o.key.conv == conv {
			return true
		}
	}
	return false
}

// dropConversation deletes every finished record of conv and forgets its
// evictions: nothing of the conversation stays.
func (s *store) dropConversation(conv string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := 0; i < len(s.order); {
		if o := s.order[i]; o.key.conv == conv && o.finished() {
			s.evictLocked(i, "")
			continue
		}
		i++
	}
	for k := range s.evicted {
		if k.conv == conv {
			delete(s.evicted, k)
		}
	}
}

// lookup returns the newest record of conv and callID, or why there is none.
func (s *store) lookup(conv, callID string) (*record, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pruneLocked(s.clock())
	if r, ok := s.records[recordKey{conv, callID}]; ok {
		return r, nil
	}
	if ev, ok := s.evicted[recordKey{conv, callID}]; ok {
		return nil, fmt.Errorf("the output of call %q (%s) was evicted at %s %s; run the command again",
			callID, tools.HumanSize(ev.total), ev.at.Format(time.TimeOnly), ev.why)
	}
	return nil, fmt.Errorf("no kept output for call_id %q in this conversation; read_output reads the output of run_command calls by their call_id", callID)
}

// reserve takes room for n more bytes of r's file from the total budget,
// evicting the oldest finished records when needed. It returns how many
// bytes r may write (less than n when the budget is exhausted).
func (s *store) reserve(r *record, n int64) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r.gone.Load() {
		return 0
	}
	for s.used+n > s.total {
		victim := -1
		for i, o := range s.order {
			if o != r && o.finished() {
				victim = i
				break
			}
		}
		if victim < 0 {
			break
		}
		s.evictLocked(victim, "to keep all kept outputs under "+tools.HumanSize(s.total))
	}
	n = max(0, min(n, s.total-s.used))
	s.used += n
	r.disk += n
	return n
}

// finished reports whether the record's writer is done; it is safe to call
// under s.mu (it does not take r.mu, which may be held by a writer waiting
// for s.mu).
func (r *record) finished() bool { return r.gone.Load() || r.doneFlag.Load() }

// evictLocked deletes the file of the i-th record; why, when not empty,
// is remembered to explain a later read.
func (s *store) evictLocked(i int, why string) {
	r := s.order[i]
	s.order = append(s.order[:i], s.order[i+1:]...)
	r.gone.Store(true)
	if r.counted {
		r.counted = false
		s.ended--
	}
	s.used -= r.disk
	r.disk = 0
	if r.fileMade.Load() {
		_ = syscall.Unlink(r.path) // readers with the file open still read it
	}
	if s.records[r.key] == r {
		delete(s.records, r.key)
		if why == "" {
			return
		}
		s.evicted[r.key] = eviction{total: r.totalHint.Load(), at: time.Now(), why: why}
		s.evictLog = append(s.evictLog, r.key)
		if len(s.evictLog) > maxEvictions {
			delete(s.evicted, s.evictLog[0])
			s.evictLog = s.evictLog[1:]
		}
	}
}

// close deletes every file; the store is not used afterwards.
func (s *store) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for len(s.order) > 0 {
		s.evictLocked(0, "")
	}
}

// write appends p, produced on stream, to the record.
func (r *record) write(stream tools.Stream, p []byte) {
	if len(p) == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.done {
		return
	}
	if room := r.st.viewBytes - len(r.head); room > 0 {
		r.head = append(r.head, p[:min(room, len(p))]...)
	}
	r.tail.write(p)
	if r.kept == r.total && r.stopWhy == "" {
		n := min(int64(len(p)), r.st.perCall-r.kept)
		if n > 0 {
			n = r.st.reserve(r, n)
		}
		if n > 0 {
			if err := r.writeAtLocked(p[:n], r.kept); err != nil {
				r.stopWhy = "a write to toold's output directory failed: " + err.Error()
				n = 0
			}
			r.kept += n
		}
		if n < int64(len(p)) && r.stopWhy == "" {
			switch {
			case r.gone.Load():
				r.stopWhy = "the output was evicted"
			case r.kept >= r.st.perCall:
				r.stopWhy = fmt.Sprintf("over the per-call limit of %s", tools.HumanSize(r.st.perCall))
			default:
				r.stopWhy = fmt.Sprintf("over the limit of %s for all kept outputs", tools.HumanSize(r.st.total))
			}
		}
	}
	r.total += int64(len(p))
	r.totalHint.Store(r.total)
	if int(stream) < len(r.streams) {
		r.streams[stream] += int64(len(p))
	}
	r.lastWrite = time.Now()
	r.notifyLocked()
}

// writeAtLocked writes p at off in the record's file, creating the file at
// its first byte: a command without output (most are short) costs no file.
// Readers open the file only for bytes below kept, so it exists by then.
func (r *record) writeAtLocked(p []byte, off int64) error {
	if r.f == nil {
		r.fileMade.Store(true)
		f, err := os.OpenFile(r.path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
		if err != nil {
			return err
		}
		r.f = f
	}
	_, err := r.f.WriteAt(p, off)
	return err
}

func (r *record) notifyLocked() {
	close(r.changed)
	r.changed = make(chan struct{})
}

// finish ends the record: the tail bytes that did not fit are appended to
// the file, memory is released, and outcome says how the command ended.
func (r *record) finish(outcome string) {
	// Once r counts as finished, the store's count bound applies to it
	// (after r.mu is released: the store evicts without r's lock).
	defer r.st.count(r)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.done {
		return
	}
	if r.total > r.kept && !r.gone.Load() {
		start := max(r.kept, r.tail.start())
		seg := r.tail.read(start, int(r.total-start))
		if n := r.st.reserve(r, int64(len(seg))); n == int64(len(seg)) {
			if err := r.writeAtLocked(seg, r.kept); err == nil {
				r.tailFrom, r.tailLen = start, int64(len(seg))
			}
		}
	}
	if r.f != nil {
		r.f.Close()
	}
	r.f, r.head, r.tail = nil, nil, nil
	r.done = true
	r.endedAt.Store(r.st.clock().UnixNano())
	r.doneFlag.Store(true)
	r.outcome = outcome
	r.notifyLocked()
}

// snapshot is what a reader needs of a record, taken under its lock.
type snapshot struct {
	total, kept        int64
	tailFrom, tailLen  int64 // a segment after kept, in the file or memory
	tailMem            []byte
	done, gone         bool
	stopWhy, outcome   string
	stdout, stderr     int64
	lastWrite, created time.Time
}

func (r *record) snap() snapshot {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := snapshot{
		total: r.total, kept: r.kept, tailFrom: -1, done: r.done, gone: r.gone.Load(),
		stopWhy: r.stopWhy, outcome: r.outcome, lastWrite: r.lastWrite, created: r.created,
		stdout: r.streams[tools.Stdout], stderr: r.streams[tools.Stderr],
	}
	switch {
	case r.done && r.tailFrom >= 0:
		s.tailFrom, s.tailLen = r.tailFrom, r.tailLen
	case !r.done && r.total > r.kept:
		start := max(r.kept, r.tail.start())
		s.tailMem = r.tail.read(start, int(r.total-start))
		s.tailFrom, s.tailLen = start, int64(len(s.tailMem))
	}
	return s
}

// chunk is what a read returns.
type chunk struct {
	data []byte
	// from is the index of data[0]; next the index after it.
	from, next int64
	// gapFrom, gapTo delimit bytes that were asked for but not kept.
	gapFrom, gapTo int64
	gapWhy         string
}

// read returns up to limit bytes of the stream from index from. Bytes that
// were not kept are skipped and reported as a gap.
func (r *record) read(from int64, limit int) chunk {
	s := r.snap()
	return s.read(r.path, from, limit)
}

func (s snapshot) read(path string, from int64, limit int) chunk {
	c := chunk{from: from, next: from}
	if from >= s.total || limit <= 0 {
		c.from, c.next = min(from, s.total), min(from, s.total)
		return c
	}
	type seg struct {
		from, to int64
		fileOff  int64 // -1: in memory
		mem      []byte
	}
	var segs []seg
	if !s.gone {
		segs = append(segs, seg{0, s.kept, 0, nil})
		if s.tailFrom >= 0 {
			if s.tailMem != nil {
				segs = append(segs, seg{s.tailFrom, s.tailFrom + s.tailLen, -1, s.tailMem})
			} else {
				segs = append(segs, seg{s.tailFrom, s.tailFrom + s.tailLen, s.kept, nil})
			}
		}
	} else if s.tailMem != nil {
		segs = append(segs, seg{s.tailFrom, s.tailFrom + s.tailLen, -1, s.tailMem})
	}
	for _, sg := range segs {
		if sg.to <= from || sg.to == sg.from {
			continue
		}
		start := from
		if sg.from > from {
			c.gapFrom, c.gapTo, c.gapWhy = from, sg.from, s.gapReason()
			start = sg.from
		}
		n := min(int64(limit), sg.to-start)
		if sg.fileOff < 0 {
			c.data = append([]byte(nil), sg.mem[start-sg.from:start-sg.from+n]...)
		} else {
			buf := make([]byte, n)
			f, err := os.Open(path)
			if err != nil {
				c.gapFrom, c.gapTo, c.gapWhy = from, s.total, "the output was evicted"
				c.next = s.total
				return c
			}
			m, _ := f.ReadAt(buf, sg.fileOff+start-sg.from)
			f.Close()
			c.data = buf[:m]
			n = int64(m)
		}
		c.from, c.next = start, start+n
		return c
	}
	c.gapFrom, c.gapTo, c.gapWhy = from, s.total, s.gapReason()
	c.from, c.next = s.total, s.total
	return c
}

func (s snapshot) gapReason() string {
	switch {
	case s.gone:
		return "evicted to keep all kept outputs under the configured total"
	case s.stopWhy != "":
		return "not kept: " + s.stopWhy
	}
	return "not kept"
}

// view returns the first and last bytes of the stream for a result.
func (r *record) view(limit int) (head, tail []byte, total int64) {
	r.mu.Lock()
	if !r.done {
		head = append([]byte(nil), r.head...)
		tail = r.tail.read(r.tail.start(), int(r.total-r.tail.start()))
		total = r.total
		r.mu.Unlock()
		return head, tail, total
	}
	r.mu.Unlock()
	s := r.snap()
	h := s.read(r.path, 0, limit)
	if h.from == 0 {
		head = h.data
	}
	t := s.read(r.path, max(0, s.total-int64(limit)), limit)
	if t.next == s.total {
		tail = t.data
	}
	return head, tail, s.total
}

// wait blocks until the stream has bytes after index after, the record is
// finished, ctx ends, or d passes. It reports whether new bytes arrived.
func (r *record) wait(ctx context.Context, after int64, d time.Duration) bool {
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		r.mu.Lock()
		if r.total > after {
			r.mu.Unlock()
			return true
		}
		if r.done {
			r.mu.Unlock()
			return false
		}
		ch := r.changed
		r.mu.Unlock()
		select {
		case <-ch:
		case <-timer.C:
			return false
		case <-ctx.Done():
			return false
		}
	}
}

// match is one line found by grep.
type match struct {
	line   int   // 1-based line number; 0 when unknown (after a gap)
	offset int64 // index of the line's first byte
	text   string
}

// grep finds lines matching re in the kept output, at most max of them. It
// returns the matches, how many lines matched in all, and whether parts of
// the output could not be searched (not kept).
func (r *record) grep(ctx context.Context, re *regexp.Regexp, maxMatches, lineChars int) (ms []match, total int, partial bool, err error) {
	s := r.snap()
	var from int64
	line := 1
	for from < s.total {
		if err := ctx.Err(); err != nil {
			return ms, total, partial, err
		}
		c := s.read(r.path, from, 1<<20)
		if c.gapTo > c.gapFrom {
			partial = true
			line = 0
		}
		if len(c.data) == 0 {
			break
		}
		// Scan whole lines; a line cut by the chunk end is read again with
		// the next chunk, unless the chunk is a single over-long line.
		data := c.data
		if c.next < s.total {
			if i := bytes.LastIndexByte(data, '\n'); i >= 0 {
				data = data[:i+1]
			}
		}
		off := c.from
		for len(data) > 0 {
			b := data
			n := len(data)
			if i := bytes.IndexByte(data, '\n'); i >= 0 {
				b, n = data[:i], i+1
			}
			data = data[n:]
			if re.Match(b) {
				total++
				if len(ms) < maxMatches {
					text := cleanText(b)
					if utf8.RuneCountInString(text) > lineChars {
						text = string([]rune(text)[:lineChars]) + " …"
					}
					ms = append(ms, match{line: line, offset: off, text: text})
				}
			}
			off += int64(n)
			if line > 0 {
				line++
			}
		}
		from = off
	}
	return ms, total, partial, nil
}
