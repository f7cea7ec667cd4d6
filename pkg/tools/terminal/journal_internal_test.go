package terminal

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The call journal: a toold that dies leaves the commands started and not
// ended, which the next one reports as interrupted; a file of the older
// one-command form is read too; an idle journal past journalCompact is
// emptied; close removes it.
func TestCallJournal(t *testing.T) {
	dir := t.TempDir()
	j := &callJournal{dir: dir}
	started := time.Now().UTC().Truncate(time.Second)
	proc := func(id, cmd string) *process {
		return &process{id: id, conv: "conv", callID: "call-" + id, command: cmd, started: started}
	}
	if !j.start(proc("p1", "make")) || !j.start(proc("p2", "sleep 100")) {
		t.Fatal("start not recorded")
	}
	j.end("p1")
	// An older toold's file, and a line cut short by a crash.
	if err := os.WriteFile(filepath.Join(dir, journalPrefix+"proc-old.json"), []byte(`{"Conversation":"c0","CallID":"old","Command":"npm test","Started":"2026-11-27T10:00:00Z"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := j.f.WriteString(`{"id":"p3","Conversation":"co`); err != nil {
		t.Fatal(err)
	}
	// toold dies here: the next Manager reads what is in the directory.
	next := &Manager{}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), journalPrefix) {
			next.interruptedCall(filepath.Join(dir, e.Name()))
		}
	}
	var got []string
	for _, c := range next.Interrupted() {
		got = append(got, c.CallID+":"+c.Command)
	}
	if strings.Join(got, ",") != "call-p2:sleep 100,old:npm test" && strings.Join(got, ",") != "old:npm test,call-p2:sleep 100" {
		t.Fatalf("interrupted %q, want call-p2 and old", got)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("journals left after they were read: %v", ents)
	}

	// Compaction, and close.
	j = &callJournal{dir: dir}
	long := strings.Repeat("x", 4096)
	for i := 0; j.size <= journalCompact && i < 1000; i++ {
		p := proc(newID("proc-"), long)
		if !j.start(p) {
			t.Fatal("start not recorded")
		}
		j.end(p.id)
	}
	if fi, err := j.f.Stat(); err != nil || fi.Size() > journalCompact {
		t.Fatalf("journal not emptied when idle past %d bytes: %v %v", journalCompact, fi.Size(), err)
	}
	name := j.f.Name()
	j.close()
	if _, err := os.Stat(name); !os.IsNotExist(err) {
		t.Fatalf("journal left after close: %v", err)
	}
	j.end("late") // a command ending after close records nothing
}
