package executor

// InlineTimerArmed reports whether the inline budget's timer of a's
// receiver is armed (inline.go), for the tests of when it is.
func (a *Attachment) InlineTimerArmed() bool {
	a.watch.mu.Lock()
	defer a.watch.mu.Unlock()
	return a.watch.armed
}
