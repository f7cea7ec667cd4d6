package sandbox

// KillReady kills the helpers ready in w (as if they had crashed) and
// returns how many there were; they stay in the pool.
func (w *Warm) KillReady() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, h := range w.ready {
		_ = h.cmd.Process.Kill()
	}
	return len(w.ready)
}

// ReadyNow returns how many helpers are ready in w.
func (w *Warm) ReadyNow() int {
	r, _ := w.Ready()
	return r
}

// PidSearches returns how many warm commands' pids were searched in /proc
// rather than read from the pidfd their helper sent.
func PidSearches() int64 { return pidSearches.Load() }

// PidfdPid is pidfdPid.
var PidfdPid = pidfdPid

// Watches returns how many cgroups' events c watches now.
func (c *Cgroups) Watches() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.watches)
}
