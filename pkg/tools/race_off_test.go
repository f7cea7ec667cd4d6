//go:build !race

package tools_test

// raceEnabled reports a -race build: sync.Pool drops a random share of
// what is put into it then, so a pool's allocations cannot be counted.
const raceEnabled = false
