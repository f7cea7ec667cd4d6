package checkpoint

import (
	"errors"
	"io/fs"
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
	// fresh are the contents put since the last sweep.
	fresh []string
	made  map[string]bool // fan-out directories made
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
	return &blobs{dir: dir, refs: map[string]int{}, sizes: map[string]int64{}, made: map[string]bool{}}, nil
}

func (b *blobs) path(h string) string { return filepath.Join(b.dir, h[:2], h[2:]) }

// put stores data under its hash h unless it is there.
func (b *blobs) put(h string, data []byte) error {
	if _, ok := b.sizes[h]; ok {
		return nil
	}
	p := b.path(h)
	if !b.made[h[:2]] {
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			return err
		}
		b.made[h[:2]] = true
	}
	// Written in place, not synced: the store is made again at every
	// start, so a torn content never outlives the process that wrote it.
	w, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	_, err = w.Write(data)
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(p)
		return err
	}
	b.sizes[h] = int64(len(data))
	b.bytes += int64(len(data))
	b.fresh = append(b.fresh, h)
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

// sweep removes the contents put since the last sweep that nothing
// references (a file read whose state was then not kept).
func (b *blobs) sweep() {
	for _, h := range b.fresh {
		if _, ok := b.sizes[h]; ok && b.refs[h] == 0 {
			b.unref(State{Kind: File, Hash: h})
			delete(b.refs, h)
		}
	}
	b.fresh = b.fresh[:0]
}
