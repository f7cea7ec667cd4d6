package fileops

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math/rand/v2"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/toold/toold/pkg/leftover"
	"github.com/toold/toold/pkg/workspace"
)

// The patch journal: apply_patch across many files, all or nothing across
// a crash.
//
// Each file of a patch is written atomically (atomic.go), but a toold
// killed between two of them would leave some files patched and others
// not. So before its first write a patch writes a journal to the journal
// directory (Options.JournalDir, in toold's state directory): for every
// file it will touch, its path relative to the workspace, whether it
// existed, its mode and content before (the before-image), the SHA-256 of
// what the patch writes there (absent for a deletion), and the
// directories the patch will create; the journal is synced, and the
// directory, before any file is touched. Once every file is written the
// journal is removed. At start (RecoverJournals) a journal left behind is
// rolled back: each file the patch wrote or deleted gets its before-image
// again, each file it created is removed, then the directories it made
// where empty. A file whose content is neither the before-image nor what
// the patch wrote was changed by someone else since: it is left alone and
// logged. Rolling back, not forward, because the patch's call never got a
// result: for its client it did not happen.
//
// Without a journal directory (tests, or a toold whose state directory is
// unusable) patches are not journaled.

// journal is the record of one patch in flight.
type journal struct {
	Workspace string         `json:"workspace"`
	Files     []journalEntry `json:"files"`
	// MadeDirs are the directories the patch creates, outermost first.
	MadeDirs []string `json:"made_dirs,omitempty"`
}

type journalEntry struct {
	// Path is relative to the workspace.
	Path    string `json:"path"`
	Existed bool   `json:"existed"`
	Mode    uint32 `json:"mode,omitempty"`
	Before  []byte `json:"before,omitempty"`
	// After is the SHA-256 (hex) of what the patch writes; empty: the
	// patch deletes the file.
	After string `json:"after,omitempty"`
}

// testCrashStep, when TOOLD_TEST_PATCH_CRASH_STEP is set to a step
// number, kills toold (SIGKILL) at that step of every patch it commits:
// 0 before the journal is written, 1 once it is, 2.. after each file, and
// the last after every file, before the journal is removed. It lets a test
// kill a real toold deterministically at every point of a patch.
func testCrashStep(step int) {
	v := os.Getenv("TOOLD_TEST_PATCH_CRASH_STEP")
	if v == "" {
		return
	}
	if n, err := strconv.Atoi(v); err == nil && n == step {
		unix.Kill(unix.Getpid(), unix.SIGKILL)
		select {} // until the signal lands
	}
}

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// beginJournal writes the journal of pl and returns the function that
// removes it once the patch is committed or undone. It returns a no-op
// when patches are not journaled, or when a file lies outside the
// workspace (only the workspace is rolled back).
func (f *FileOperations) beginJournal(pl *patchPlan) (func(), error) {
	if f.journalDir == "" {
		return func() {}, nil
	}
	j := journal{Workspace: f.ws.Dir()}
	made := map[string]bool{}
	for _, pf := range pl.files {
		if !pf.changed || (pf.existed && pf.exists && string(pf.orig) == pf.cur) || (!pf.existed && !pf.exists) {
			continue
		}
		if !pf.loc.Inside || pf.loc.Rel == "" || pf.loc.Rel == "." {
			return func() {}, nil
		}
		e := journalEntry{Path: pf.loc.Rel, Existed: pf.existed}
		if pf.existed {
			e.Mode, e.Before = pf.origSt.Mode&0o7777, pf.orig
		}
		if pf.exists {
			e.After = sha256Hex([]byte(pf.cur))
		}
		if !pf.existed {
			// The directories above it that do not exist yet.
			var missing []string
			for d := path.Dir(pf.loc.Rel); d != "." && d != "/"; d = path.Dir(d) {
				if _, err := f.ws.Root().Lstat(d); err == nil {
					break
				}
				missing = append(missing, d)
			}
			for i := len(missing) - 1; i >= 0; i-- {
				if !made[missing[i]] {
					made[missing[i]] = true
					j.MadeDirs = append(j.MadeDirs, missing[i])
				}
			}
		}
		j.Files = append(j.Files, e)
	}
	data, err := json.Marshal(j)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(f.journalDir, 0o700); err != nil {
		return nil, err
	}
	name := filepath.Join(f.journalDir, fmt.Sprintf("patch-%s-%012x.journal", leftover.Mark(), rand.Uint64()&(1<<48-1)))
	tmp := name + ".tmp"
	if err := writeSynced(tmp, data); err != nil {
		os.Remove(tmp)
		return nil, err
	}
	if err := os.Rename(tmp, name); err != nil {
		os.Remove(tmp)
		return nil, err
	}
	if err := syncDir(f.journalDir); err != nil {
		os.Remove(name)
		return nil, err
	}
	return func() {
		os.Remove(name)
		_ = syncDir(f.journalDir)
	}, nil
}

func writeSynced(name string, data []byte) error {
	w, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = w.Write(data)
	if err == nil {
		err = w.Sync()
	}
	return errors.Join(err, w.Close())
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// JournalStats says what RecoverJournals did.
type JournalStats struct {
	// Journals rolled back; Restored files given their before-image back,
	// Removed files the patches created; Left files left alone because
	// something else changed them since.
	Journals, Restored, Removed, Left int
}

// RecoverJournals rolls back every patch journal in dir that a toold left
// behind (killed mid-patch) for the workspace ws, and removes the
// journals. It must run before calls do (the daemon runs it at start,
// with its state directory locked); journals of another workspace are
// left alone.
func RecoverJournals(ws *workspace.Workspace, dir string, log *slog.Logger) (JournalStats, error) {
	var st JournalStats
	if dir == "" {
		return st, nil
	}
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return st, err
	}
	var errs []error
	for _, e := range ents {
		name := filepath.Join(dir, e.Name())
		if strings.HasSuffix(e.Name(), ".journal.tmp") {
			// Never complete: its patch touched nothing.
			os.Remove(name)
			continue
		}
		if !strings.HasSuffix(e.Name(), ".journal") {
			continue
		}
		data, err := os.ReadFile(name)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		var j journal
		if err := json.Unmarshal(data, &j); err != nil {
			log.Warn("a patch journal cannot be read; removed", "journal", name, "err", err)
			os.Remove(name)
			continue
		}
		if j.Workspace != ws.Dir() {
			continue
		}
		rollBack(ws, j, &st, log)
		st.Journals++
		if err := os.Remove(name); err != nil {
			errs = append(errs, err)
		}
	}
	if st.Journals > 0 {
		_ = syncDir(dir)
	}
	return st, errors.Join(errs...)
}

// rollBack gives every file of j its before-image again.
func rollBack(ws *workspace.Workspace, j journal, st *JournalStats, log *slog.Logger) {
	root := ws.Root()
	for _, e := range j.Files {
		cur, err := root.ReadFile(e.Path)
		exists := err == nil
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			log.Warn("rolling back a patch: a file cannot be read; left alone", "path", e.Path, "err", err)
			st.Left++
			continue
		}
		curSum := ""
		if exists {
			curSum = sha256Hex(cur)
		}
		switch {
		case e.Existed && exists && string(cur) == string(e.Before):
			// Not written yet; its mode may have been: set it again.
			_ = root.Chmod(e.Path, fileModeOf(e.Mode))
		case e.Existed && ((exists && curSum == e.After) || (!exists && e.After == "")):
			if err := restoreFile(root, e.Path, e.Before, e.Mode); err != nil {
				log.Warn("rolling back a patch: a file cannot be restored", "path", e.Path, "err", err)
				st.Left++
				continue
			}
			st.Restored++
		case !e.Existed && !exists:
		case !e.Existed && curSum == e.After:
			if err := root.Remove(e.Path); err != nil {
				st.Left++
				continue
			}
			st.Removed++
		default:
			log.Warn("rolling back a patch: a file changed since the patch began; left alone", "path", e.Path)
			st.Left++
		}
	}
	for i := len(j.MadeDirs) - 1; i >= 0; i-- {
		_ = root.Remove(j.MadeDirs[i]) // only where empty
	}
}

// restoreFile writes data with mode to rel atomically.
func restoreFile(root *os.Root, rel string, data []byte, mode uint32) error {
	if d := path.Dir(rel); d != "." {
		if err := root.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	tmp := path.Join(path.Dir(rel), tempName(path.Base(rel)))
	w, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return err
	}
	_, err = w.Write(data)
	if err == nil {
		err = w.Chmod(fileModeOf(mode))
	}
	if err == nil {
		err = w.Sync()
	}
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = root.Rename(tmp, rel)
	}
	if err != nil {
		root.Remove(tmp)
	}
	return err
}

// fileModeOf converts st_mode permission bits to an fs.FileMode.
func fileModeOf(m uint32) fs.FileMode {
	fm := fs.FileMode(m & 0o777)
	if m&unix.S_ISUID != 0 {
		fm |= fs.ModeSetuid
	}
	if m&unix.S_ISGID != 0 {
		fm |= fs.ModeSetgid
	}
	if m&unix.S_ISVTX != 0 {
		fm |= fs.ModeSticky
	}
	return fm
}
