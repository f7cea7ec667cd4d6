package daemon_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/toold/toold/pkg/client/clienttest"
	"github.com/toold/toold/pkg/config"
	"github.com/toold/toold/pkg/daemon/daemontest"
)

// taggedCommand prints total bytes (a multiple of 20) as 20-byte lines,
// each naming its command (tag) and its own byte offset; taggedByte is the
// byte it prints at off.
func taggedCommand(tag, total int) string {
	return fmt.Sprintf(`awk 'BEGIN { for (o = 0; o < %d; o += 20) printf "%%06d %%012d\n", %d, o }'`, total, tag)
}

func taggedByte(tag int) func(off uint64) byte {
	var k uint64 = 1<<64 - 1
	var line string
	return func(off uint64) byte {
		if off/20 != k {
			k = off / 20
			line = fmt.Sprintf("%06d %012d\n", tag, k*20)
		}
		return line[off%20]
	}
}

// An attack on the adopted stdout buffers end to end: the terminal's pump
// reads a command's stdout into buffers of the output pool and hands them
// to the stream's event log (Sink.Adopt), which frees them once sent. Two
// conversations run two commands each at once, every line naming its
// command and offset, to clients that read slowly (64 KiB windows), drop
// their streams twice mid-output and resume (once from 3 events back: the
// tail is replayed); one command is canceled mid-stream. Every byte every
// client receives must be its own command's, at its offset, without gaps;
// the commands that ran to the end were received whole.
func TestAttackAdoptedStdoutEndToEnd(t *testing.T) {
	const total = 3 << 20 / 20 * 20
	d := daemontest.Start(t, daemontest.WithConfig(func(c *config.Config) {
		c.ApprovalMode = "yolo"
	}))
	const convs, calls = 2, 2
	clients := make([]*clienttest.CheckedStream, convs)
	for conv := range clients {
		c := &clienttest.CheckedStream{Socket: d.Socket, Conversation: fmt.Sprintf("adopt-e2e-%d", conv), Drops: 2, ResumeBack: 3, Timeout: 2 * time.Minute}
		for k := range calls {
			tag := conv*100 + k + 1
			c.Calls = append(c.Calls, &clienttest.CheckedCall{ID: fmt.Sprintf("c%d", k), Name: "run_command",
				Args:   fmt.Sprintf(`{"command":%q}`, taggedCommand(tag, total)),
				Byte:   taggedByte(tag),
				Cancel: conv == 0 && k == calls-1})
		}
		clients[conv] = c
	}
	streams, err := clienttest.RunAll(clients)
	if err != nil {
		t.Fatal(err)
	}
	for conv, c := range clients {
		if streams[conv] != 3 {
			t.Errorf("conversation %d: %d streams, want 3 (every drop mid-output)", conv, streams[conv])
		}
		for _, k := range c.Calls {
			if k.End.GetResult().GetSuccess() {
				if k.Next != total {
					t.Errorf("conversation %d command %s succeeded with %d bytes received, want %d; its end: %.600s", conv, k.ID, k.Next, total, k.End)
				}
				continue
			}
			if conv != 0 || k.ID != fmt.Sprintf("c%d", calls-1) {
				t.Errorf("conversation %d command %s failed: %v", conv, k.ID, k.End)
			}
		}
	}
}
