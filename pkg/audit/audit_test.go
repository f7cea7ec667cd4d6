package audit

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toold/toold/pkg/testenv"
)

// write appends n records to a fresh log in dir and closes it.
func write(t *testing.T, cfg Config, n int) {
	t.Helper()
	l, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if _, err := l.Append(Record{Kind: KindCallEnd, Conversation: "c1", CallID: strconv.Itoa(i), Tool: "think", Outcome: "success", ArgsDigest: Digest([]byte(strconv.Itoa(i)))}); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}

func readLines(t *testing.T, path string) [][]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.SplitAfter(b, []byte("\n"))
}

func writeLines(t *testing.T, path string, lines [][]byte) {
	t.Helper()
	if err := os.WriteFile(path, bytes.Join(lines, nil), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestChainAcrossFiles(t *testing.T) {
	dir := t.TempDir()
	cfg := Config{Dir: dir, MaxFileBytes: 1000}
	write(t, cfg, 30)
	// Reopen and go on: the chain continues.
	write(t, cfg, 30)
	files, _ := listFiles(dir)
	if len(files) < 3 {
		t.Fatalf("want rotation into several files, got %d", len(files))
	}
	for _, f := range files {
		if fi, _ := os.Stat(f.path); fi.Size() > 1000 {
			t.Errorf("%s is %d bytes, over MaxFileBytes", f.path, fi.Size())
		}
	}
	rep, err := Verify(dir)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Records != 60 || rep.Last != 60 || rep.Head != 60 || rep.Files != len(files) {
		t.Fatalf("report %+v", rep)
	}
	recs, err := Tail(dir, 5)
	if err != nil || len(recs) != 5 || recs[0].Seq != 56 || recs[4].Seq != 60 {
		t.Fatalf("tail: %v %+v", err, recs)
	}
	var out bytes.Buffer
	n, err := Export(context.Background(), dir, &out, 50, time.Time{}, time.Time{})
	if err != nil || n != 11 || strings.Count(out.String(), "\n") != 11 {
		t.Fatalf("export: %d %v", n, err)
	}
	// The exported lines are the stored bytes: each one's hash is the
	// next one's prev.
	lines := bytes.Split(bytes.TrimSuffix(out.Bytes(), []byte("\n")), []byte("\n"))
	for i := 1; i < len(lines); i++ {
		if !bytes.Contains(lines[i], []byte(`"prev":"`+lineHash(lines[i-1])+`"`)) {
			t.Fatalf("exported line %d does not chain", i)
		}
	}
}

// Concurrent appenders share writes (group write) and the chain stays
// whole and in seq order, across rotations: every Append that returned is
// in the file, and Verify accepts the log.
func TestConcurrentAppendsChain(t *testing.T) {
	dir := t.TempDir()
	l, err := Open(Config{Dir: dir, MaxFileBytes: 4000})
	if err != nil {
		t.Fatal(err)
	}
	const workers, each = 16, 50
	errs := make(chan error, workers)
	for w := range workers {
		go func() {
			for i := range each {
				r, err := l.Append(Record{Kind: KindDecision, Conversation: "c", CallID: fmt.Sprint(w, "-", i)})
				if err == nil {
					if written, _ := l.Stats(); written < r.Seq {
						err = fmt.Errorf("Append of seq %d returned with %d written", r.Seq, written)
					}
				}
				if err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range workers {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	rep, err := Verify(dir)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Records != workers*each || rep.Last != workers*each || rep.Files < 2 {
		t.Fatalf("report %+v", rep)
	}
}

// Records enqueued from many goroutines, mixed with Appends and AppendAlls
// and across rotations, form one intact chain: an Append writes what was
// enqueued before it, the log's writer writes the rest within
// SyncInterval, and Close writes what is still queued.
func TestEnqueueChains(t *testing.T) {
	dir := t.TempDir()
	l, err := Open(Config{Dir: dir, MaxFileBytes: 4000, SyncInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	const workers, each = 16, 50
	errs := make(chan error, workers)
	for w := range workers {
		go func() {
			for i := range each {
				r := Record{Kind: KindCallStart, Conversation: "c", CallID: fmt.Sprint(w, "-", i)}
				var err error
				switch i % 10 {
				case 0:
					_, err = l.Append(r)
				case 1:
					d := r
					d.Kind = KindDecision
					err = l.AppendAll(d, r)
				case 2:
					d := r
					d.Kind = KindDecision
					err = l.EnqueueAll(d, r)
				default:
					err = l.Enqueue(r)
				}
				if err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range workers {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	const total = workers * (each + 2*each/10) // each AppendAll and EnqueueAll adds a record
	// The log's writer writes what is enqueued without another append.
	testenv.Poll(t, 10*time.Second, "every enqueued record written", func() bool {
		written, _ := l.Stats()
		return written == total
	})
	for i := range 5 {
		if err := l.Enqueue(Record{Kind: KindCallEnd, CallID: fmt.Sprint("last-", i)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.Enqueue(Record{Kind: KindCallEnd}); !errors.Is(err, ErrClosed) {
		t.Fatalf("Enqueue after Close: %v, want ErrClosed", err)
	}
	if err := l.AppendAll(Record{Kind: KindCallEnd}); !errors.Is(err, ErrClosed) {
		t.Fatalf("AppendAll after Close: %v, want ErrClosed", err)
	}
	rep, err := Verify(dir)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Records != total+5 || rep.Last != total+5 || rep.Files < 2 {
		t.Fatalf("report %+v, want %d records in several files", rep, total+5)
	}
	// EnqueueAll's records are chained in the order given.
	recs, err := Tail(dir, total+5)
	if err != nil {
		t.Fatal(err)
	}
	decided := map[string]bool{}
	for _, r := range recs {
		switch r.Kind {
		case KindDecision:
			decided[r.CallID] = true
		case KindCallStart:
			var w, i int
			if _, err := fmt.Sscanf(r.CallID, "%d-%d", &w, &i); err == nil && i%10 == 2 && !decided[r.CallID] {
				t.Fatalf("call %s: its start came before its decision", r.CallID)
			}
		}
	}
}

// BenchmarkAppend64 is 64 goroutines recording calls at once, as toold's
// executor does under concurrency 64: Append waits for each write, Enqueue
// does not.
func BenchmarkAppend64(b *testing.B) {
	for _, name := range []string{"Append", "Enqueue"} {
		b.Run(name, func(b *testing.B) {
			l, err := Open(Config{Dir: b.TempDir(), SyncEvery: 1 << 30})
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			b.SetParallelism(32) // 64 goroutines on 2 cores
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				r := Record{Kind: KindCallStart, Conversation: "conv", CallID: "call", Tool: "think", ArgsDigest: Digest([]byte("{}"))}
				for pb.Next() {
					var err error
					if name == "Append" {
						_, err = l.Append(r)
					} else {
						err = l.Enqueue(r)
					}
					if err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

// Each way of tampering is found and named at the first record affected.
func TestVerifyFindsTampering(t *testing.T) {
	tests := []struct {
		name     string
		tamper   func(t *testing.T, dir string, files []logFile)
		wantKind string
		wantSeq  uint64
	}{
		{"flip a byte", func(t *testing.T, dir string, files []logFile) {
			lines := readLines(t, files[0].path)
			i := bytes.Index(lines[3], []byte("think"))
			lines[3][i] = 'T' // record 4
			writeLines(t, files[0].path, lines)
		}, Edited, 4},
		{"flip a byte of the last record", func(t *testing.T, dir string, files []logFile) {
			p := files[len(files)-1].path
			lines := readLines(t, p)
			last := lines[len(lines)-2]
			i := bytes.Index(last, []byte("success"))
			last[i] = 'S'
			writeLines(t, p, lines)
		}, Edited, 50},
		{"flip a byte so the line does not decode", func(t *testing.T, dir string, files []logFile) {
			lines := readLines(t, files[0].path)
			lines[1][0] = '[' // record 2
			writeLines(t, files[0].path, lines)
		}, Edited, 2},
		{"delete a record", func(t *testing.T, dir string, files []logFile) {
			lines := readLines(t, files[0].path)
			writeLines(t, files[0].path, append(lines[:2:2], lines[3:]...)) // record 3
		}, Removed, 3},
		{"delete the first record", func(t *testing.T, dir string, files []logFile) {
			lines := readLines(t, files[0].path)
			writeLines(t, files[0].path, lines[1:])
		}, Removed, 1},
		{"swap two records", func(t *testing.T, dir string, files []logFile) {
			lines := readLines(t, files[0].path)
			lines[4], lines[5] = lines[5], lines[4] // records 5 and 6
			writeLines(t, files[0].path, lines)
		}, Reordered, 5},
		{"truncate a file mid-record", func(t *testing.T, dir string, files []logFile) {
			fi, _ := os.Stat(files[0].path)
			if err := os.Truncate(files[0].path, fi.Size()-10); err != nil {
				t.Fatal(err)
			}
		}, Truncated, 0}, // seq checked by lastOf below
		{"truncate the last file at a record boundary", func(t *testing.T, dir string, files []logFile) {
			p := files[len(files)-1].path
			lines := readLines(t, p)
			writeLines(t, p, lines[:len(lines)-3]) // drops records 49 and 50 (the last element is "")
		}, Truncated, 49},
		{"remove a whole file", func(t *testing.T, dir string, files []logFile) {
			if err := os.Remove(files[1].path); err != nil {
				t.Fatal(err)
			}
		}, Removed, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			write(t, Config{Dir: dir, MaxFileBytes: 4096}, 50)
			if _, err := Verify(dir); err != nil {
				t.Fatalf("untouched log: %v", err)
			}
			files, _ := listFiles(dir)
			if len(files) < 3 {
				t.Fatalf("want several files, got %d", len(files))
			}
			want := tt.wantSeq
			switch tt.name {
			case "truncate a file mid-record":
				want = lastOf(t, files[0].path)
			case "remove a whole file":
				want = lastOf(t, files[0].path) + 1
			}
			tt.tamper(t, dir, files)
			_, err := Verify(dir)
			var te *TamperError
			if !errors.As(err, &te) {
				t.Fatalf("Verify = %v, want a TamperError", err)
			}
			if te.Kind != tt.wantKind || te.Seq != want {
				t.Fatalf("Verify = %v; want %s at record %d", te, tt.wantKind, want)
			}
		})
	}
}

// lastOf returns the seq of the last record of a file.
func lastOf(t *testing.T, path string) uint64 {
	t.Helper()
	lines := readLines(t, path)
	l := lines[len(lines)-2]
	i := bytes.Index(l, []byte(`"seq":`)) + 6
	j := bytes.IndexByte(l[i:], ',')
	n, err := strconv.ParseUint(string(l[i:i+j]), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestAppendAfterCloseAndBadDir(t *testing.T) {
	dir := t.TempDir()
	l, err := Open(Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(Record{Kind: KindDecision}); !errors.Is(err, ErrClosed) {
		t.Fatalf("append after close: %v", err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(Config{}); err == nil {
		t.Fatal("Open without a directory succeeded")
	}
	f := filepath.Join(dir, "file")
	os.WriteFile(f, nil, 0o600)
	if _, err := Open(Config{Dir: f}); err == nil {
		t.Fatal("Open on a file succeeded")
	}
}

// AppendSync returns only once the record is fsynced, and an Append
// never leaves more than SyncEvery records unsynced.
func TestSyncBound(t *testing.T) {
	dir := t.TempDir()
	l, err := Open(Config{Dir: dir, SyncEvery: 8, SyncInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for range 100 {
		r, err := l.Append(Record{Kind: KindDecision})
		if err != nil {
			t.Fatal(err)
		}
		if w, s := l.Stats(); w != r.Seq || w-s > 8 {
			t.Fatalf("written %d synced %d: more than 8 unsynced", w, s)
		}
	}
	r, err := l.AppendSync(Record{Kind: KindApproval, Who: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	if _, s := l.Stats(); s < r.Seq {
		t.Fatalf("AppendSync returned with synced %d < %d", s, r.Seq)
	}
	if h, _ := readHead(dir); h.Seq < r.Seq {
		t.Fatalf("head %d behind the synced record %d", h.Seq, r.Seq)
	}
}

const childEnv = "TOOLD_AUDIT_CHILD_DIR"

// TestMain lets the test binary stand in for toold appending a burst: with
// childEnv set it appends forever, printing each sequence number once its
// Append returned, until it is killed.
func TestMain(m *testing.M) {
	if dir := os.Getenv(childEnv); dir != "" {
		l, err := Open(Config{Dir: dir, SyncEvery: childSyncEvery, MaxFileBytes: 64 << 10})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(3)
		}
		w := bufio.NewWriter(os.Stdout)
		for i := 0; ; i++ {
			r, err := l.Append(Record{Kind: KindCallStart, Conversation: "burst", CallID: strconv.Itoa(i), ArgsDigest: Digest([]byte(strconv.Itoa(i)))})
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(3)
			}
			fmt.Fprintln(w, r.Seq)
			w.Flush()
		}
	}
	os.Exit(m.Run())
}

const childSyncEvery = 16

// A process SIGKILLed in the middle of a burst of appends loses no record
// whose Append returned; the chain verifies up to the last record; at most
// SyncEvery acknowledged records were not yet fsynced (what a machine
// crash could have lost); and reopening the log repairs a torn line and
// carries on.
func TestSIGKILLMidBurst(t *testing.T) {
	for round := range 3 {
		t.Run(strconv.Itoa(round), func(t *testing.T) {
			dir := t.TempDir()
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), childEnv+"="+dir)
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			sc := bufio.NewScanner(out)
			var acked uint64
			target := uint64(2000 + 1500*round)
			for sc.Scan() {
				n, err := strconv.ParseUint(sc.Text(), 10, 64)
				if err != nil {
					t.Fatal(err)
				}
				acked = n
				if acked >= target {
					break
				}
			}
			if acked < target {
				cmd.Process.Kill()
				cmd.Wait()
				t.Fatalf("child stopped at %d: %s", acked, stderr.String())
			}
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			for sc.Scan() { // what it acknowledged before the kill landed
				if n, err := strconv.ParseUint(sc.Text(), 10, 64); err == nil {
					acked = n
				}
			}
			err = cmd.Wait()
			if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || ws.Signal() != syscall.SIGKILL {
				t.Fatalf("child did not die of SIGKILL: %v", err)
			}

			rep, err := Verify(dir)
			var te *TamperError
			if err != nil && !(errors.As(err, &te) && te.Kind == Truncated && te.Seq == rep.Last+1) {
				t.Fatalf("after SIGKILL: %v", err)
			}
			if rep.Last < acked {
				t.Fatalf("lost acknowledged records: log ends at %d, %d were acknowledged", rep.Last, acked)
			}
			if rep.Head+childSyncEvery < acked {
				t.Fatalf("fsynced up to %d but %d acknowledged: more than SyncEvery=%d unsynced", rep.Head, acked, childSyncEvery)
			}
			t.Logf("acknowledged %d, on disk %d, fsynced %d (a machine crash would have lost %d <= %d)", acked, rep.Last, rep.Head, acked-min(acked, rep.Head), childSyncEvery)

			l, err := Open(Config{Dir: dir, MaxFileBytes: 64 << 10})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := l.Append(Record{Kind: KindDecision, Decision: "allow"}); err != nil {
				t.Fatal(err)
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			rep2, err := Verify(dir)
			if err != nil {
				t.Fatalf("after reopening: %v", err)
			}
			if rep2.Last < rep.Last+1 {
				t.Fatalf("reopened log ends at %d, before %d", rep2.Last, rep.Last+1)
			}
		})
	}
}

func BenchmarkAppend(b *testing.B) {
	for _, sync := range []bool{false, true} {
		b.Run(fmt.Sprintf("sync=%v", sync), func(b *testing.B) {
			l, err := Open(Config{Dir: b.TempDir()})
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			r := Record{Kind: KindCallEnd, Conversation: "c", CallID: "1", Tool: "read_file", Outcome: "success", ArgsDigest: Digest([]byte("{}")), ResultDigest: Digest([]byte("x"))}
			b.ResetTimer()
			for b.Loop() {
				if sync {
					_, err = l.AppendSync(r)
				} else {
					_, err = l.Append(r)
				}
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// A record's line, made from its body (marshaled outside the lock) and its
// seq, time and prev, is exactly json.Marshal's, whatever the fields hold.
// everyField is a Record with every field set (strings "x" and the field's
// name, numbers 7), so that a field added to Record that recordBody does
// not write fails TestLineIsJSONMarshal.
func everyField() Record {
	var r Record
	v := reflect.ValueOf(&r).Elem()
	for i := 0; i < v.NumField(); i++ {
		f := v.Field(i)
		switch f.Kind() {
		case reflect.String:
			f.SetString("x " + v.Type().Field(i).Name)
		case reflect.Uint64, reflect.Uint, reflect.Uint32:
			f.SetUint(7)
		case reflect.Int, reflect.Int64:
			f.SetInt(7)
		case reflect.Pointer:
			p := reflect.New(f.Type().Elem())
			p.Elem().SetInt(7)
			f.Set(p)
		}
	}
	return r
}

func TestLineIsJSONMarshal(t *testing.T) {
	code := 3
	recs := []Record{
		{Kind: KindCallStart},
		{Kind: KindCallEnd, Conversation: "c", CallID: "1", Tool: "terminal_operations", Operation: "run_command", Outcome: "error", Code: "DENIED", ExitCode: &code,
			ArgsDigest: Digest([]byte("a")), ResultDigest: Digest([]byte("b"))},
		{Kind: KindApproval, Who: "<script>&\"quoted\"\\", Detail: "line\nbreak\ttab \u2028\u2029 é 😀 \x00\x1f", Scope: "once", Decision: "approve"},
		{Kind: KindDecision, Detail: "bad utf-8: \xff\xfe", Rule: "r", GrantID: "g"},
		{Kind: KindPruned, PrunedThrough: 42, PrunedHash: GenesisHash, Detail: "pruned"},
		everyField(),
	}
	for i, r := range recs {
		r.Seq = uint64(i*1000 + 1)
		r.Time = time.Date(2026, 11, 27, 10, 0, i, i*1001, time.UTC)
		r.Prev = lineHash([]byte(fmt.Sprint(i)))
		body, err := recordBody(r)
		if err != nil {
			t.Fatal(err)
		}
		want, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendLine(nil, r, body); !bytes.Equal(got, want) {
			t.Errorf("record %d:\n got %s\nwant %s", i, got, want)
		}
	}
}

// appendJSONString quotes every byte, and runes JSON treats apart, exactly
// as encoding/json does.
func TestJSONStringIsMarshal(t *testing.T) {
	var cases []string
	for c := 0; c < 256; c++ {
		cases = append(cases, string([]byte{byte(c)}), "a"+string([]byte{byte(c)})+"b")
	}
	cases = append(cases, "\u2028", "x\u2029y", "é😀", "\xe2\x80", "\xed\xa0\x80", "\uFFFD", "plain text, 100% (ok)")
	// Every byte at every offset of the 8-byte words plainASCII8 skips,
	// and runes across a word's end.
	for c := 0; c < 256; c++ {
		for off := 0; off < 17; off++ {
			b := []byte(strings.Repeat("abcdefgh", 3))
			b[off] = byte(c)
			cases = append(cases, string(b))
		}
	}
	for off := 0; off < 9; off++ {
		for _, r := range []string{"\u2028", "é", "😀", "\xe2\x80", "\x7f", "~"} {
			cases = append(cases, strings.Repeat("x", off)+r+strings.Repeat("y", 16))
		}
	}
	for _, s := range cases {
		want, _ := json.Marshal(s)
		if got := appendJSONString(nil, s); !bytes.Equal(got, want) {
			t.Errorf("%q: got %s, want %s", s, got, want)
		}
	}
}

// A record's body is made in one allocation, and chaining it makes none of
// its own (the hash of the line before is kept as an array), whatever the
// record holds: a call end with two digests, a decision with its rule.
func TestRecordAllocations(t *testing.T) {
	end := Record{Kind: KindCallEnd, Conversation: "conv-0123456789abcdef", CallID: "toolu_01ABCDEFGHIJKLMNOPQRSTUV", Tool: "file_operations",
		Operation: "read_file", Outcome: "success", ArgsDigest: Digest([]byte(`{"path":"a.go"}`)), ResultDigest: Digest([]byte("x"))}
	dec := Record{Kind: KindDecision, Conversation: "conv", CallID: "1", Tool: "terminal", Operation: "run_command", Decision: "allow",
		Rule: "commands.allow[3]: git status", Detail: strings.Repeat("d", 300)}
	for _, r := range []Record{end, dec} {
		if n := testing.AllocsPerRun(100, func() { _, _ = recordBody(r) }); n != 1 {
			t.Errorf("recordBody(%s): %v allocations, want 1", r.Kind, n)
		}
	}
	if got, want := Digest([]byte("x")), "sha256:"+lineHash([]byte("x")); got != want {
		t.Fatalf("Digest: %q, want %q", got, want)
	}
	l, err := Open(Config{Dir: t.TempDir(), SyncEvery: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	// Warm the queue's buffers, then an Enqueue of a call's three records
	// allocates their bodies and one slice of them.
	for range 100 {
		if err := l.EnqueueAll(dec, end, end); err != nil {
			t.Fatal(err)
		}
	}
	if n := testing.AllocsPerRun(100, func() { _ = l.EnqueueAll(dec, end, end) }); n > 4 {
		t.Errorf("EnqueueAll of 3 records: %v allocations, want at most 4", n)
	}
}

// TestFlushWritesEnqueued: what Enqueue queued is in the file once Flush
// returns, long before the log's own writer would take it.
func TestFlushWritesEnqueued(t *testing.T) {
	dir := t.TempDir()
	l, err := Open(Config{Dir: dir, SyncInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if _, err := l.Append(Record{Kind: KindDecision, CallID: "a"}); err != nil {
		t.Fatal(err)
	}
	if err := l.EnqueueAll(Record{Kind: KindCallStart, CallID: "b"}, Record{Kind: KindCallEnd, CallID: "b"}); err != nil {
		t.Fatal(err)
	}
	recs, err := Tail(dir, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1 {
		t.Fatalf("before Flush: %d records in the file, want 1 (the enqueued ones wait for a write)", len(recs))
	}
	l.Flush()
	if recs, err = Tail(dir, 10); err != nil {
		t.Fatal(err)
	}
	if len(recs) != 3 || recs[1].CallID != "b" || recs[2].Kind != KindCallEnd {
		t.Fatalf("after Flush: %+v, want a's decision, b's start and end", recs)
	}
	l.Flush() // nothing queued: returns
}

// BenchmarkCallRecords is what the audit log costs a call: "effect" is a
// call with an effect — its decision and call.start appended with one
// write before it runs (on the call's path), its call.end enqueued after
// — and "effect-free" its three records enqueued together after the
// call's End (the recorder's job). Per call; fsync in batches as
// configured by default.
func BenchmarkCallRecords(b *testing.B) {
	decision := Record{Kind: KindDecision, Conversation: "c", CallID: "1", Tool: "run_command", Operation: "run_command", Decision: "allow", Rule: "default", Detail: "low risk"}
	start := Record{Kind: KindCallStart, Conversation: "c", CallID: "1", Tool: "run_command", Operation: "run_command", ArgsDigest: Digest([]byte(`{"command":"true"}`))}
	end := Record{Kind: KindCallEnd, Conversation: "c", CallID: "1", Tool: "run_command", Operation: "run_command", Outcome: "success", ResultDigest: Digest([]byte("x"))}
	for _, tc := range []struct {
		name string
		call func(l *Log) error
	}{
		{"effect", func(l *Log) error {
			if err := l.AppendAll(decision, start); err != nil {
				return err
			}
			return l.EnqueueAll(end)
		}},
		{"effect-free", func(l *Log) error { return l.EnqueueAll(decision, start, end) }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			l, err := Open(Config{Dir: b.TempDir()})
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			b.ReportAllocs()
			for b.Loop() {
				if err := tc.call(l); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// Enqueueing much (enqueueKick bytes) wakes the log's writer to write it,
// not to fsync: the fsync waits for SyncInterval (here never) or for
// SyncEvery records, and Close syncs what was written.
func TestEnqueueKickWritesWithoutSync(t *testing.T) {
	dir := t.TempDir()
	l, err := Open(Config{Dir: dir, SyncInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	detail := strings.Repeat("d", 400)
	n := 0
	enqueue := func() {
		if err := l.Enqueue(Record{Kind: KindCallEnd, CallID: fmt.Sprint(n), Detail: detail}); err != nil {
			t.Fatal(err)
		}
		n++
	}
	// Two rounds of enqueueKick bytes, each written by the writer before
	// the next: whatever the writer did after its first write (an fsync,
	// before this change) is done once the second is written.
	for round := range 2 {
		for bytes := 0; bytes < enqueueKick; bytes += 500 {
			enqueue()
		}
		target := uint64(n)
		testenv.Poll(t, 10*time.Second, fmt.Sprintf("round %d written", round), func() bool {
			if written, _ := l.Stats(); written >= target {
				return true
			}
			enqueue() // a kick, should the writer have been writing
			return false
		})
	}
	if n >= l.cfg.SyncEvery {
		t.Fatalf("%d records: the test needs fewer than SyncEvery (%d)", n, l.cfg.SyncEvery)
	}
	if _, synced := l.Stats(); synced != 0 {
		t.Fatalf("synced to %d: the writer's wake-up for a full queue fsynced", synced)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	rep, err := Verify(dir)
	if err != nil || rep.Last != uint64(n) {
		t.Fatalf("after Close: verify %+v, %v; want %d records", rep, err, n)
	}
}

// ResultDigest is the digest of json.Marshal of the result's text and JSON,
// as the executor recorded it before ResultDigest.
func TestResultDigestIsMarshal(t *testing.T) {
	var lines strings.Builder
	for i := range 80 {
		fmt.Fprintf(&lines, "%6d\tline %d: the quick <brown> fox & \"the\" lazy dog\\ é\u2028\x01\n", i+1, i)
	}
	for _, c := range []struct {
		text string
		raw  json.RawMessage
	}{
		{"", nil}, {"x", nil}, {lines.String(), nil}, {"\xff\xfe invalid", nil}, {strings.Repeat("a", 100<<10), nil},
		{"with a document", json.RawMessage(`{"a": [1, 2], "b": "<&>"}`)}, {"", json.RawMessage(`null`)},
	} {
		if got, want := ResultDigest(c.text, c.raw), marshalDigest(c.text, c.raw); got != want {
			t.Errorf("%.40q %s: %s, want %s", c.text, c.raw, got, want)
		}
	}
}

// FuzzResultDigest compares ResultDigest with the digest of json.Marshal
// for any text (its committed corpus runs in every go test).
func FuzzResultDigest(f *testing.F) {
	for _, s := range []string{"", "plain", "a\tb\nc", "<&>\"\\", "\xff", "é\u2028😀", strings.Repeat("abcdefg\x1f", 9)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		if got, want := ResultDigest(text, nil), marshalDigest(text, nil); got != want {
			t.Errorf("%q: %s, want %s", text, got, want)
		}
	})
}

func marshalDigest(text string, raw json.RawMessage) string {
	b, err := json.Marshal(struct {
		Text string          `json:"text"`
		JSON json.RawMessage `json:"json,omitempty"`
	}{text, raw})
	if err != nil {
		panic(err)
	}
	return Digest(b)
}

// BenchmarkResultDigest digests a 4 KB read_file result's text: json.Marshal
// and Digest (marshal), and ResultDigest (direct).
func BenchmarkResultDigest(b *testing.B) {
	var lines strings.Builder
	for i := 0; lines.Len() < 4<<10; i++ {
		fmt.Fprintf(&lines, "%6d\tline %d: the quick brown fox jumps over the lazy dog\n", i+1, i)
	}
	text := lines.String()
	b.Run("marshal", func(b *testing.B) {
		b.ReportAllocs()
		defer reportCPU(b)()
		for b.Loop() {
			marshalDigest(text, nil)
		}
	})
	b.Run("direct", func(b *testing.B) {
		b.ReportAllocs()
		defer reportCPU(b)()
		for b.Loop() {
			ResultDigest(text, nil)
		}
	})
}

// reportCPU reports the process's CPU time per iteration from the call to
// the call of the function it returns: on a shared machine a steadier
// figure than ns/op, which counts the waits for a processor.
func reportCPU(b *testing.B) func() {
	cpu := func() time.Duration {
		var ru syscall.Rusage
		syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	start := cpu()
	return func() { b.ReportMetric(float64(cpu()-start)/float64(b.N)/1e3, "cpu-µs/op") }
}
