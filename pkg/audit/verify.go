package audit

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// Problem kinds found by Verify.
const (
	// Edited: a record's bytes changed (it no longer decodes, or the next
	// record's prev hash, or the head's hash, does not match it).
	Edited = "edited"
	// Removed: records are missing (a gap in the sequence numbers).
	Removed = "removed"
	// Reordered: a record appears after one with a higher sequence number.
	Reordered = "reordered"
	// Truncated: the log ends before the last record the head file saw
	// fsynced, or a file ends in a torn line.
	Truncated = "truncated"
)

// TamperError is Verify's finding: the first record where the chain
// breaks, and how.
type TamperError struct {
	// Kind is Edited, Removed, Reordered or Truncated.
	Kind string
	// Seq is the sequence number of the first record affected: the edited
	// one, the first removed, the one out of place, or the first missing
	// at the end.
	Seq uint64
	// File and Line locate the record (or where it should be).
	File string
	Line int
	// Detail says what did not match.
	Detail string
}

func (e *TamperError) Error() string {
	return fmt.Sprintf("audit log %s: record %d (%s line %d): %s", e.Kind, e.Seq, e.File, e.Line, e.Detail)
}

// Report is what Verify checked.
type Report struct {
	// Records is how many records were read.
	Records uint64
	// Files is how many files.
	Files int
	// Last is the last record's sequence number, LastHash its hash.
	Last     uint64
	LastHash string
	// Head is the sequence number the head file names (0 without one).
	Head uint64
	// First is the first record's sequence number: above 1 when retention
	// pruned the records before it, which Pruned then describes.
	First uint64
	// Pruned is the audit.pruned record that vouches for the start of the
	// log (it names record First-1), or, when the log starts at record 1,
	// the newest one (nil when nothing was pruned).
	Pruned *Record
}

// Verify reads the whole log in dir and checks the chain: sequence numbers
// increase by one, each record's prev is the hash of the record before it,
// and the log reaches the record the head file names with the hash it
// names. It returns a *TamperError for the first record where that fails.
func Verify(dir string) (Report, error) {
	var rep Report
	files, err := listFiles(dir)
	if err != nil {
		return rep, err
	}
	rep.Files = len(files)
	type seen struct {
		seq  uint64
		hash string
		file string
		line int
	}
	var all []seen // kept to name reordered records and check the head
	var prev seen
	prev.hash = GenesisHash
	var found *TamperError
	gap := false // found is a gap in the sequence numbers
	// startGap: the first record is not record 1 (pruned or removed);
	// startPrev is its prev.
	var startGap *TamperError
	var startPrev string
	// prunes: every audit.pruned record, oldest first. A retention pass
	// appends its record before it removes the files, so the newest may
	// name records still on disk (a pass in progress, or stopped by a
	// crash) while an older one vouches for the start.
	var prunes []*Record
	err = eachLine(dir, func(ln line) bool {
		if ln.torn {
			found = &TamperError{Kind: Truncated, Seq: prev.seq + 1, File: ln.file, Line: ln.no,
				Detail: "the line has no end (the file was cut, or toold stopped mid-write; opening the log repairs a crash's torn line)"}
			return false
		}
		var r Record
		if err := json.Unmarshal(ln.raw, &r); err != nil || r.Seq == 0 {
			found = &TamperError{Kind: Edited, Seq: prev.seq + 1, File: ln.file, Line: ln.no, Detail: "the line is not a record"}
			return false
		}
		h := lineHash(ln.raw)
		cur := seen{seq: r.Seq, hash: h, file: ln.file, line: ln.no}
		rep.Records++
		switch {
		case r.Seq == prev.seq+1 && r.Prev == prev.hash:
		case r.Seq == prev.seq+1:
			if prev.seq == 0 {
				found = &TamperError{Kind: Removed, Seq: 1, File: ln.file, Line: ln.no, Detail: "the first record does not start the chain: records before it were removed"}
			} else {
				found = &TamperError{Kind: Edited, Seq: prev.seq, File: prev.file, Line: prev.line,
					Detail: fmt.Sprintf("its hash %.12s… is not the %.12s… that record %d carries", prev.hash, r.Prev, r.Seq)}
			}
		case r.Seq <= prev.seq:
			found = &TamperError{Kind: Reordered, Seq: r.Seq, File: ln.file, Line: ln.no,
				Detail: fmt.Sprintf("record %d comes after record %d", r.Seq, prev.seq)}
		case prev.seq == 0 && r.Seq > 1 && r.Prev != GenesisHash:
			// The log starts later: pruned, if an audit.pruned record
			// further on names exactly the record before it (checked at the
			// end), else removed.
			startGap = &TamperError{Kind: Removed, Seq: 1, File: ln.file, Line: ln.no,
				Detail: fmt.Sprintf("the log starts at record %d: records 1 to %d are missing, and no audit.pruned record says retention removed them", r.Seq, r.Seq-1)}
			startPrev = r.Prev
		default: // a gap: removed, unless the missing record comes later
			found = &TamperError{Kind: Removed, Seq: prev.seq + 1, File: ln.file, Line: ln.no,
				Detail: fmt.Sprintf("records %d to %d are missing before record %d", prev.seq+1, r.Seq-1, r.Seq)}
			if prev.seq == 0 && r.Prev != GenesisHash {
				found.Detail = fmt.Sprintf("the log starts at record %d: records 1 to %d are missing", r.Seq, r.Seq-1)
			}
			gap = true
		}
		if found != nil && found.Kind != Removed {
			return false
		}
		if rep.First == 0 {
			rep.First = r.Seq
		}
		if r.Kind == KindPruned {
			c := r
			prunes = append(prunes, &c)
		}
		all = append(all, cur)
		prev = cur
		return found == nil
	})
	if err != nil {
		return rep, err
	}
	if gap {
		// Read on: if the missing record turns up later, it was moved.
		if later := findSeq(dir, found.Seq); later != nil {
			found.Kind = Reordered
			found.File, found.Line = later.file, later.no
			found.Detail = fmt.Sprintf("record %d is out of place (it comes after record %d)", found.Seq, prev.seq)
		}
	}
	if found != nil {
		return rep, found
	}
	if n := len(prunes); n > 0 {
		rep.Pruned = prunes[n-1]
	}
	if startGap != nil {
		var vouch *Record
		for _, p := range prunes {
			if p.PrunedThrough == rep.First-1 && p.PrunedHash == startPrev {
				vouch = p
			}
		}
		if vouch == nil {
			if p := rep.Pruned; p != nil {
				startGap.Detail += fmt.Sprintf(" (the last audit.pruned record, %d, names record %d)", p.Seq, p.PrunedThrough)
			}
			return rep, startGap
		}
		rep.Pruned = vouch
	}
	for _, p := range prunes {
		if p.PrunedThrough < rep.First || p.PrunedThrough-rep.First >= uint64(len(all)) {
			continue
		}
		// Retention wrote its record but did not get to remove the files
		// (it is removing them now, or toold stopped): the record it names
		// must be the one kept.
		if s := all[p.PrunedThrough-rep.First]; s.hash != p.PrunedHash {
			return rep, &TamperError{Kind: Edited, Seq: s.seq, File: s.file, Line: s.line,
				Detail: fmt.Sprintf("its hash is not the one audit.pruned record %d carries", p.Seq)}
		}
	}
	rep.Last, rep.LastHash = prev.seq, prev.hash
	hd, err := readHead(dir)
	if err != nil {
		return rep, err
	}
	rep.Head = hd.Seq
	if hd.Seq > prev.seq {
		last := "the start"
		if prev.seq > 0 {
			last = fmt.Sprintf("record %d", prev.seq)
		}
		f, l := prev.file, prev.line+1
		if f == "" && len(files) > 0 {
			f = filepath.Base(files[len(files)-1].path)
		}
		return rep, &TamperError{Kind: Truncated, Seq: prev.seq + 1, File: f, Line: l,
			Detail: fmt.Sprintf("the log ends at %s but record %d was on disk", last, hd.Seq)}
	}
	if hd.Seq >= rep.First && hd.Seq > 0 {
		s := all[hd.Seq-rep.First]
		if s.seq == hd.Seq && s.hash != hd.Hash {
			return rep, &TamperError{Kind: Edited, Seq: s.seq, File: s.file, Line: s.line, Detail: "its hash is not the one the head file recorded"}
		}
	}
	return rep, nil
}

// findSeq returns the line holding record seq, if any.
func findSeq(dir string, seq uint64) *line {
	var hit *line
	_ = eachLine(dir, func(ln line) bool {
		var r Record
		if !ln.torn && json.Unmarshal(ln.raw, &r) == nil && r.Seq == seq {
			c := ln
			hit = &c
			return false
		}
		return true
	})
	return hit
}

func readHead(dir string) (head, error) {
	var h head
	b, err := os.ReadFile(filepath.Join(dir, "audit.head"))
	if errors.Is(err, os.ErrNotExist) {
		return h, nil
	}
	if err != nil {
		return h, err
	}
	if err := json.Unmarshal(b, &h); err != nil {
		return h, &TamperError{Kind: Edited, File: "audit.head", Line: 1, Detail: "the head file does not decode"}
	}
	return h, nil
}
