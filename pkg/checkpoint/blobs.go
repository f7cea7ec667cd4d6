package checkpoint

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
)

// blobs is the content store: one file per distinct content, named by its
// SHA-256, counted by the references the manifest and the records hold,
// and removed when the last goes. Callers hold the Recorder's lock.
type blobs struct {
	dir   string
	refs  map[string]int
	sizes map[string]int64
	bytes int64 // sum of sizes
}

func newBlobs(dir string) (*blobs, error) {
	// What an earlier toold left is not referenced by anything: the
	// records live as long as the process.
	if err := os.RemoveAll(dir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	return &blobs{dir: dir, refs: map[string]int{}, sizes: map[string]int64{}}, nil
}

func (b *blobs) path(h string) string { return filepath.Join(b.dir, h[:2], h[2:]) }

// put stores data under its hash h unless it is there.
func (b *blobs) put(h string, data []byte) error {
	if _, ok := b.sizes[h]; ok {
		return nil
	}
	p := b.path(h)
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return err
	}
	tmp := fmt.Sprintf("%s.%x.tmp", p, rand.Uint64())
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, p); err != nil {
		os.Remove(tmp)
		return err
	}
	b.sizes[h] = int64(len(data))
	b.bytes += int64(len(data))
	return nil
}

// get reads the content h.
func (b *blobs) get(h string) ([]byte, error) {
	if _, ok := b.sizes[h]; !ok {
		return nil, fs.ErrNotExist
	}
	return os.ReadFile(b.path(h))
}

func (b *blobs) ref(s State) {
	if s.Kind == File && s.Hash != "" {
		b.refs[s.Hash]++
	}
}

func (b *blobs) unref(s State) {
	if s.Kind != File || s.Hash == "" {
		return
	}
	h := s.Hash
	b.refs[h]--
	if b.refs[h] > 0 {
		return
	}
	delete(b.refs, h)
	if n, ok := b.sizes[h]; ok {
		if err := os.Remove(b.path(h)); err == nil || errors.Is(err, fs.ErrNotExist) {
			delete(b.sizes, h)
			b.bytes -= n
		}
	}
}

// sweep removes contents put but never referenced (a file read whose
// state was then not kept).
func (b *blobs) sweep() {
	for h := range b.sizes {
		if b.refs[h] == 0 {
			b.unref(State{Kind: File, Hash: h})
			delete(b.refs, h)
		}
	}
}
