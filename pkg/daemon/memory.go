package daemon

import (
	"context"
	"errors"
	"path/filepath"
	"time"

	"github.com/toold/toold/pkg/memory"
	"github.com/toold/toold/pkg/service"
	"github.com/toold/toold/pkg/tools/memops"
)

// memoryState is memory_operations' storage and the MemoryService.
type memoryState struct {
	// stateDir is toold's state directory (config.StateDir).
	stateDir string
	store    *memory.Store
	tool     *memops.MemoryOperations
	server   *service.MemoryServer
}

// openMemory opens the configured memory backend. A backend that cannot be
// opened does not stop the daemon: the error is logged, memory_operations
// stays listed and its calls (and MemoryService) fail UNAVAILABLE with the
// reason, and every other tool works.
func (m *Main) openMemory(ctx context.Context) {
	cfg := m.Config.Memory
	ws := cfg.WorkspaceID
	if ws == "" {
		ws = m.ws.Dir()
	}
	var (
		b   memory.Backend
		err error
	)
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	switch cfg.Backend {
	case "off":
		err = errors.New("memory.backend is off in the configuration")
	case "postgres":
		b, err = memory.OpenPostgres(ctx, cfg.DSN)
	default:
		path := cfg.Path
		if path == "" {
			path = filepath.Join(m.memory.stateDir, "memory.db")
		}
		b, err = memory.OpenSQLite(ctx, path)
	}
	if err != nil {
		// The reason may name hosts, users or paths: it goes to the log;
		// models and clients get a sentence without them.
		public := errors.New("memory is turned off in toold's configuration")
		if cfg.Backend != "off" {
			m.Logger.Error("memory unavailable", "backend", cfg.Backend, "err", err)
			public = errors.New("toold could not open its memory database at start; the reason is in toold's log")
		}
		m.memory.tool = memops.New(nil, ws, public)
		m.memory.server = service.NewMemoryServer(nil, ws, public)
		return
	}
	m.memory.store = memory.New(memory.Config{
		Backend:  b,
		Limits:   cfg.StoreLimits(),
		Embedder: cfg.Embedder(),
		Logger:   m.Logger,
	})
	m.memory.tool = memops.New(m.memory.store, ws, nil)
	m.memory.server = service.NewMemoryServer(m.memory.store, ws, nil)
}

// closeMemory ends todo watches and closes the backend; it is safe to call
// more than once.
func (m *Main) closeMemory() error {
	if m.memory.server != nil {
		m.memory.server.Shutdown()
	}
	s := m.memory.store
	m.memory.store = nil
	if s == nil {
		return nil
	}
	return s.Close()
}
