package main

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"
)

// Kind says what a row measures and how its ratio reads.
type Kind string

// Row kinds.
const (
	// Latency: per-operation times; ratio = toold p50 / baseline p50.
	Latency Kind = "latency"
	// Rate: operations or bytes per second; ratio = toold / baseline.
	Rate Kind = "rate"
	// Value: a single figure (MB, ms) with no baseline.
	Value Kind = "value"
)

// Measure is one contender's figures in a row.
type Measure struct {
	Name string `json:"name"`
	// Latency rows, in milliseconds.
	P50 float64 `json:"p50_ms,omitempty"`
	P99 float64 `json:"p99_ms,omitempty"`
	// Rate rows: per second, in Unit.
	Rate float64 `json:"rate,omitempty"`
	// Value rows.
	Value float64 `json:"value,omitempty"`
	// N is the number of samples.
	N int `json:"samples,omitempty"`
}

// Row is one line of the table.
type Row struct {
	ID    string `json:"id"`
	Title string `json:"title"`
	Kind  Kind   `json:"kind"`
	// Unit of Rate or Value ("calls/s", "MB/s", "MB", "ms").
	Unit  string    `json:"unit,omitempty"`
	Toold Measure   `json:"toold"`
	Base  []Measure `json:"baselines,omitempty"`
	// Ratio of toold to the first baseline (see Kind).
	Ratio float64 `json:"ratio,omitempty"`
	// Target in words ("p50 <= 1.3x", ">= 0.6x", "<= 25 MB").
	Target string `json:"target,omitempty"`
	// Met is whether the target holds; absent in smoke runs and for rows
	// without a target.
	Met *bool `json:"met,omitempty"`
	// Verified says how results were checked to be the same.
	Verified string `json:"verified,omitempty"`
	Note     string `json:"note,omitempty"`
	Error    string `json:"error,omitempty"`

	check func(*Row) bool
}

func (r *Row) finish(smoke bool) {
	if len(r.Base) > 0 {
		b := r.Base[0]
		switch r.Kind {
		case Latency:
			if b.P50 > 0 {
				r.Ratio = r.Toold.P50 / b.P50
			}
		case Rate:
			if b.Rate > 0 {
				r.Ratio = r.Toold.Rate / b.Rate
			}
		}
	}
	if r.Error == "" && !smoke && r.check != nil {
		met := r.check(r)
		r.Met = &met
	}
}

// report is a whole run.
type report struct {
	Date    string `json:"date"`
	Machine string `json:"machine"`
	Smoke   bool   `json:"smoke"`
	Elapsed string `json:"elapsed"`
	Rows    []*Row `json:"rows"`
}

func (rep report) markdown() string {
	var b strings.Builder
	mode := ""
	if rep.Smoke {
		mode = " (smoke run: few iterations, targets not checked)"
	}
	fmt.Fprintf(&b, "toolbench, %s, %s, %s%s\n\n", rep.Date, rep.Machine, rep.Elapsed, mode)
	b.WriteString("| row | toold | baseline (same run) | ratio | target | met | verified |\n")
	b.WriteString("|---|---|---|---|---|---|---|\n")
	for _, r := range rep.Rows {
		var base []string
		for _, m := range r.Base {
			base = append(base, m.Name+": "+r.format(m))
		}
		ratio := ""
		if r.Ratio > 0 {
			ratio = fmt.Sprintf("%.2f×", r.Ratio)
		}
		met := ""
		if r.Met != nil {
			met = map[bool]string{true: "yes", false: "**no**"}[*r.Met]
		}
		verified := r.Verified
		if r.Error != "" {
			verified = "ERROR: " + r.Error
		}
		if r.Note != "" {
			verified = strings.TrimSpace(verified + " " + r.Note)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s |\n",
			r.Title, r.format(r.Toold), strings.Join(base, "; "), ratio, r.Target, met, verified)
	}
	return b.String()
}

func (r *Row) format(m Measure) string {
	switch r.Kind {
	case Latency:
		return fmt.Sprintf("p50 %s, p99 %s", ms(m.P50), ms(m.P99))
	case Rate:
		return fmt.Sprintf("%s %s", human(m.Rate), r.Unit)
	}
	return fmt.Sprintf("%.1f %s", m.Value, r.Unit)
}

func ms(v float64) string {
	switch {
	case v < 1:
		return fmt.Sprintf("%.0f µs", v*1000)
	case v < 10:
		return fmt.Sprintf("%.2f ms", v)
	}
	return fmt.Sprintf("%.1f ms", v)
}

func human(v float64) string {
	switch {
	case v >= 100000:
		return fmt.Sprintf("%.0fk", v/1000)
	case v >= 10000:
		return fmt.Sprintf("%.1fk", v/1000)
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.1f", v)
}

// latencies turns durations into a Measure.
func latencies(name string, ds []time.Duration) Measure {
	if len(ds) == 0 {
		return Measure{Name: name}
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	pct := func(p float64) float64 {
		i := int(p * float64(len(s)-1))
		return float64(s[i]) / float64(time.Millisecond)
	}
	return Measure{Name: name, P50: pct(0.5), P99: pct(0.99), N: len(s)}
}

// machine describes where the run happened.
func machine() string {
	cpu := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, "model name") {
				if _, v, ok := strings.Cut(line, ":"); ok {
					cpu = strings.TrimSpace(v)
				}
				break
			}
		}
	}
	mem := ""
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		var kb int
		fmt.Sscanf(strings.SplitN(string(b), "\n", 2)[0], "MemTotal: %d kB", &kb)
		mem = fmt.Sprintf(", %d GiB", (kb+(1<<19))>>20)
	}
	return fmt.Sprintf("%s, %d cores%s, %s/%s, %s", cpu, runtime.NumCPU(), mem, runtime.GOOS, runtime.GOARCH, runtime.Version())
}
