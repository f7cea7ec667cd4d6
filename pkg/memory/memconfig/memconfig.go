// Package memconfig is the memory plugin's configuration section
// ("memory:" in toold's YAML). It is owned by pkg/memory and imports nothing
// of toold's, so pkg/config and toolctl do not link SQLite or PostgreSQL.
package memconfig

import (
	"errors"
	"fmt"
	"net/url"
)

// Memory configures the storage of memory_operations (memories and todo
// lists). Zero values take the defaults noted.
//
//	memory:
//	  backend: sqlite          # sqlite (default), postgres, or off
//	  path: /var/lib/toold/memory.db   # sqlite; default STATE_DIR/memory.db
//	  dsn: "host=/run/postgresql dbname=toold"  # postgres (libpq URL or key=value; PGPASSWORD etc. apply)
//	  workspace_id: my-project # names the workspace; default its absolute path
//	  limits: {memory_bytes: 8192, scope_memories: 100000, scope_bytes: 67108864}
//	  embeddings:              # optional semantic ranking; off by default
//	    url: http://127.0.0.1:11434/v1/embeddings
//	    model: nomic-embed-text
//	    api_key_env: OPENAI_API_KEY
type Memory struct {
	// Backend is sqlite (default: a file under the state directory),
	// postgres (DSN; for agents on many machines sharing one memory), or
	// off (memory_operations is listed but its calls fail UNAVAILABLE).
	Backend string `yaml:"backend"`
	// Path is the SQLite database file (default STATE_DIR/memory.db).
	Path string `yaml:"path"`
	// DSN is the PostgreSQL connection string.
	DSN string `yaml:"dsn"`
	// WorkspaceID identifies the workspace for workspace-scoped memories
	// and todo lists (default: the workspace's absolute path). Set it when
	// toolds on different machines share a PostgreSQL memory and should
	// treat their checkouts of one project as one workspace.
	WorkspaceID string `yaml:"workspace_id"`
	// Limits bound what may be stored.
	Limits MemoryLimits `yaml:"limits"`
	// Embeddings, when URL is set, adds semantic ranking.
	Embeddings Embeddings `yaml:"embeddings"`
}

// MemoryLimits bound stored memories; see memory.Limits.
type MemoryLimits struct {
	MemoryBytes   int   `yaml:"memory_bytes"`
	ScopeMemories int   `yaml:"scope_memories"`
	ScopeBytes    int64 `yaml:"scope_bytes"`
}

// Embeddings configures an OpenAI-compatible /v1/embeddings endpoint.
type Embeddings struct {
	// URL of the endpoint (http or https).
	URL string `yaml:"url"`
	// Model is sent as "model".
	Model string `yaml:"model"`
	// APIKeyEnv names the environment variable that holds the API key, if
	// the endpoint needs one (the key itself is never in the config).
	APIKeyEnv string `yaml:"api_key_env"`
}

// Validate checks the memory settings.
func (m Memory) Validate() error {
	switch m.Backend {
	case "", "sqlite", "off":
	case "postgres":
		if m.DSN == "" {
			return errors.New("memory.backend postgres needs memory.dsn")
		}
	default:
		return fmt.Errorf("memory.backend %q: want sqlite, postgres or off", m.Backend)
	}
	if m.Embeddings.URL != "" {
		u, err := url.Parse(m.Embeddings.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("memory.embeddings.url %q: want an http(s) URL", m.Embeddings.URL)
		}
		if m.Embeddings.Model == "" {
			return errors.New("memory.embeddings needs a model")
		}
	}
	return nil
}
