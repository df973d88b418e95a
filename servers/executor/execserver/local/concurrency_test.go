//go:build linux

package local

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/goalbox/goalbox/pkg/protocol"
	"github.com/goalbox/goalbox/servers/executor/execserver"
	"github.com/goalbox/goalbox/servers/executor/execserver/internal/sandboxtest"
)

// TestMaxConcurrent: past -max-concurrent a call waits for a free slot within its own timeout, and is refused with
// a clear error when none frees in time. With a slot free (the positive control) the same call runs at once.
func TestMaxConcurrent(t *testing.T) {
	b, ws := newLocalTestBackend(t, nil)
	srv := sandboxtest.StartServer(t, b, ws, execserver.Config{MaxConcurrent: 1}, nil)
	var wg sync.WaitGroup
	wg.Go(func() {
		sandboxtest.MustRun(t, srv.Session, protocol.RunCommandInput{Command: "sleep 3", TimeoutSeconds: 30})
	})
	time.Sleep(500 * time.Millisecond)

	msg := sandboxtest.ToolError(t, srv.Session, protocol.RunCommandInput{Command: "echo too-early", TimeoutSeconds: 1})
	if !strings.Contains(msg, "-max-concurrent") || !strings.Contains(msg, "runs 1 commands at once") {
		t.Errorf("refusal: %q", msg)
	}
	queued := sandboxtest.MustRun(t, srv.Session, protocol.RunCommandInput{Command: "echo queued", TimeoutSeconds: 30})
	if queued.Stdout != "queued\n" || queued.DurationMs < 500 {
		t.Errorf("a queued call: %+v (it should have waited for the running one)", queued)
	}
	wg.Wait()

	free := sandboxtest.StartServer(t, b, ws, execserver.Config{MaxConcurrent: 2}, nil)
	wg.Go(func() {
		sandboxtest.MustRun(t, free.Session, protocol.RunCommandInput{Command: "sleep 2", TimeoutSeconds: 30})
	})
	time.Sleep(300 * time.Millisecond)
	if out := sandboxtest.MustRun(t, free.Session, protocol.RunCommandInput{Command: "echo now", TimeoutSeconds: 1}); out.Stdout != "now\n" {
		t.Errorf("positive control: with a free slot the call must run at once: %+v", out)
	}
	wg.Wait()
}
