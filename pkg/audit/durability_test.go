package audit

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/testenv"
)

// On a full disk (a real tmpfs of 256 KiB, filled) appenders racing each
// other either get their record written or an UNAVAILABLE error — never a
// record written that was reported failed, or the reverse; the file never
// ends in a torn line while the log is open, so Verify holds throughout;
// and once space is freed the next Append works, after an audit.recovered
// record saying how many records were lost.
func TestFullDisk(t *testing.T) {
	fs := testenv.SmallFS(t, 256<<10)
	dir := filepath.Join(fs, "audit")
	l, err := Open(Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var mu sync.Mutex
	ok, failed := map[string]bool{}, map[string]error{}
	appendN := func(prefix string, n int) {
		var wg sync.WaitGroup
		for g := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range n {
					id := fmt.Sprintf("%s-%d-%d", prefix, g, i)
					_, err := l.Append(Record{Kind: KindCallStart, CallID: id, Tool: "think", ArgsDigest: Digest([]byte(id))})
					mu.Lock()
					if err == nil {
						ok[id] = true
					} else {
						failed[id] = err
					}
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
	}
	appendN("before", 5)
	if len(failed) > 0 {
		t.Fatalf("appends failed with room on the disk: %v", failed)
	}
	filler := testenv.Fill(t, fs, "filler")
	appendN("full", 20)
	if len(failed) == 0 {
		t.Fatal("no append failed on a full disk")
	}
	for id, err := range failed {
		if !errors.Is(err, errdefs.ErrUnavailable) || !strings.Contains(err.Error(), "no space left on device") || strings.Contains(err.Error(), fs+"/") {
			t.Fatalf("%s: %v; want UNAVAILABLE saying the disk is full, without toold's paths", id, err)
		}
		break
	}
	assertWhole(t, dir)
	if _, err := Verify(dir); err != nil {
		t.Fatalf("verify while the disk is full: %v", err)
	}
	lost := len(failed)

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	r, err := l.Append(Record{Kind: KindCallStart, CallID: "after"})
	if err != nil {
		t.Fatalf("append after space came back: %v", err)
	}
	ok["after"] = true
	if _, err := Verify(dir); err != nil {
		t.Fatal(err)
	}
	recs, err := Tail(dir, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	var recovered *Record
	told := 0 // the records the audit.recovered records say were lost
	for i, rec := range recs {
		switch {
		case rec.Kind == KindRecovered:
			// A small record can fit while the disk is nearly full: then an
			// audit.recovered record is written before the disk frees, and
			// the next one counts only what was lost after it.
			recovered = &recs[i]
			if m := regexp.MustCompile(`^(\d+) records could not be written`).FindStringSubmatch(rec.Detail); m != nil {
				n, _ := strconv.Atoi(m[1])
				told += n
			}
		case failed[rec.CallID] != nil:
			t.Errorf("record %s is in the log, but its Append failed: %v", rec.CallID, failed[rec.CallID])
		}
		seen[rec.CallID] = true
	}
	for id := range ok {
		if !seen[id] {
			t.Errorf("record %s is not in the log, but its Append returned", id)
		}
	}
	if recovered == nil || recovered.Seq != r.Seq-1 || told != lost || !strings.Contains(recovered.Detail, "no space left on device") {
		t.Fatalf("want audit.recovered records, the last right before %d, saying %d records were lost (they say %d): %+v", r.Seq, lost, told, recovered)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	// Reopened, the chain goes on.
	write(t, Config{Dir: dir}, 3)
	if _, err := Verify(dir); err != nil {
		t.Fatal(err)
	}
}

// assertWhole fails t unless every file of the log ends with a newline.
func assertWhole(t *testing.T, dir string) {
	t.Helper()
	files, err := listFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f.path)
		if err != nil {
			t.Fatal(err)
		}
		if len(b) > 0 && !bytes.HasSuffix(b, []byte("\n")) {
			t.Fatalf("%s ends in a torn line: %q", f.path, b[max(0, len(b)-80):])
		}
	}
}

// Retention by size removes the oldest files after a rotation; the chain
// still verifies, and Verify names what was pruned. Removing the first
// kept file as well is found (the pruned record does not vouch for it);
// so is an audit.pruned record whose hash does not match.
func TestRetentionBySize(t *testing.T) {
	dir := prunedLog(t)
	rep, err := Verify(dir)
	if err != nil {
		t.Fatal(err)
	}
	if rep.First <= 1 || rep.Pruned == nil || rep.Pruned.PrunedThrough != rep.First-1 || !strings.Contains(rep.Pruned.Detail, "max_bytes 3000") {
		t.Fatalf("want a pruned start named by an audit.pruned record: %+v %+v", rep, rep.Pruned)
	}
	files, _ := listFiles(dir)
	if files[0].no == 1 {
		t.Fatalf("the first file was kept: %v", files)
	}

	// Someone removes the first kept file too: records are missing.
	if err := os.Remove(files[0].path); err != nil {
		t.Fatal(err)
	}
	var te *TamperError
	if _, err := Verify(dir); !errors.As(err, &te) || te.Kind != Removed || te.Seq != 1 {
		t.Fatalf("after removing a kept file: %v", err)
	}
}

// A retention pass appends its audit.pruned record before it removes the
// files, so between the two (or after a crash between them) the newest
// audit.pruned record names records still on disk while an older one
// vouches for the start of the log: Verify passes and reports the older.
// (toolctl audit verify, run while toold pruned, failed on this once in CI.)
func TestRetentionPassInProgress(t *testing.T) {
	dir := prunedLog(t)
	before, err := Verify(dir)
	if err != nil || before.First <= 1 {
		t.Fatalf("%+v %v", before, err)
	}
	// The next pass, stopped after its record: it names the last record
	// of the first file kept, which is still there. (Reopened without a
	// retention, so that no pass runs meanwhile.)
	l, err := Open(Config{Dir: dir, MaxFileBytes: 1000})
	if err != nil {
		t.Fatal(err)
	}
	files, _ := listFiles(dir)
	seq, hash, err := lastRecord(files[0].path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.AppendSync(Record{Kind: KindPruned, PrunedThrough: seq, PrunedHash: hash, Detail: "a pass in progress"}); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	rep, err := Verify(dir)
	if err != nil {
		t.Fatalf("verify during a retention pass: %v", err)
	}
	if rep.First != before.First || rep.Pruned == nil || rep.Pruned.PrunedThrough != rep.First-1 {
		t.Fatalf("want the audit.pruned record that vouches for the start: %+v %+v", rep, rep.Pruned)
	}
	// The in-progress record is still checked against the record it names.
	files, _ = listFiles(dir)
	lines := readLines(t, files[len(files)-1].path)
	for i, ln := range lines {
		if bytes.Contains(ln, []byte(`"a pass in progress"`)) {
			lines[i] = bytes.Replace(ln, []byte(`"pruned_hash":"`), []byte(`"pruned_hash":"0`), 1)
		}
	}
	writeLines(t, files[len(files)-1].path, lines)
	if _, err := Verify(dir); err == nil {
		t.Fatal("verify passed with an edited audit.pruned record")
	}
}

// Retention by age removes files whose last record is older than MaxAge
// (by their modification time); toold reopened later prunes at Open.
func TestRetentionByAge(t *testing.T) {
	dir := t.TempDir()
	write(t, Config{Dir: dir, MaxFileBytes: 1000}, 40)
	before, _ := listFiles(dir)
	old := time.Now().Add(-48 * time.Hour)
	for _, f := range before[:len(before)-1] {
		if err := os.Chtimes(f.path, old, old); err != nil {
			t.Fatal(err)
		}
	}
	l, err := Open(Config{Dir: dir, MaxFileBytes: 1000, MaxAge: 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	testenv.Poll(t, 10*time.Second, "the old files to be pruned", func() bool {
		files, _ := listFiles(dir)
		return len(files) == 1
	})
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	rep, err := Verify(dir)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Pruned == nil || !strings.Contains(rep.Pruned.Detail, "max_age 24h0m0s") || rep.Pruned.PrunedThrough != rep.First-1 {
		t.Fatalf("%+v %+v", rep, rep.Pruned)
	}
	// An edited hash in the pruned record: the start is not vouched for.
	files, _ := listFiles(dir)
	lines := readLines(t, files[0].path)
	for i, ln := range lines {
		if bytes.Contains(ln, []byte(`"audit.pruned"`)) {
			lines[i] = bytes.Replace(ln, []byte(`"pruned_hash":"`), []byte(`"pruned_hash":"0`), 1)
		}
	}
	writeLines(t, files[0].path, lines)
	if _, err := Verify(dir); err == nil {
		t.Fatal("verify passed with an edited audit.pruned record")
	}
}

// prunedLog writes 80 records to a log in a new directory with 1000-byte
// files and a 3000-byte retention, waits until the pruner made it fit,
// closes it and returns the directory.
func prunedLog(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	l, err := Open(Config{Dir: dir, MaxFileBytes: 1000, MaxTotalBytes: 3000})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 80 {
		if _, err := l.Append(Record{Kind: KindCallEnd, CallID: strconv.Itoa(i), Tool: "think", Outcome: "success"}); err != nil {
			t.Fatal(err)
		}
	}
	// The pruner runs after each rotation; wait until the log fits.
	testenv.Poll(t, 10*time.Second, "the log to be pruned to 3000 bytes", func() bool {
		return dirBytes(t, dir) <= 3000+1000
	})
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

func dirBytes(t *testing.T, dir string) int64 {
	files, err := listFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, f := range files {
		if fi, err := os.Stat(f.path); err == nil {
			n += fi.Size()
		}
	}
	return n
}

// On a full disk, records Enqueue left to a later write are not lost
// silently: the audit.recovered record written once the disk has room
// counts every one missing from the log; and an AppendAll (a call's
// decision and start) fails, so the call would not run, and leaves no
// call.start behind.
func TestFullDiskEnqueued(t *testing.T) {
	fs := testenv.SmallFS(t, 256<<10)
	dir := filepath.Join(fs, "audit")
	l, err := Open(Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if _, err := l.Append(Record{Kind: KindCallStart, CallID: "before"}); err != nil {
		t.Fatal(err)
	}
	filler := testenv.Fill(t, fs, "filler")
	attempted := 1 // "before"
	var enqueued []string
	failed := map[string]error{}
	for i := range 50 {
		id := fmt.Sprint("end-", i)
		if err := l.Enqueue(Record{Kind: KindCallEnd, CallID: id}); err == nil {
			enqueued = append(enqueued, id)
			attempted++
		}
		id = fmt.Sprint("call-", i)
		attempted += 2
		if err := l.AppendAll(Record{Kind: KindDecision, CallID: id}, Record{Kind: KindCallStart, CallID: id}); err != nil {
			failed[id] = err
		}
	}
	if len(failed) == 0 {
		t.Fatal("no AppendAll failed on a full disk")
	}
	for id, err := range failed {
		if !errors.Is(err, errdefs.ErrUnavailable) || !strings.Contains(err.Error(), "no space left on device") {
			t.Fatalf("%s: %v; want UNAVAILABLE saying the disk is full", id, err)
		}
	}
	assertWhole(t, dir)

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(Record{Kind: KindCallStart, CallID: "after"}); err != nil {
		t.Fatalf("append after space came back: %v", err)
	}
	attempted++
	if _, err := Verify(dir); err != nil {
		t.Fatal(err)
	}
	recs, err := Tail(dir, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	told, ours := 0, 0
	for _, rec := range recs {
		if rec.Kind == KindRecovered {
			if m := regexp.MustCompile(`^(\d+) records could not be written`).FindStringSubmatch(rec.Detail); m != nil {
				n, _ := strconv.Atoi(m[1])
				told += n
			}
			continue
		}
		ours++
		seen[rec.Kind+" "+rec.CallID]++
		if rec.Kind == KindCallStart && failed[rec.CallID] != nil {
			t.Errorf("call.start %s is in the log, but its AppendAll failed: %v", rec.CallID, failed[rec.CallID])
		}
	}
	missingEnqueued := 0
	for _, id := range enqueued {
		if seen[KindCallEnd+" "+id] == 0 {
			missingEnqueued++
		}
	}
	if missingEnqueued == 0 {
		t.Fatal("every enqueued record was written on a full disk")
	}
	// Every record missing is told (an AppendAll refused before chaining
	// its second record adds one attempt that was never a record).
	if told < missingEnqueued || told > attempted-ours {
		t.Fatalf("audit.recovered records tell %d lost; %d enqueued records are missing, %d of %d records attempted", told, missingEnqueued, attempted-ours, attempted)
	}
}
