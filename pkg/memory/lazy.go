package memory

import (
	"context"
	"errors"
	"sync"
	"time"
)

// Lazy returns a Backend that opens the real one with open on first use,
// so that a daemon whose agents never use memory neither pays for opening
// it at start nor keeps it in memory. When open fails, the calls fail with
// its error and the next call at least a second later tries again (a
// database that comes up after toold is then used). open gets a context
// without the first caller's cancellation, bounded to 30 s.
func Lazy(open func(context.Context) (Backend, error)) Backend {
	return &lazy{open: open}
}

type lazy struct {
	open    func(context.Context) (Backend, error)
	mu      sync.Mutex
	b       Backend
	closed  bool
	lastErr error
	lastTry time.Time
}

var errClosed = errors.New("memory: closed")

func (l *lazy) get(ctx context.Context) (Backend, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.closed:
		return nil, errClosed
	case l.b != nil:
		return l.b, nil
	case l.lastErr != nil && time.Since(l.lastTry) < time.Second:
		return nil, l.lastErr
	}
	octx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	b, err := l.open(octx)
	l.lastTry = time.Now()
	if err != nil {
		l.lastErr = err
		return nil, err
	}
	l.b, l.lastErr = b, nil
	return b, nil
}

func (l *lazy) Insert(ctx context.Context, m *Memory, vec []float32, lim Limits) error {
	b, err := l.get(ctx)
	if err != nil {
		return err
	}
	return b.Insert(ctx, m, vec, lim)
}

func (l *lazy) Update(ctx context.Context, o Owner, id string, content *string, tags []string, vec []float32, now time.Time, lim Limits) (*Memory, error) {
	b, err := l.get(ctx)
	if err != nil {
		return nil, err
	}
	return b.Update(ctx, o, id, content, tags, vec, now, lim)
}

func (l *lazy) Delete(ctx context.Context, o Owner, id string) error {
	b, err := l.get(ctx)
	if err != nil {
		return err
	}
	return b.Delete(ctx, o, id)
}

func (l *lazy) Get(ctx context.Context, o Owner, ids []string) ([]Memory, error) {
	b, err := l.get(ctx)
	if err != nil {
		return nil, err
	}
	return b.Get(ctx, o, ids)
}

func (l *lazy) List(ctx context.Context, o Owner, f Filter, limit, offset int) ([]Memory, int, error) {
	b, err := l.get(ctx)
	if err != nil {
		return nil, 0, err
	}
	return b.List(ctx, o, f, limit, offset)
}

func (l *lazy) Search(ctx context.Context, o Owner, f Filter, terms []string, limit int) ([]Hit, error) {
	b, err := l.get(ctx)
	if err != nil {
		return nil, err
	}
	return b.Search(ctx, o, f, terms, limit)
}

func (l *lazy) Vectors(ctx context.Context, o Owner, f Filter, fn func(string, []float32)) error {
	b, err := l.get(ctx)
	if err != nil {
		return err
	}
	return b.Vectors(ctx, o, f, fn)
}

func (l *lazy) Todos(ctx context.Context, workspace, conversation string) (*TodoList, error) {
	b, err := l.get(ctx)
	if err != nil {
		return nil, err
	}
	return b.Todos(ctx, workspace, conversation)
}

func (l *lazy) SaveTodos(ctx context.Context, workspace, conversation string, change func(*TodoList) (*TodoList, error)) (*TodoList, error) {
	b, err := l.get(ctx)
	if err != nil {
		return nil, err
	}
	return b.SaveTodos(ctx, workspace, conversation, change)
}

func (l *lazy) TodoLists(ctx context.Context, workspace string, limit int) ([]*TodoList, error) {
	b, err := l.get(ctx)
	if err != nil {
		return nil, err
	}
	return b.TodoLists(ctx, workspace, limit)
}

// ListenTodos opens the backend (trying again every second while it
// cannot) and listens on it.
func (l *lazy) ListenTodos(ctx context.Context, changed func(TodoChange)) error {
	for {
		b, err := l.get(ctx)
		if err == nil {
			return b.ListenTodos(ctx, changed)
		}
		if errors.Is(err, errClosed) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// Close closes the backend if it was opened; later calls fail.
func (l *lazy) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	if l.b == nil {
		return nil
	}
	return l.b.Close()
}
