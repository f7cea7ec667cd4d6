package web

import (
	"testing"

	"go.uber.org/goleak"
)

// No fetch, redirect, timeout or canceled call leaves a goroutine (or its
// connection) behind.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
