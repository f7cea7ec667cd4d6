package terminal

// Running returns how many commands and background processes are running
// now (for the toold.processes.running metric).
func (m *Manager) Running() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, p := range m.procs {
		if !p.isDone() {
			n++
		}
	}
	return n
}
