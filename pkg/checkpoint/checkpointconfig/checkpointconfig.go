// Package checkpointconfig is the checkpoint recorder's configuration
// section ("checkpoints:" in toold's YAML; docs/rewind.md). It is owned by
// pkg/checkpoint and imports nothing of toold's, so pkg/config and toolctl
// do not link the recorder.
package checkpointconfig

import "fmt"

// Checkpoints configures the recording of what calls change in the
// workspace, which lets a client see a call's changes and rewind a
// conversation.
//
//	checkpoints:
//	  disable: false            # true records nothing (and rewind is UNAVAILABLE)
//	  max_bytes: 1073741824     # the content store's bound; the oldest records go first
//	  max_file_bytes: 16777216  # larger files are tracked but not kept (not rewindable)
//	  max_calls: 1000           # records kept per conversation, the newest
//
// Zero values take the recorder's defaults (checkpoint.Config).
type Checkpoints struct {
	Disable      bool  `yaml:"disable"`
	MaxBytes     int64 `yaml:"max_bytes"`
	MaxFileBytes int64 `yaml:"max_file_bytes"`
	MaxCalls     int   `yaml:"max_calls"`
}

// Validate checks the section on its own.
func (c Checkpoints) Validate() error {
	if c.MaxBytes < 0 || c.MaxFileBytes < 0 || c.MaxCalls < 0 {
		return fmt.Errorf("checkpoints: max_bytes, max_file_bytes and max_calls must not be negative")
	}
	return nil
}
