package execserver_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/goalbox/goalbox/pkg/protocol"
	"github.com/goalbox/goalbox/servers/executor/execserver"
)

// TestProcessBuffersBoundedAcrossSessions: three sessions each run four processes that print 600 KiB and wait;
// their ring buffers together stay within -process-buffer-total, each process still answers a read with its newest
// line, and when the sessions end the buffers give everything back. Positive control: with a total large enough,
// the same processes hold far more than the small total.
func TestProcessBuffersBoundedAcrossSessions(t *testing.T) {
	const perStream = 256 << 10
	held := func(total int) (int, execserver.Config) {
		cfg := execserver.Config{ProcessBuffer: perStream, ProcessBufferTotal: total, OutputBudget: -1}
		s := startOutputsServer(t, cfg)
		for sess := range 3 {
			cs := s.connect(t)
			for i := range 4 {
				id := startProcess(t, cs, fmt.Sprintf(`head -c 600000 /dev/zero | tr '\0' x; echo; echo "last of %d-%d"; read x`, sess, i))
				last, _, _ := readProcessUntil(t, cs, id, func(o protocol.ReadProcessOutputOutput) bool {
					return strings.Contains(o.Stdout, fmt.Sprintf("last of %d-%d", sess, i))
				})
				if !last.Running {
					t.Fatalf("process %s ended early: %+v", id, last.ExitCode)
				}
			}
		}
		h := s.ex.Health().ProcessBuffers
		if h.Bytes > h.Total {
			t.Errorf("the ring buffers hold %d bytes, past their total %d", h.Bytes, h.Total)
		}
		return h.Bytes, cfg
	}
	small, _ := held(1 << 20)
	large, _ := held(64 << 20)
	// Each stdout buffer full: 256 KiB, less the 4 KiB floor that every buffer has outside the pool.
	if large < 12*(perStream-4<<10) || small > 1<<20 {
		t.Errorf("positive control: with a large total the buffers hold %d bytes, with 1 MiB %d", large, small)
	}
	t.Logf("held: %d bytes under a 1 MiB total, %d under 64 MiB", small, large)
}
