package audit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// Pruned says what a retention pass removed.
type Pruned struct {
	// Files are the names of the files removed, oldest first.
	Files []string
	// Through and Hash name the last record removed.
	Through uint64
	Hash    string
	// Bytes is the size of the files removed.
	Bytes int64
}

// Prune applies the retention (Config.MaxTotalBytes, Config.MaxAge): it
// removes the oldest files — never the one being written — while the log
// is larger than MaxTotalBytes or their last record is older than MaxAge.
// Before it removes anything it appends, fsynced, an "audit.pruned" record
// naming the last record it removes and its hash (the prev of the first
// record kept), so Verify can tell a pruned start of the log from records
// removed by someone else. It returns what it removed (nil for nothing).
// The log runs it at Open, after every rotation and once a minute.
func (l *Log) Prune() (*Pruned, error) {
	if l.cfg.MaxTotalBytes <= 0 && l.cfg.MaxAge <= 0 {
		return nil, nil
	}
	l.pruneMu.Lock()
	defer l.pruneMu.Unlock()
	l.mu.Lock()
	current := l.fileNo
	l.mu.Unlock()
	files, err := listFiles(l.cfg.Dir)
	if err != nil {
		return nil, err
	}
	type sized struct {
		logFile
		size int64
		old  bool
	}
	var all []sized
	var total int64
	now := l.cfg.Now()
	for _, f := range files {
		fi, err := os.Stat(f.path)
		if err != nil {
			return nil, err
		}
		total += fi.Size()
		all = append(all, sized{logFile: f, size: fi.Size(), old: l.cfg.MaxAge > 0 && now.Sub(fi.ModTime()) > l.cfg.MaxAge})
	}
	var p Pruned
	var drop []string
	for _, f := range all {
		if f.no >= current || !(f.old || (l.cfg.MaxTotalBytes > 0 && total > l.cfg.MaxTotalBytes)) {
			break
		}
		if f.size > 0 {
			seq, hash, err := lastRecord(f.path)
			if err != nil {
				return nil, err
			}
			p.Through, p.Hash = seq, hash
		}
		drop = append(drop, f.path)
		p.Files = append(p.Files, filepath.Base(f.path))
		p.Bytes += f.size
		total -= f.size
	}
	if len(drop) == 0 {
		return nil, nil
	}
	if p.Through > 0 {
		why := []string{}
		if l.cfg.MaxTotalBytes > 0 {
			why = append(why, fmt.Sprintf("max_bytes %d", l.cfg.MaxTotalBytes))
		}
		if l.cfg.MaxAge > 0 {
			why = append(why, "max_age "+l.cfg.MaxAge.String())
		}
		names := p.Files[0]
		if len(p.Files) > 1 {
			names += " to " + p.Files[len(p.Files)-1]
		}
		if _, err := l.AppendSync(Record{Kind: KindPruned, PrunedThrough: p.Through, PrunedHash: p.Hash,
			Detail: fmt.Sprintf("retention (%s) removed %s: records through %d, %d bytes", strings.Join(why, ", "), names, p.Through, p.Bytes)}); err != nil {
			return nil, err
		}
	}
	for _, path := range drop {
		if err := os.Remove(path); err != nil {
			return nil, err
		}
	}
	if d, err := os.Open(l.cfg.Dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return &p, nil
}

// lastRecord returns the sequence number and hash of the last whole record
// of the file at path.
func lastRecord(path string) (uint64, string, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, "", err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, "", err
	}
	// A record is small; read the tail, more if one line does not fit.
	for n := int64(64 << 10); ; n *= 4 {
		off := max(fi.Size()-n, 0)
		b := make([]byte, fi.Size()-off)
		if _, err := f.ReadAt(b, off); err != nil && err != io.EOF {
			return 0, "", err
		}
		b = b[:bytes.LastIndexByte(b, '\n')+1]
		if len(b) == 0 {
			return 0, "", fmt.Errorf("audit: %s has no whole record", filepath.Base(path))
		}
		start := bytes.LastIndexByte(b[:len(b)-1], '\n')
		if start < 0 && off > 0 {
			continue
		}
		line := b[start+1 : len(b)-1]
		var r Record
		if err := json.Unmarshal(line, &r); err != nil {
			return 0, "", fmt.Errorf("audit: the last record of %s does not decode: %w", filepath.Base(path), err)
		}
		return r.Seq, lineHash(line), nil
	}
}
