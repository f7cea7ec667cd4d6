package daemon

import (
	"context"
	"errors"
	"path/filepath"

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

// openMemory sets up memory_operations and the MemoryService over the
// configured backend, which is opened on the first memory call (see
// memory.Lazy): a daemon that never uses memory pays nothing for it. A
// backend that cannot be opened does not stop the daemon: its error goes to
// the log, memory calls end UNAVAILABLE (without paths or hosts) and are
// retried, every other tool works. memory.backend off lists the tool but
// every call fails UNAVAILABLE.
func (m *Main) openMemory() {
	cfg := m.Config.Memory
	ws := cfg.WorkspaceID
	if ws == "" {
		ws = m.ws.Dir()
	}
	if cfg.Backend == "off" {
		off := errors.New("memory is turned off in toold's configuration")
		m.memory.tool = memops.New(nil, ws, off)
		m.memory.server = service.NewMemoryServer(nil, ws, off, m.access)
		return
	}
	open := func(ctx context.Context) (memory.Backend, error) {
		if cfg.Backend == "postgres" {
			return memory.OpenPostgres(ctx, cfg.DSN)
		}
		path := cfg.Path
		if path == "" {
			path = filepath.Join(m.memory.stateDir, "memory.db")
		}
		return memory.OpenSQLite(ctx, path)
	}
	m.memory.store = memory.New(memory.Config{
		Backend:  memory.Lazy(open),
		Limits:   memoryLimits(cfg),
		Embedder: memoryEmbedder(cfg),
		Logger:   m.Logger,
	})
	m.memory.tool = memops.New(m.memory.store, ws, nil)
	m.memory.server = service.NewMemoryServer(m.memory.store, ws, nil, m.access)
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
