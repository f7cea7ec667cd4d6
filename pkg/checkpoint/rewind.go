package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/toold/toold/pkg/leftover"
)

// RewindOptions say how to rewind.
type RewindOptions struct {
	// DryRun computes what would be done and changes nothing.
	DryRun bool
	// Force restores paths in conflict too, overwriting what changed them
	// outside the conversation (the person's choice, never the default).
	Force bool
}

// Action is what a rewind does to one path.
type Action struct {
	Path string
	// Op is "remove", "create", "restore" (a file's content), "replace"
	// (a different kind of entry), "chmod", or "none" when nothing is
	// left to do.
	Op string
	// Current is the path's state now; Target the state it gets back.
	Current, Target State
	// Conflict, when set, says why the path is left alone (without Force):
	// something outside the conversation changed it.
	Conflict string
	// Err, when set, says why restoring the path failed or cannot be done.
	Err string
	// Done says the path was restored.
	Done bool
}

// RewindReport is what a rewind did, or would do.
type RewindReport struct {
	// Calls are the calls undone, newest first.
	Calls []string
	// Actions, one per path, in the order they are applied.
	Actions []Action
	// Applied says the workspace was changed (not a dry run).
	Applied bool
}

// Conflicts counts the actions left alone or failed.
func (rep *RewindReport) Conflicts() int {
	n := 0
	for _, a := range rep.Actions {
		if !a.Done && (a.Conflict != "" || a.Err != "") {
			n++
		}
	}
	return n
}

type pathHistory struct {
	changes []Change
	callIDs []string
}

// Rewind restores the workspace to what it was before the call callID of
// conversation: that call's changes and those of the conversation's later
// calls are undone, newest first (in effect: each path they changed gets
// its state from before the first of them). A path changed since by
// anything outside the conversation (a person, another conversation, a
// background process after its call ended) is a conflict: reported and
// left alone unless opts.Force. The records of the undone calls are
// removed once every path was restored. ErrNotFound for an unknown call;
// ErrDropped when its record was dropped (the store's bounds); ErrRunning
// while a call of the conversation runs.
func (r *Recorder) Rewind(ctx context.Context, conversation, callID string, opts RewindOptions) (*RewindReport, error) {
	if err := r.Ready(ctx); err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, errors.New("checkpoints closed")
	}
	for _, w := range r.open {
		if w.call.Conversation == conversation {
			return nil, fmt.Errorf("%w: call %q of the conversation is running; rewind once it has ended", ErrRunning, w.call.CallID)
		}
	}
	var from *Call
	for _, c := range r.calls {
		if c.Conversation == conversation && c.CallID == callID {
			from = c
		}
	}
	if from == nil {
		if r.dropped[conversation] > 0 {
			return nil, fmt.Errorf("%w: the record of call %q is gone: the oldest records of conversation %q were dropped to keep within the checkpoint store's bounds (checkpoints.max_bytes, checkpoints.max_calls)", ErrDropped, callID, conversation)
		}
		return nil, fmt.Errorf("%w: no record of call %q in conversation %q (calls that cannot change the workspace are not recorded)", ErrNotFound, callID, conversation)
	}
	r.sync()

	var undone []*Call
	for _, c := range r.calls {
		if c.Conversation == conversation && c.Seq >= from.Seq {
			undone = append(undone, c)
		}
	}
	slices.SortFunc(undone, func(a, b *Call) int { return int(a.Seq) - int(b.Seq) })
	rep := &RewindReport{Applied: !opts.DryRun}
	hist := map[string]*pathHistory{}
	for i := len(undone) - 1; i >= 0; i-- {
		rep.Calls = append(rep.Calls, undone[i].CallID)
	}
	for _, c := range undone {
		for _, ch := range c.Changes {
			h := hist[ch.Path]
			if h == nil {
				h = &pathHistory{}
				hist[ch.Path] = h
			}
			h.changes = append(h.changes, ch)
			h.callIDs = append(h.callIDs, c.CallID)
		}
	}
	for p, h := range hist {
		a := Action{Path: p, Current: r.manifest[p], Target: h.changes[0].Before}
		for i := 1; i < len(h.changes); i++ {
			if !h.changes[i].Before.Same(h.changes[i-1].After) {
				a.Conflict = fmt.Sprintf("changed outside this conversation between calls %s and %s", h.callIDs[i-1], h.callIDs[i])
			}
		}
		last := len(h.changes) - 1
		if !a.Current.Same(h.changes[last].After) {
			a.Conflict = fmt.Sprintf("changed since call %s by something outside this conversation (now %s)", h.callIDs[last], describe(a.Current))
		}
		a.Op = opOf(a.Current, a.Target)
		switch {
		case a.Op == "none":
			a.Conflict = ""
		case a.Target.Kind == File && a.Target.Hash == "":
			a.Err = fmt.Sprintf("its content before was not kept (larger than %d bytes)", r.cfg.MaxFileBytes)
		case a.Target.Kind == Other:
			a.Err = "it was a FIFO, socket or device, which a rewind does not make"
		}
		rep.Actions = append(rep.Actions, a)
	}
	// Removals deepest first, then what is made, parents first.
	removes := func(a Action) bool { return a.Op == "remove" || a.Op == "replace" }
	slices.SortFunc(rep.Actions, func(a, b Action) int {
		switch ra, rb := removes(a), removes(b); {
		case ra && !rb:
			return -1
		case rb && !ra:
			return 1
		case ra && rb:
			return strings.Compare(b.Path, a.Path)
		}
		return strings.Compare(a.Path, b.Path)
	})
	if opts.DryRun {
		return rep, nil
	}
	// Removals first (a replaced entry goes in this pass), then creations.
	for pass := range 2 {
		for i := range rep.Actions {
			a := &rep.Actions[i]
			if a.Op == "none" || a.Err != "" || (a.Conflict != "" && !opts.Force) {
				continue
			}
			var err error
			switch {
			case pass == 0 && removes(*a):
				err = r.root.Remove(a.Path)
				if errors.Is(err, fs.ErrNotExist) {
					err = nil
				}
				if errors.Is(err, unix.ENOTEMPTY) || errors.Is(err, unix.EEXIST) {
					a.Conflict = "the directory holds entries no undone call made; left alone"
					a.Op = "none"
					continue
				}
				if a.Op == "remove" && err == nil {
					a.Done = true
				}
			case pass == 1 && a.Op != "remove":
				err = r.restore(a.Path, a.Current, a.Target)
				if err == nil {
					a.Done = true
				}
			}
			if err != nil {
				a.Err = err.Error()
			}
		}
	}
	// The rewind's own changes belong to no call.
	r.sync()
	r.pending = slices.DeleteFunc(r.pending, func(p pending) bool {
		if p.at == r.tick {
			r.blobs.unref(p.Before)
			r.blobs.unref(p.After)
			return true
		}
		return false
	})
	if rep.Conflicts() == 0 {
		for _, c := range undone {
			if i := slices.Index(r.calls, c); i >= 0 {
				for _, ch := range c.Changes {
					r.blobs.unref(ch.Before)
					r.blobs.unref(ch.After)
				}
				r.meta -= recordSize(c)
				r.calls = slices.Delete(r.calls, i, i+1)
			}
		}
	}
	r.blobs.sweep()
	return rep, nil
}

func opOf(cur, target State) string {
	switch {
	case cur.Same(target):
		return "none"
	case target.Kind == Absent:
		return "remove"
	case cur.Kind == Absent:
		return "create"
	case cur.Kind != target.Kind:
		return "replace"
	case target.Kind == File && cur.Hash != target.Hash:
		return "restore"
	case target.Kind == Symlink:
		return "replace"
	}
	return "chmod"
}

func describe(s State) string {
	switch s.Kind {
	case Absent:
		return "absent"
	case File:
		return fmt.Sprintf("a file of %d bytes, mode %04o", s.Size, s.Mode)
	case Dir:
		return fmt.Sprintf("a directory, mode %04o", s.Mode)
	case Symlink:
		return "a symlink to " + s.Target
	}
	return "a special file"
}

// fileMode converts st_mode permission bits to an fs.FileMode.
func fileMode(m uint32) fs.FileMode {
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

// restore makes p what target says (after removals: p is absent unless it
// is of target's kind).
func (r *Recorder) restore(p string, cur, target State) error {
	switch target.Kind {
	case Dir:
		if cur.Kind != Dir {
			if err := r.root.Mkdir(p, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
				return err
			}
		}
		return r.root.Chmod(p, fileMode(target.Mode))
	case Symlink:
		if cur.Kind == Symlink {
			if err := r.root.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
		}
		return r.root.Symlink(target.Target, p)
	case File:
		if cur.Kind == File && cur.Hash == target.Hash {
			return r.root.Chmod(p, fileMode(target.Mode))
		}
		data, err := r.blobs.get(target.Hash)
		if err != nil {
			return fmt.Errorf("its content is missing from the store: %w", err)
		}
		dir, name := path.Split(p)
		tmp := fmt.Sprintf("%s.%s.toold-%s-%012x.tmp", dir, name, leftover.Mark(), rand.Uint64()&(1<<48-1))
		f, err := r.root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|unix.O_NOFOLLOW, 0o600)
		if err != nil {
			return err
		}
		_, err = f.Write(data)
		if err == nil {
			err = f.Chmod(fileMode(target.Mode))
		}
		if err == nil {
			err = f.Sync()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = r.root.Rename(tmp, p)
		}
		if err != nil {
			r.root.Remove(tmp)
		}
		return err
	}
	return fmt.Errorf("cannot make %s", describe(target))
}
