package memory

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"sort"
	"strings"
	"time"
)

// Embedder turns texts into vectors for semantic ranking.
type Embedder interface {
	// Embed returns one vector per text, in order.
	Embed(ctx context.Context, texts []string) ([][]float32, error)
}

// OpenAIEmbedder calls an OpenAI-compatible embeddings endpoint (OpenAI,
// Ollama, vLLM, llama.cpp's server, LiteLLM...): POST URL with {"model",
// "input": [texts]}, answered by {"data": [{"index", "embedding"}]}.
type OpenAIEmbedder struct {
	// URL is the endpoint, e.g. http://127.0.0.1:11434/v1/embeddings.
	URL string
	// Model is sent as "model".
	Model string
	// APIKey, when set, is sent as "Authorization: Bearer APIKEY".
	APIKey string
	// Client makes the requests; nil uses a client with a 30 s timeout.
	Client *http.Client
}

var defaultEmbedClient = &http.Client{Timeout: 30 * time.Second}

// Embed implements Embedder.
func (e *OpenAIEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	body, err := json.Marshal(map[string]any{"model": e.Model, "input": texts})
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.URL, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if e.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+e.APIKey)
	}
	c := e.Client
	if c == nil {
		c = defaultEmbedClient
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("embeddings endpoint: %s: %.200s", resp.Status, b)
	}
	var out struct {
		Data []struct {
			Index     int       `json:"index"`
			Embedding []float32 `json:"embedding"`
		} `json:"data"`
	}
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, fmt.Errorf("embeddings endpoint: %w", err)
	}
	if len(out.Data) != len(texts) {
		return nil, fmt.Errorf("embeddings endpoint: %d embeddings for %d inputs", len(out.Data), len(texts))
	}
	vecs := make([][]float32, len(texts))
	for _, d := range out.Data {
		if d.Index < 0 || d.Index >= len(texts) || vecs[d.Index] != nil || len(d.Embedding) == 0 {
			return nil, fmt.Errorf("embeddings endpoint: bad index %d", d.Index)
		}
		vecs[d.Index] = normalized(d.Embedding)
	}
	return vecs, nil
}

// normalized scales v to unit length, so that a dot product is the cosine.
func normalized(v []float32) []float32 {
	var n float64
	for _, x := range v {
		n += float64(x) * float64(x)
	}
	if n == 0 {
		return v
	}
	n = math.Sqrt(n)
	for i := range v {
		v[i] = float32(float64(v[i]) / n)
	}
	return v
}

// encodeVector and decodeVector store a vector as little-endian float32s.
func encodeVector(v []float32) []byte {
	if v == nil {
		return nil
	}
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

func decodeVector(b []byte) []float32 {
	if len(b)%4 != 0 {
		return nil
	}
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v
}

type scored struct {
	id    string
	score float64
}

// nearest returns the ids of the n visible memories whose vectors are
// closest to q (cosine), best first.
func nearest(ctx context.Context, b Backend, o Owner, f Filter, q []float32, n int) ([]scored, error) {
	var all []scored
	err := b.Vectors(ctx, o, f, func(id string, v []float32) {
		if len(v) != len(q) {
			return // embedded by another model; not comparable
		}
		var dot float64
		for i := range v {
			dot += float64(v[i]) * float64(q[i])
		}
		all = append(all, scored{id, dot})
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(all, func(i, j int) bool { return all[i].score > all[j].score })
	return all[:min(n, len(all))], nil
}

// rrfK is the constant of reciprocal rank fusion (Cormack et al. 2009).
const rrfK = 60

// fuse merges the full-text hits and the nearest vectors by reciprocal rank
// fusion: score = Σ 1/(rrfK + rank). Memories found only by meaning get a
// snippet from the start of their content.
func (s *Store) fuse(ctx context.Context, o Owner, text []Hit, near []scored, limit int) ([]Hit, error) {
	byID := map[string]*Hit{}
	var order []string
	for i := range text {
		h := text[i]
		h.Score = 1 / float64(rrfK+i+1)
		byID[h.ID] = &h
		order = append(order, h.ID)
	}
	var missing []string
	for i, n := range near {
		r := 1 / float64(rrfK+i+1)
		if h, ok := byID[n.id]; ok {
			h.Score += r
			continue
		}
		byID[n.id] = &Hit{Memory: Memory{ID: n.id}, Score: r}
		order = append(order, n.id)
		missing = append(missing, n.id)
	}
	if len(missing) > 0 {
		ms, err := s.b.Get(ctx, o, missing)
		if err != nil {
			return nil, err
		}
		for _, m := range ms {
			h := byID[m.ID]
			h.Memory = m
			h.Snippet = excerpt(m.Content, 200)
		}
	}
	out := make([]Hit, 0, len(order))
	for _, id := range order {
		if h := byID[id]; h.Content != "" {
			out = append(out, *h)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Score > out[j].Score })
	return out[:min(limit, len(out))], nil
}

// excerpt returns the start of s, at most n bytes, cut at a rune boundary.
func excerpt(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= n {
		return s
	}
	for n > 0 && !utfStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func utfStart(b byte) bool { return b&0xC0 != 0x80 }
