package daemon

import (
	"errors"
	"os"
	"path/filepath"

	pb "github.com/toold/toold/gen/toold/v1"
	"github.com/toold/toold/pkg/checkpoint"
	"github.com/toold/toold/pkg/executor"
	"github.com/toold/toold/pkg/service"
	"github.com/toold/toold/pkg/tools/fileops"
)

// recoverJournals rolls back the patches a killed toold left half-applied
// in the workspace (fileops.RecoverJournals) and returns the directory
// apply_patch journals in: patch-journal in the state directory, or ""
// (not journaled) without a usable state directory. It runs before any
// call can.
func (m *Main) recoverJournals() string {
	if m.memory.stateDir == "" {
		m.Logger.Warn("apply_patch is not journaled: no usable state directory; a patch interrupted by a crash may be left half-applied")
		return ""
	}
	dir := filepath.Join(m.memory.stateDir, "patch-journal")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		m.Logger.Warn("apply_patch is not journaled: the journal directory cannot be made; a patch interrupted by a crash may be left half-applied", "err", err)
		return ""
	}
	st, err := fileops.RecoverJournals(m.ws, dir, m.Logger)
	if err != nil {
		m.Logger.Warn("rolling back interrupted patches", "dir", dir, "err", err)
	}
	if st.Journals > 0 {
		m.Logger.Warn("rolled back patches interrupted by a crash", "patches", st.Journals, "restored", st.Restored,
			"removed", st.Removed, "left_changed_since", st.Left)
	}
	return dir
}

// checkpointState is the recorder of the workspace's changes.
type checkpointState struct {
	rec *checkpoint.Recorder // nil: off, or it could not start (err says why)
	err error
	tmp string // a store directory made because the state directory is unusable
}

// startCheckpoints starts recording what calls change in the workspace
// (checkpoints; docs/rewind.md), its content store in the state
// directory. Recording that cannot start leaves toold running without it:
// the CheckpointService says why.
func (m *Main) startCheckpoints() {
	cfg := m.Config.Checkpoints
	if cfg.Disable {
		m.checkpts.err = errors.New("turned off (checkpoints.disable)")
		return
	}
	dir := ""
	if m.memory.stateDir != "" {
		dir = filepath.Join(m.memory.stateDir, "checkpoints")
	} else {
		tmp, err := os.MkdirTemp("", "toold-checkpoints-")
		if err != nil {
			m.checkpts.err = err
			return
		}
		m.checkpts.tmp, dir = tmp, tmp
	}
	// The workspace's secrets are masked in the sandbox: their contents are
	// kept for rewinds but never served in a diff.
	var secret func(string) bool
	if s := m.Capabilities.Sensitivity; s != nil {
		secret = s.Sensitive
	}
	rec, err := checkpoint.New(checkpointConfig(cfg, m.ws.Dir(), dir, m.Logger, secret)) // sections.go
	if err != nil {
		m.checkpts.err = err
		m.Logger.Warn("checkpoints off: the store cannot be opened", "dir", dir, "err", err)
		return
	}
	m.checkpts.rec = rec
}

// checkpointer is the executor's recorder (nil when there is none: a nil
// *checkpoint.Recorder must not become a non-nil interface).
func (m *Main) checkpointer() executor.Checkpointer {
	if m.checkpts.rec == nil {
		return nil
	}
	return m.checkpts.rec
}

func (m *Main) registerCheckpoints() {
	var cp service.Checkpoints
	if m.checkpts.rec != nil {
		cp = m.checkpts.rec
	}
	pb.RegisterCheckpointServiceServer(m.grpc, service.NewCheckpointServer(cp, m.checkpts.err, m.access))
}

// Checkpoints returns the recorder of the workspace's changes (nil when
// checkpoints are off).
func (m *Main) Checkpoints() *checkpoint.Recorder { return m.checkpts.rec }

func (m *Main) closeCheckpoints() error {
	var err error
	if m.checkpts.rec != nil {
		err = m.checkpts.rec.Close()
		m.checkpts.rec = nil
	}
	if m.checkpts.tmp != "" {
		os.RemoveAll(m.checkpts.tmp)
		m.checkpts.tmp = ""
	}
	return err
}
