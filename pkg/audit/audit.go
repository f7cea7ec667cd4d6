// Package audit is toold's tamper-evident audit log: an append-only chain
// of JSON lines in which every record carries the SHA-256 of the record
// before it, so that editing, removing, reordering or truncating records is
// found by Verify, which names the first record affected.
//
// # Files
//
// The log lives in one directory: audit-00000001.jsonl, audit-00000002.jsonl
// and so on, each at most Config.MaxFileBytes (a record is never split), and
// audit.head, which holds the sequence number and hash of the last record
// known to be on disk. The chain runs on across files: the first record of a
// file carries the hash of the last record of the file before. Sequence
// numbers start at 1 and increase by one across files. A record's hash is
// the SHA-256 of its line, without the newline, exactly as written.
//
// # Durability
//
// Append writes each record to the file before it returns, and concurrent
// Appends share one write(2): while one appender writes, the others queue
// their lines, and the next write takes every line queued (group write).
// The log fsyncs in batches too (group commit): at most Config.SyncEvery
// records (default 4096) are ever written but not yet fsynced — an Append that
// would exceed it waits for the sync — and none stays unsynced longer than
// Config.SyncInterval (default 100ms). So:
//
//   - a crash of toold alone (SIGKILL, a panic, OOM kill) loses no record whose
//     Append returned: the bytes are in the kernel's page cache. At most the
//     record being written when the process died is torn (a line with no
//     newline); Open cuts it off and appends an "audit.recovered" record
//     saying how many bytes it dropped.
//   - a crash of the machine (power loss, kernel panic) loses at most the last
//     SyncEvery records, and at most SyncInterval's worth.
//
// Enqueue chains a record without waiting for its write (the next write
// takes it, or the log's writer within SyncInterval): a crash of toold
// loses the enqueued records not yet written, and a failed write counts
// them in the next audit.recovered record. AppendAll appends several
// records with one write. The executor enqueues a call's end and appends
// its allow decision and start together.
//
// AppendSync waits for the fsync as well; use it for a record that must not
// be lost to a power cut (it costs one fsync, shared by every record
// written meanwhile).
//
// The head file is rewritten after each fsync of the log. It lets Verify find
// records cut from the end of the log (which the chain alone cannot show); a
// head behind the log is normal after a crash, a head ahead of it is not.
package audit

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/toold/toold/pkg/errdefs"
)

// Record kinds written by toold.
const (
	KindDecision   = "decision"   // policy decided a call: Decision, Rule
	KindApproval   = "approval"   // a person answered: Who, Scope, Decision
	KindGrant      = "grant"      // a grant was made: Scope, Detail
	KindRevocation = "revocation" // a grant was revoked
	KindCallStart  = "call.start" // a call began running: ArgsDigest
	KindCallEnd    = "call.end"   // a call ended: Outcome, Code, ResultDigest, ExitCode
	KindHook       = "hook"       // a pre/post hook ran: Detail, Decision
	// KindOutsideSandbox: a person answered a request to run one call's
	// command outside toold's sandbox: Decision, Who, ArgsDigest (of the
	// exact command, directory and environment shown), Detail (the
	// command, the directory and the environment's names).
	KindOutsideSandbox = "approval.outside_sandbox"
	// KindPeerRefused: a client was refused because it is one of toold's
	// own commands' processes (or cannot be told from one): Detail says why.
	KindPeerRefused = "peer.refused"
	// KindRecovered: the log repaired itself — a torn last line cut off at
	// Open, or records that could not be written (a full disk) before this
	// one: Detail says how many, when, and why.
	KindRecovered = "audit.recovered"
	// KindPruned: retention removed the oldest files; PrunedThrough and
	// PrunedHash name the last record removed (the first record kept
	// carries that hash as its prev), Detail what was removed and why.
	KindPruned = "audit.pruned"
)

// GenesisHash is the prev hash of the first record of a log.
const GenesisHash = "0000000000000000000000000000000000000000000000000000000000000000"

// Record is one line of the log. Seq, Time and Prev are set by Append; the
// rest by the caller. Arguments and results are never written, only their
// digests (Digest), so the log holds no secret a call carried.
type Record struct {
	Seq          uint64    `json:"seq"`
	Time         time.Time `json:"time"`
	Kind         string    `json:"kind"`
	Conversation string    `json:"conversation,omitempty"`
	CallID       string    `json:"call_id,omitempty"`
	Tool         string    `json:"tool,omitempty"`
	Operation    string    `json:"operation,omitempty"`
	// Decision is allow, deny or ask (decision, hook), approve or deny
	// (approval).
	Decision string `json:"decision,omitempty"`
	// Rule is the policy rule that decided, if any.
	Rule string `json:"rule,omitempty"`
	// Who answered an approval (the client name of the stream).
	Who string `json:"who,omitempty"`
	// Scope of an approval or grant: once, conversation, rule.
	Scope        string `json:"scope,omitempty"`
	GrantID      string `json:"grant_id,omitempty"`
	ArgsDigest   string `json:"args_digest,omitempty"`
	ResultDigest string `json:"result_digest,omitempty"`
	ExitCode     *int   `json:"exit_code,omitempty"`
	// Outcome of a call: success, error.
	Outcome string `json:"outcome,omitempty"`
	// Code is the result's error code, if any.
	Code   string `json:"code,omitempty"`
	Detail string `json:"detail,omitempty"`
	// PrunedThrough and PrunedHash (audit.pruned) are the sequence number
	// and hash of the last record retention removed.
	PrunedThrough uint64 `json:"pruned_through,omitempty"`
	PrunedHash    string `json:"pruned_hash,omitempty"`
	// Prev is the hex SHA-256 of the previous record's line.
	Prev string `json:"prev"`
}

// Digest returns "sha256:" and the hex SHA-256 of b, for ArgsDigest and
// ResultDigest.
func Digest(b []byte) string {
	s := sha256.Sum256(b)
	var d [len("sha256:") + 2*sha256.Size]byte
	copy(d[:], "sha256:")
	hex.Encode(d[len("sha256:"):], s[:])
	return string(d[:]) // one allocation (the concatenation made two)
}

// ResultDigest returns the ResultDigest of a call's result: Digest of the
// JSON of its text and JSON document,
//
//	json.Marshal(struct {
//		Text string          `json:"text"`
//		JSON json.RawMessage `json:"json,omitempty"`
//	}{text, raw})
//
// A result without a JSON document is quoted by appendJSONString (which
// quotes as json.Marshal does) into a pooled buffer, without the
// reflection, the growing buffer and the copy json.Marshal makes; one
// with a document goes through json.Marshal, which also compacts it.
// TestResultDigestIsMarshal and FuzzResultDigest compare the two.
func ResultDigest(text string, raw json.RawMessage) string {
	if len(raw) > 0 {
		b, _ := json.Marshal(struct {
			Text string          `json:"text"`
			JSON json.RawMessage `json:"json,omitempty"`
		}{text, raw})
		return Digest(b)
	}
	bp := digestBufs.Get().(*[]byte)
	b := append((*bp)[:0], `{"text":`...)
	b = appendJSONString(b, text)
	b = append(b, '}')
	d := Digest(b)
	if cap(b) <= 1<<20 { // a rare huge result's buffer is not kept
		*bp = b
		digestBufs.Put(bp)
	}
	return d
}

// digestBufs hold ResultDigest's JSON buffers.
var digestBufs = sync.Pool{New: func() any { b := make([]byte, 0, 8<<10); return &b }}

// Config configures a Log.
type Config struct {
	// Dir holds the log's files; it is created (0700) if missing.
	Dir string
	// MaxFileBytes starts a new file once the current one would grow past
	// it (default 64 MiB).
	MaxFileBytes int64
	// SyncEvery bounds the records written but not yet fsynced (default
	// 64): what a machine crash can lose.
	SyncEvery int
	// SyncInterval bounds how long a record stays unsynced (default 100ms).
	SyncInterval time.Duration
	// MaxTotalBytes, when positive, bounds the log's files together:
	// the oldest files are removed (never the one being written) until the
	// rest fit. See Prune.
	MaxTotalBytes int64
	// MaxAge, when positive, removes files whose last record is older
	// (by the file's modification time). See Prune.
	MaxAge time.Duration
	// Now returns the time (tests); nil means time.Now.
	Now func() time.Time
}

func (c Config) withDefaults() Config {
	if c.MaxFileBytes <= 0 {
		c.MaxFileBytes = 64 << 20
	}
	if c.SyncEvery <= 0 {
		c.SyncEvery = 4096
	}
	if c.SyncInterval <= 0 {
		c.SyncInterval = 100 * time.Millisecond
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// ErrClosed is returned by Append after Close.
var ErrClosed = errors.New("audit log is closed")

// Log is an open audit log. It is safe for concurrent use; records are
// chained in the order their Appends took the lock.
//
// A log that cannot write (a full disk, an I/O error) is not broken for
// good: the Append that failed, and every Append whose record was queued
// with it, return an error of class errdefs.ErrUnavailable, the file is cut
// back to its last whole record (no torn line is left while toold runs),
// and the next Append tries again. The first record written after such a
// failure is preceded by an "audit.recovered" record saying how many
// records were lost, when, and why.
type Log struct {
	cfg Config

	mu     sync.Mutex
	cond   *sync.Cond // signaled when written or synced advance, a write fails, or the log closes
	f      *os.File
	fileNo int
	size   int64   // of the file: whole records only, unless bad
	seq    uint64  // last chained (queued or written)
	hash   hexHash // of the last chained record
	// queued are the lines of records chained but not yet written; the
	// appender that found no write in progress writes them (writing), in
	// batches, and the others wait for written to pass their seq.
	queued      []byte
	spare       []byte
	writing     bool
	written     uint64  // last written
	writtenHash hexHash // of the last written record
	synced      uint64  // last fsynced (and named by the head file)
	closed      bool
	kick        chan struct{}
	// kickWrite wakes the syncer to write what Enqueue queued, without an
	// fsync (that waits for the interval or for SyncEvery).
	kickWrite chan struct{}
	done      chan struct{}

	// epoch counts failed writes: a waiting appender wakes when it moves.
	epoch uint64
	// ticket numbers every queued line and is never given twice (a failed
	// write gives sequence numbers again); writtenTicket is the last line
	// written. A failed write that ends epoch e writes nothing past
	// writtenTicket and drops every line queued: endTicket[e] keeps
	// writtenTicket at that moment for the appenders of epoch e (waiting[e]
	// counts those still waiting; the entry goes with the last, or at the
	// next failure when none waits). An
	// appender's record was written exactly when its ticket is at most
	// writtenTicket in its epoch, or endTicket of its epoch once it ended.
	ticket, writtenTicket uint64
	endTicket             map[uint64]uint64
	waiting               map[uint64]int
	// bad: a failed write may have left bytes past size that could not be
	// cut off yet; the next append cuts them before writing.
	bad bool
	// failErr is the last failure to write, until a write succeeds again;
	// lost counts the records refused since failedAt. epochErr is the
	// error of the last failed write (what the appenders of its epoch get).
	failErr  error
	failedAt time.Time
	lost     int
	epochErr error
	// recoverySeq is the sequence number of the queued audit.recovered
	// record (0: none); failErr clears once it is written.
	recoverySeq uint64
	// syncErr is the last failure to fsync or to write the head, until a
	// sync succeeds again.
	syncErr error
	// pruneKick asks the pruner to apply the retention (after a
	// rotation); stopPrune ends it, pruneDone says it ended.
	pruneKick  chan struct{}
	stopPrune  chan struct{}
	pruneDone  chan struct{}
	pruneMu    sync.Mutex // one Prune at a time
	stopPruner sync.Once
	// headMu orders the writes of audit.head; headSeq is the seq it names.
	headMu  sync.Mutex
	headSeq uint64
}

// Open opens the log in cfg.Dir, creating it if needed, and continues its
// chain. A torn last line (a crash mid-write) is cut off and an
// "audit.recovered" record says so. Open does not verify the whole chain;
// call Verify for that. With a retention configured, Open starts applying
// it (in the background).
func Open(cfg Config) (*Log, error) {
	cfg = cfg.withDefaults()
	if cfg.Dir == "" {
		return nil, errors.New("audit: no directory configured")
	}
	if err := os.MkdirAll(cfg.Dir, 0o700); err != nil {
		return nil, err
	}
	l := &Log{cfg: cfg, hash: genesis, kick: make(chan struct{}, 1), kickWrite: make(chan struct{}, 1), done: make(chan struct{}),
		pruneKick: make(chan struct{}, 1), stopPrune: make(chan struct{}), pruneDone: make(chan struct{})}
	l.cond = sync.NewCond(&l.mu)
	files, err := listFiles(cfg.Dir)
	if err != nil {
		return nil, err
	}
	var torn int64
	if len(files) == 0 {
		l.fileNo = 1
	} else {
		last := files[len(files)-1]
		l.fileNo = last.no
		if torn, err = l.recover(last.path); err != nil {
			return nil, err
		}
		if l.seq == 0 && len(files) > 1 {
			// The last file is empty (a crash right after rotating): the
			// chain continues from the file before.
			if _, err := l.recover(files[len(files)-2].path); err != nil {
				return nil, err
			}
		}
	}
	l.f, err = os.OpenFile(fileName(cfg.Dir, l.fileNo), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	fi, err := l.f.Stat()
	if err != nil {
		l.f.Close()
		return nil, err
	}
	l.size = fi.Size()
	l.synced, l.written, l.writtenHash = l.seq, l.seq, l.hash
	go l.syncer()
	go l.pruner()
	if torn > 0 {
		if _, err := l.AppendSync(Record{Kind: KindRecovered, Detail: fmt.Sprintf("cut off a torn last line of %d bytes (toold stopped mid-write)", torn)}); err != nil {
			l.Close()
			return nil, err
		}
	}
	l.pruneKick <- struct{}{} // the retention, at once (the channel is empty)
	return l, nil
}

// recover reads the last complete record of path into l.seq and l.hash and
// truncates a torn tail; it returns the bytes cut.
func (l *Log) recover(path string) (int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	good := bytes.LastIndexByte(b, '\n') + 1
	torn := int64(len(b) - good)
	if torn > 0 {
		if err := os.Truncate(path, int64(good)); err != nil {
			return 0, err
		}
	}
	b = b[:good]
	if len(b) == 0 {
		return torn, nil
	}
	line := b[bytes.LastIndexByte(b[:len(b)-1], '\n')+1 : len(b)-1]
	var r Record
	if err := json.Unmarshal(line, &r); err != nil {
		return 0, fmt.Errorf("audit: last record of %s does not decode (run toolctl audit verify): %w", path, err)
	}
	l.seq, l.hash = r.Seq, hashOf(line)
	return torn, nil
}

// Append adds r to the log and returns it with Seq, Time and Prev set. The
// record is written (survives a crash of toold) when Append returns; see
// the package comment for when it is fsynced. When the record cannot be
// written the error is of class errdefs.ErrUnavailable and nothing of it
// is in the file; the next Append tries again.
func (l *Log) Append(r Record) (Record, error) {
	return l.append(r, false)
}

// AppendSync is Append that also waits for the record to be fsynced.
func (l *Log) AppendSync(r Record) (Record, error) {
	return l.append(r, true)
}

// unavailable is the error of an append that could not be recorded
// because of err.
func (l *Log) unavailable(err error) error {
	return errdefs.Wrap(errdefs.ErrUnavailable, err,
		"the audit log cannot record (%s), so toold runs no call unrecorded; the operator must free space for it (the next call tries again)", cause(err))
}

// cause is err's message with the paths of *os.PathErrors left out.
func cause(err error) string {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return strings.Replace(err.Error(), pe.Error(), pe.Op+" "+filepath.Base(pe.Path)+": "+pe.Err.Error(), 1)
	}
	return err.Error()
}

func (l *Log) append(r Record, wait bool) (Record, error) {
	body, err := recordBody(r)
	if err != nil {
		return Record{}, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	r, p, err := l.chainLocked(r, body)
	if err != nil {
		return Record{}, err
	}
	r.Prev = p.prev.String()
	if !l.writing {
		l.writeQueuedLocked()
	}
	if err := l.awaitLocked(p); err != nil {
		return Record{}, err
	}
	if l.seq-l.synced >= uint64(l.cfg.SyncEvery) || wait {
		l.kickSync()
	}
	for wait && l.synced < r.Seq && !l.closed {
		if l.syncErr != nil {
			return Record{}, l.unavailable(l.syncErr)
		}
		l.cond.Wait()
	}
	if wait && l.synced < r.Seq {
		return Record{}, ErrClosed
	}
	return r, nil
}

// AppendAll is Append of several records, chained one after the other
// (another appender's records may come between them) and written together,
// in one write(2) when nothing else is being written. It returns once every
// one of them is written, or with the error of the first that could not be
// (class errdefs.ErrUnavailable, or ErrClosed); then the records before it
// may be in the log, and the log's next audit.recovered record counts the
// ones that are not.
//
// The executor writes a call's allow decision and its call.start with one
// AppendAll: one write on the call's path instead of two, and the call runs
// only once both are written.
func (l *Log) AppendAll(rs ...Record) error {
	bodies := make([][]byte, len(rs))
	for i, r := range rs {
		var err error
		if bodies[i], err = recordBody(r); err != nil {
			return err
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	ps := make([]pending, 0, len(rs))
	var err error
	for i, r := range rs {
		var p pending
		if _, p, err = l.chainLocked(r, bodies[i]); err != nil {
			break
		}
		// Held, so that a failed write while the next record is chained
		// keeps what this one's epoch wrote for awaitLocked.
		l.holdLocked(&p)
		ps = append(ps, p)
	}
	if len(ps) > 0 && !l.writing {
		l.writeQueuedLocked()
	}
	for _, p := range ps {
		if werr := l.awaitLocked(p); werr != nil && err == nil {
			err = werr
		}
	}
	if len(ps) > 0 && l.seq-l.synced >= uint64(l.cfg.SyncEvery) {
		l.kickSync()
	}
	return err
}

// Enqueue chains r like Append but does not wait for its write: the record
// goes to the file with the next write — another appender's, or the log's
// own within Config.SyncInterval (at once when much is queued) — and Close
// writes what is queued. It is for a record whose loss changes nothing
// that already happened: the executor's call.end, written after the call's
// End went to the client. The error is Append's when the record cannot be
// chained (the log is closed, or cannot sync); a record that is chained
// but whose write fails (a full disk) is counted in the next audit.recovered
// record, and the Appends that follow fail as Append says until the log can
// write again. A crash of toold loses what is enqueued and not yet written
// (at most SyncInterval's worth).
func (l *Log) Enqueue(r Record) error {
	return l.EnqueueAll(r)
}

// EnqueueAll is Enqueue of several records, chained one after the other
// under one hold of the log's lock (another appender's records may still
// come between them): the executor queues an ended call's records — its
// end, and an effect-free call's decision and start before it — with one.
// It returns the error of the first record that could not be chained; the
// ones before it are queued.
func (l *Log) EnqueueAll(rs ...Record) error {
	var one [1][]byte
	bodies := one[:0]
	if len(rs) > 1 {
		bodies = make([][]byte, 0, len(rs))
	}
	for _, r := range rs {
		body, err := recordBody(r)
		if err != nil {
			return err
		}
		bodies = append(bodies, body)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, r := range rs {
		if _, _, err := l.chainLocked(r, bodies[i]); err != nil {
			return err
		}
	}
	if len(l.queued) >= enqueueKick && !l.writing {
		// A write, not a sync: waking the syncer for both made it fsync
		// and rewrite the head every enqueueKick bytes (about every 70
		// calls at full speed, not every SyncInterval), the head's
		// rewrite more CPU than the fsync (bench/profiles-2026-11-28-acct.md).
		select {
		case l.kickWrite <- struct{}{}:
		default:
		}
	}
	return nil
}

// Flush writes what Enqueue queued before it and returns once it is in
// the file (not yet fsynced): a reader of the log's files — Tail, Verify,
// Export — then finds every record chained before the Flush. A record a
// failed write dropped is not waited for (it is counted in the next
// audit.recovered record).
func (l *Log) Flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	epoch, ticket := l.epoch, l.ticket
	for l.writtenTicket < ticket && l.epoch == epoch && !l.closed {
		if l.writing {
			l.cond.Wait()
			continue
		}
		if len(l.queued) == 0 || l.f == nil || (l.bad && l.repair() != nil) {
			return
		}
		l.writeQueuedLocked()
	}
}

// enqueueKick is how many queued bytes make Enqueue wake the log's writer
// rather than leave them to the next write.
const enqueueKick = 64 << 10

// pending is a chained record's place: its ticket in its epoch; held when
// it is counted in waiting[epoch].
type pending struct {
	ticket, epoch uint64
	held          bool
	// prev is the record's Prev (set in the Record only where it is
	// returned: a string per record is an allocation).
	prev hexHash
}

// chainLocked chains r to the last record and queues its line, waiting
// first while SyncEvery records are unsynced and rotating when the file is
// full (l.mu held; it may be released meanwhile). body is recordBody(r).
// It returns r with Seq and Time set, and its prev in the pending.
func (l *Log) chainLocked(r Record, body []byte) (Record, pending, error) {
	var line []byte
	for {
		for !l.closed && l.syncErr == nil && l.seq-l.synced >= uint64(l.cfg.SyncEvery) {
			l.kickSync()
			l.cond.Wait()
		}
		if l.closed {
			return Record{}, pending{}, ErrClosed
		}
		if l.seq-l.synced >= uint64(l.cfg.SyncEvery) {
			// The syncer cannot sync: refuse rather than keep more
			// records unsynced than promised. It retries every interval.
			return Record{}, pending{}, l.refuse(l.syncErr)
		}
		if l.bad && !l.writing {
			if err := l.repair(); err != nil {
				return Record{}, pending{}, l.refuse(err)
			}
		}
		if l.failErr != nil && l.recoverySeq == 0 {
			// The first record after a failure says what was lost.
			rec := Record{Kind: KindRecovered, Seq: l.seq + 1, Time: l.cfg.Now().UTC(), Prev: l.hash.String(),
				Detail: fmt.Sprintf("%d records could not be written between %s and %s: %s",
					l.lost, l.failedAt.Format(time.RFC3339Nano), l.cfg.Now().UTC().Format(time.RFC3339Nano), cause(l.failErr))}
			b, err := json.Marshal(rec)
			if err != nil {
				return Record{}, pending{}, err
			}
			l.seq, l.hash, l.recoverySeq = rec.Seq, hashOf(b), rec.Seq
			l.queued = append(append(l.queued, b...), '\n')
			l.ticket++
		}
		// The record is chained to the last one now, after any wait. Its
		// line is made in the queue itself (no buffer per record), and
		// taken back out when it does not fit the file.
		r.Seq = l.seq + 1
		r.Time = l.cfg.Now().UTC()
		start := len(l.queued)
		l.queued = appendLinePrev(l.queued, r, body, l.hash[:])
		line = l.queued[start:]
		size := l.size + int64(start)
		if size == 0 || size+int64(len(line))+1 <= l.cfg.MaxFileBytes {
			break
		}
		l.queued = l.queued[:start]
		// The file is full: everything chained before goes to it first,
		// then the next file starts, and the record is chained again.
		if l.writing {
			l.cond.Wait()
			continue
		}
		if len(l.queued) > 0 {
			l.writeQueuedLocked()
			continue
		}
		if err := l.rotate(); err != nil {
			return Record{}, pending{}, l.refuse(err)
		}
	}
	prev := l.hash
	l.seq, l.hash = r.Seq, hashOf(line)
	l.queued = append(l.queued, '\n')
	l.ticket++
	return r, pending{ticket: l.ticket, epoch: l.epoch, prev: prev}, nil
}

// recordBody is r's JSON without seq, time and prev, made before the log's
// lock is taken: appenders encode in parallel, and the lock is held only
// to chain (appendLine). It was most of the time the lock was held, and
// the lock was all of the contention of 64 concurrent calls
// (bench/profiles-2026-11-27.md).
//
// It is written out field by field rather than by json.Marshal, whose
// reflection was a third of a no-op call's accounting (three records a
// call; bench/profiles-2026-11-27-sendpath.md); the bytes are exactly
// json.Marshal's (TestLineIsJSONMarshal fills every field of Record, so a
// field added to Record and not here fails it).
func recordBody(r Record) ([]byte, error) {
	// Room for every field with its value unescaped, so that the body is
	// made in one allocation (192 bytes were outgrown by a call end's two
	// digests: the body was made twice).
	n := fieldLen("kind", r.Kind, true) + fieldLen("conversation", r.Conversation, false) + fieldLen("call_id", r.CallID, false) +
		fieldLen("tool", r.Tool, false) + fieldLen("operation", r.Operation, false) + fieldLen("decision", r.Decision, false) +
		fieldLen("rule", r.Rule, false) + fieldLen("who", r.Who, false) + fieldLen("scope", r.Scope, false) +
		fieldLen("grant_id", r.GrantID, false) + fieldLen("args_digest", r.ArgsDigest, false) +
		fieldLen("result_digest", r.ResultDigest, false) + fieldLen("outcome", r.Outcome, false) +
		fieldLen("code", r.Code, false) + fieldLen("detail", r.Detail, false) + fieldLen("pruned_hash", r.PrunedHash, false)
	if r.ExitCode != nil {
		n += len(`"exit_code":,`) + 20
	}
	if r.PrunedThrough != 0 {
		n += len(`"pruned_through":,`) + 20
	}
	b := make([]byte, 0, n)
	b = appendStringField(b, "kind", r.Kind, true)
	b = appendStringField(b, "conversation", r.Conversation, false)
	b = appendStringField(b, "call_id", r.CallID, false)
	b = appendStringField(b, "tool", r.Tool, false)
	b = appendStringField(b, "operation", r.Operation, false)
	b = appendStringField(b, "decision", r.Decision, false)
	b = appendStringField(b, "rule", r.Rule, false)
	b = appendStringField(b, "who", r.Who, false)
	b = appendStringField(b, "scope", r.Scope, false)
	b = appendStringField(b, "grant_id", r.GrantID, false)
	b = appendStringField(b, "args_digest", r.ArgsDigest, false)
	b = appendStringField(b, "result_digest", r.ResultDigest, false)
	if r.ExitCode != nil {
		b = append(b, `"exit_code":`...)
		b = strconv.AppendInt(b, int64(*r.ExitCode), 10)
		b = append(b, ',')
	}
	b = appendStringField(b, "outcome", r.Outcome, false)
	b = appendStringField(b, "code", r.Code, false)
	b = appendStringField(b, "detail", r.Detail, false)
	if r.PrunedThrough != 0 {
		b = append(b, `"pruned_through":`...)
		b = strconv.AppendUint(b, r.PrunedThrough, 10)
		b = append(b, ',')
	}
	b = appendStringField(b, "pruned_hash", r.PrunedHash, false)
	return b, nil
}

// fieldLen is the length of appendStringField's field for an unescaped v.
func fieldLen(key, v string, always bool) int {
	if v == "" && !always {
		return 0
	}
	return len(key) + len(v) + len(`"":"",`)
}

// appendStringField appends `"key":"v",` — nothing when v is empty and the
// field is omitempty.
func appendStringField(b []byte, key, v string, always bool) []byte {
	if v == "" && !always {
		return b
	}
	b = append(b, '"')
	b = append(b, key...)
	b = append(b, `":`...)
	b = appendJSONString(b, v)
	return append(b, ',')
}

// appendJSONString appends s quoted exactly as json.Marshal quotes it:
// `"` and `\` escaped, \n \r \t \b \f by name, other control characters and
// HTML's < > & as \u00XX, U+2028 and U+2029 as \u2028 and \u2029, invalid
// UTF-8 as \ufffd (TestLineIsJSONMarshal checks each).
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		for i+8 <= len(s) {
			t := s[i : i+8]
			m := specialBytes(uint64(t[0]) | uint64(t[1])<<8 | uint64(t[2])<<16 | uint64(t[3])<<24 |
				uint64(t[4])<<32 | uint64(t[5])<<40 | uint64(t[6])<<48 | uint64(t[7])<<56)
			if m != 0 {
				i += bits.TrailingZeros64(m) >> 3 // the first byte that is not plain
				break
			}
			i += 8
		}
		if i == len(s) {
			break
		}
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// specialBytes flags, in the high bit of its byte, each byte of w (8 bytes
// of a string, the first in the low byte) that does not stand for itself
// in a JSON string as appendJSONString writes it: not ASCII, a control
// character, `"`, `\`, `<`, `>` or `&`. It tests the 8 at once (the bit
// tricks of "Bit Twiddling Hacks": a byte below n shows in
// (w - n*ones) &^ w & highs, a byte equal to c as a zero byte of
// w ^ c*ones). A borrow can flag a plain byte, but only above a flagged
// one: the lowest flag is always the first such byte. Quoting a long text
// skips 8 plain bytes a step instead of testing each.
func specialBytes(w uint64) uint64 {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	q, bs, lt, gt, amp := w^(ones*'"'), w^(ones*'\\'), w^(ones*'<'), w^(ones*'>'), w^(ones*'&')
	return (w | (w-ones*0x20)&^w |
		(q-ones)&^q | (bs-ones)&^bs | (lt-ones)&^lt | (gt-ones)&^gt | (amp-ones)&^amp) & highs
}

// appendLine appends r's line, exactly what json.Marshal(r) gives
// (TestLineIsJSONMarshal), from its body and its Seq, Time and Prev.
func appendLine(b []byte, r Record, body []byte) []byte {
	return appendLinePrev(b, r, body, []byte(r.Prev))
}

// appendLinePrev is appendLine with prev for r.Prev: the log chains with
// the previous line's hash as bytes, not a string made per record.
func appendLinePrev(b []byte, r Record, body, prev []byte) []byte {
	b = append(b, `{"seq":`...)
	b = strconv.AppendUint(b, r.Seq, 10)
	b = append(b, `,"time":"`...)
	b = r.Time.AppendFormat(b, time.RFC3339Nano)
	b = append(b, `",`...)
	b = append(b, body...)
	b = append(b, `"prev":"`...)
	b = append(b, prev...)
	return append(b, `"}`...)
}

// holdLocked counts p in waiting[p.epoch], so that a failed write that
// ends its epoch keeps endTicket for it until awaitLocked.
func (l *Log) holdLocked(p *pending) {
	if l.waiting == nil {
		l.waiting = map[uint64]int{}
	}
	l.waiting[p.epoch]++
	p.held = true
}

// awaitLocked waits until p's record is written, or dropped by the failed
// write that ended its epoch (the error). l.mu is held.
func (l *Log) awaitLocked(p pending) error {
	if !p.held && l.writtenTicket < p.ticket && l.epoch == p.epoch {
		l.holdLocked(&p)
	}
	for l.writtenTicket < p.ticket && l.epoch == p.epoch {
		l.cond.Wait()
	}
	if p.held {
		if l.waiting[p.epoch]--; l.waiting[p.epoch] == 0 {
			delete(l.waiting, p.epoch)
		}
	}
	written := l.writtenTicket
	if l.epoch != p.epoch {
		written = l.endTicket[p.epoch]
		if l.waiting[p.epoch] == 0 {
			delete(l.endTicket, p.epoch)
		}
	}
	if written < p.ticket {
		// The failed write that ended the record's epoch dropped it.
		return l.unavailable(l.epochErr)
	}
	return nil
}

// refuse counts a record that could not be recorded and returns the
// unavailable error for err (l.mu held).
func (l *Log) refuse(err error) error {
	if l.failErr == nil {
		l.failedAt = l.cfg.Now().UTC()
		l.failErr = err
	}
	l.lost++
	return l.unavailable(err)
}

// repair cuts the file back to its last whole record after a failed write
// whose cut failed (l.mu held, no write in progress).
func (l *Log) repair() error {
	if err := l.f.Truncate(l.size); err != nil {
		return fmt.Errorf("cutting back a failed write: %w", err)
	}
	l.bad = false
	return nil
}

// writeQueuedLocked writes the queued lines, in as few write(2)s as the
// appenders' pace allows: the lock is released while writing, and lines
// queued meanwhile go out with the next write. l.mu is held and no write is
// in progress.
//
// A failed or short write drops every record chained but not written (the
// chain goes back to the last record written, and the appenders waiting
// for them get the error) and cuts the file back to its last whole record.
func (l *Log) writeQueuedLocked() {
	l.writing = true
	for len(l.queued) > 0 {
		buf, upto, hash, f, ticket := l.queued, l.seq, l.hash, l.f, l.ticket
		l.queued = l.spare[:0]
		l.mu.Unlock()
		n, err := f.Write(buf)
		l.mu.Lock()
		l.spare = buf[:0]
		if err != nil {
			l.lost += int(l.seq - l.written)
			if l.recoverySeq > l.written {
				l.lost-- // the audit.recovered record itself
			}
			if l.failErr == nil {
				l.failedAt = l.cfg.Now().UTC()
			}
			l.failErr, l.epochErr = err, err
			l.seq, l.hash, l.queued = l.written, l.writtenHash, l.queued[:0]
			l.recoverySeq = 0
			if l.endTicket == nil {
				l.endTicket = map[uint64]uint64{}
			}
			for e := range l.endTicket {
				if l.waiting[e] == 0 {
					delete(l.endTicket, e) // nobody left to read it
				}
			}
			l.endTicket[l.epoch] = l.writtenTicket
			l.epoch++
			if n > 0 {
				// A short write: cut the torn line off now, or before the
				// next write.
				if terr := f.Truncate(l.size); terr != nil {
					l.bad = true
				}
			}
			break
		}
		l.size += int64(n)
		l.written, l.writtenHash, l.writtenTicket = upto, hash, ticket
		if l.recoverySeq != 0 && upto >= l.recoverySeq {
			// The audit.recovered record is written: the failure is told.
			l.failErr, l.lost, l.recoverySeq = nil, 0, 0
		}
		l.cond.Broadcast()
	}
	l.writing = false
	l.cond.Broadcast()
}

// rotate fsyncs and closes the current file and opens the next. l.mu held;
// nothing is queued or being written. When the next file cannot be
// opened, or the current one cannot be fsynced, the current file stays
// open and the error is returned: the next append tries again.
func (l *Log) rotate() error {
	next := fileName(l.cfg.Dir, l.fileNo+1)
	f, err := os.OpenFile(next, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	if fi, err := f.Stat(); err != nil || fi.Size() != 0 {
		f.Close()
		if err == nil {
			err = errors.New("it is not empty")
		}
		return fmt.Errorf("starting %s: %w", filepath.Base(next), err)
	}
	if err := l.f.Sync(); err != nil {
		f.Close()
		return err
	}
	l.f.Close()
	l.synced = l.seq
	if err := l.writeHead(l.seq, l.hash.String()); err != nil {
		l.syncErr = err // the syncer writes it again
	}
	l.fileNo++
	l.f, l.size = f, 0
	if d, err := os.Open(l.cfg.Dir); err == nil {
		_ = d.Sync() // the new file's directory entry
		d.Close()
	}
	select {
	case l.pruneKick <- struct{}{}:
	default:
	}
	l.cond.Broadcast()
	return nil
}

func (l *Log) kickSync() {
	select {
	case l.kick <- struct{}{}:
	default:
	}
}

// pruner applies the retention after every rotation and once a minute,
// until Close. A failure is retried then.
func (l *Log) pruner() {
	defer close(l.pruneDone)
	if l.cfg.MaxTotalBytes <= 0 && l.cfg.MaxAge <= 0 {
		return
	}
	t := time.NewTicker(time.Minute)
	defer t.Stop()
	for {
		select {
		case <-l.stopPrune:
			return
		case <-l.pruneKick:
		case <-t.C:
		}
		_, _ = l.Prune()
	}
}

// syncer writes what Enqueue queued and fsyncs written records in
// batches, until Close: every SyncInterval, and when an appender needs a
// sync (AppendSync, SyncEvery records unsynced). When Enqueue has queued
// much (enqueueKick) it only writes; the next tick syncs.
func (l *Log) syncer() {
	defer close(l.done)
	t := time.NewTicker(l.cfg.SyncInterval)
	defer t.Stop()
	for {
		l.mu.Lock()
		closed := l.closed
		l.mu.Unlock()
		sync := true
		if !closed {
			select {
			case <-l.kick:
			case <-t.C:
			case <-l.kickWrite:
				sync = false // the ticker syncs it within SyncInterval
			}
		}
		l.writeQueued()
		if sync || closed {
			l.syncOnce()
		}
		if closed {
			return
		}
	}
}

// writeQueued writes what Enqueue left queued, unless a write is in
// progress (it takes the queue).
func (l *Log) writeQueued() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.writing || len(l.queued) == 0 || l.f == nil {
		return
	}
	if l.bad && l.repair() != nil {
		return // the next Append repairs the file (or says why it cannot)
	}
	l.writeQueuedLocked()
}

// syncOnce fsyncs the current file, writes the head and advances synced.
// The fsync runs without the lock, so appends go on meanwhile (they wait
// only when SyncEvery records are unsynced: that is the group commit). A
// rotation that closes the file under it has fsynced it itself. A failure
// is kept in syncErr until a later sync succeeds.
func (l *Log) syncOnce() {
	l.mu.Lock()
	if (l.synced == l.written && l.syncErr == nil) || l.f == nil {
		l.mu.Unlock()
		return
	}
	f, target, hash := l.f, l.written, l.writtenHash
	l.mu.Unlock()
	// The fsync and the head's write run without the lock: writing the
	// head (create, write, rename) under it held up every appender
	// (a fifth of the lock's contention under 64 concurrent calls).
	err := f.Sync()
	var herr error
	if err == nil || errors.Is(err, os.ErrClosed) {
		herr = l.writeHead(target, hash.String())
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case err != nil && !errors.Is(err, os.ErrClosed):
		l.syncErr = err
	case herr != nil:
		l.syncErr = herr
	case target >= l.synced:
		l.synced, l.syncErr = target, nil
	}
	l.cond.Broadcast()
}

// head is the content of audit.head.
type head struct {
	Seq  uint64 `json:"seq"`
	Hash string `json:"hash"`
}

// writeHead records the last fsynced record, unless a later one is
// recorded already (a rotation and the syncer may both write it). It is
// written to a temporary file and renamed, so it is always whole. It
// takes headMu (after l.mu when that is held, never before).
func (l *Log) writeHead(seq uint64, hash string) error {
	l.headMu.Lock()
	defer l.headMu.Unlock()
	if seq < l.headSeq {
		return nil
	}
	b, _ := json.Marshal(head{Seq: seq, Hash: hash})
	p := filepath.Join(l.cfg.Dir, "audit.head")
	tmp := p + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, p); err != nil {
		return err
	}
	l.headSeq = seq
	return nil
}

// Stats reports the last written and last fsynced sequence numbers.
func (l *Log) Stats() (written, synced uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.written, l.synced
}

// Dir returns the log's directory.
func (l *Log) Dir() string { return l.cfg.Dir }

// Close fsyncs what was written and closes the log. Appends after it fail
// with ErrClosed. A second Close returns nil.
func (l *Log) Close() error {
	// The pruner first, while the log still appends: a Prune cut short by
	// the close left its audit.pruned record in the log (its AppendSync
	// returned ErrClosed once written) without removing the files it
	// names, and Verify then reported the records as removed.
	l.stopPruner.Do(func() { close(l.stopPrune) })
	<-l.pruneDone
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	l.cond.Broadcast()
	for l.writing {
		l.cond.Wait()
	}
	l.mu.Unlock()
	l.kickSync()
	<-l.done
	l.mu.Lock()
	defer l.mu.Unlock()
	err := l.syncErr
	if cerr := l.f.Close(); err == nil {
		err = cerr
	}
	return err
}

func lineHash(line []byte) string {
	h := hashOf(line)
	return h.String()
}

// hexHash is a line's hash in hex, as a record's prev holds it; the log
// keeps the last one as an array (no allocation per record).
type hexHash [2 * sha256.Size]byte

// genesis is GenesisHash as a hexHash.
var genesis = func() (h hexHash) { copy(h[:], GenesisHash); return h }()

func hashOf(line []byte) (h hexHash) {
	s := sha256.Sum256(line)
	hex.Encode(h[:], s[:])
	return h
}

func (h hexHash) String() string { return string(h[:]) }

func fileName(dir string, no int) string {
	return filepath.Join(dir, fmt.Sprintf("audit-%08d.jsonl", no))
}

type logFile struct {
	no   int
	path string
}

// listFiles returns the log's files in order.
func listFiles(dir string) ([]logFile, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []logFile
	for _, e := range ents {
		var no int
		name := e.Name()
		if !strings.HasPrefix(name, "audit-") || !strings.HasSuffix(name, ".jsonl") {
			continue
		}
		if _, err := fmt.Sscanf(name, "audit-%08d.jsonl", &no); err != nil || no <= 0 {
			continue
		}
		out = append(out, logFile{no: no, path: filepath.Join(dir, name)})
	}
	slices.SortFunc(out, func(a, b logFile) int { return a.no - b.no })
	return out, nil
}

// line is one line read back from the log.
type line struct {
	file string
	no   int // 1-based line number in file
	raw  []byte
	torn bool // no newline at the end
}

// eachLine calls fn with every line of the log in order; fn returns false
// to stop.
func eachLine(dir string, fn func(line) bool) error {
	files, err := listFiles(dir)
	if err != nil {
		return err
	}
	for _, f := range files {
		fh, err := os.Open(f.path)
		if errors.Is(err, os.ErrNotExist) {
			// Retention removed it since the listing: what follows shows
			// the gap, and the audit.pruned record written before the
			// removal accounts for it.
			continue
		}
		if err != nil {
			return err
		}
		br := bufio.NewReaderSize(fh, 64<<10)
		for no := 1; ; no++ {
			b, err := br.ReadBytes('\n')
			if len(b) > 0 {
				torn := b[len(b)-1] != '\n'
				if !torn {
					b = b[:len(b)-1]
				}
				if !fn(line{file: filepath.Base(f.path), no: no, raw: b, torn: torn}) {
					fh.Close()
					return nil
				}
			}
			if err == io.EOF {
				break
			}
			if err != nil {
				fh.Close()
				return err
			}
		}
		fh.Close()
	}
	return nil
}

// Tail returns the last n records (fewer if the log is shorter), oldest
// first. Lines that do not decode are skipped; Verify reports them.
func Tail(dir string, n int) ([]Record, error) {
	if n <= 0 {
		return nil, nil
	}
	ring := make([]Record, 0, n)
	err := eachLine(dir, func(ln line) bool {
		var r Record
		if ln.torn || json.Unmarshal(ln.raw, &r) != nil {
			return true
		}
		if len(ring) == n {
			ring = append(ring[:0], ring[1:]...)
		}
		ring = append(ring, r)
		return true
	})
	return ring, err
}

// Export writes every record with Seq >= from (and, when until is not
// zero, Time before until) as JSON lines to w, byte for byte as stored, so
// that the exported lines still verify by hash. It returns the number
// written.
func Export(ctx context.Context, dir string, w io.Writer, from uint64, since, until time.Time) (int, error) {
	n := 0
	var werr error
	err := eachLine(dir, func(ln line) bool {
		if ctx.Err() != nil {
			werr = ctx.Err()
			return false
		}
		var r Record
		if ln.torn || json.Unmarshal(ln.raw, &r) != nil {
			return true
		}
		if r.Seq < from || (!since.IsZero() && r.Time.Before(since)) || (!until.IsZero() && !r.Time.Before(until)) {
			return true
		}
		if _, werr = w.Write(append(slices.Clip(ln.raw), '\n')); werr != nil {
			return false
		}
		n++
		return true
	})
	if err == nil {
		err = werr
	}
	return n, err
}
