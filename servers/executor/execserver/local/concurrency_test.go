//go:build linux

package local

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/goalbox/goalbox/pkg/mcpserve"
	"github.com/goalbox/goalbox/pkg/protocol"
	"github.com/goalbox/goalbox/servers/executor/execserver"
	"github.com/goalbox/goalbox/servers/executor/execserver/internal/sandboxtest"
)

// TestMaxConcurrent: past -max-concurrent a call waits for a free slot within its own timeout, and is refused with
// a clear error when none frees in time. With a slot free (the positive control) the same call runs at once.
func TestMaxConcurrent(t *testing.T) {
	b, ws := newLocalTestBackend(t, nil)
	srv := sandboxtest.StartServer(t, b, ws, execserver.Config{MaxConcurrent: 1}, nil)
	release := holdSlot(t, srv)

	msg := sandboxtest.ToolError(t, srv.Session, protocol.RunCommandInput{Command: "echo too-early", TimeoutSeconds: 1})
	if !strings.Contains(msg, "-max-concurrent") || !strings.Contains(msg, "runs 1 commands at once") {
		t.Errorf("refusal: %q", msg)
	}
	// The slot frees a second after the next call is sent: the call waits for it and runs once it is free, which its
	// command's clock shows (the realtime clock is the host's in the sandbox).
	var released atomic.Int64
	time.AfterFunc(time.Second, func() {
		released.Store(time.Now().UnixNano())
		release()
	})
	queued := sandboxtest.MustRun(t, srv.Session, protocol.RunCommandInput{Command: "date +%s%N; echo queued", TimeoutSeconds: 60})
	ranAt, word, _ := strings.Cut(queued.Stdout, "\n")
	ran, _ := strconv.ParseInt(ranAt, 10, 64)
	if r := released.Load(); word != "queued\n" || r == 0 || ran < r {
		t.Errorf("a queued call: %+v ran at %d, the slot freed at %d (it should have waited for the running one)", queued, ran, r)
	}

	// Positive control: one of two slots held, the same call as the refused one runs (with all slots held it would
	// wait its whole timeout and be refused).
	free := sandboxtest.StartServer(t, b, ws, execserver.Config{MaxConcurrent: 2}, nil)
	release = holdSlot(t, free)
	if out := sandboxtest.MustRun(t, free.Session, protocol.RunCommandInput{Command: "echo now", TimeoutSeconds: 60}); out.Stdout != "now\n" {
		t.Errorf("positive control: with a free slot the call must run at once: %+v", out)
	}
	release()
}

// holdSlot starts a command on srv that holds one of its slots until release is called: a sleep the test finds on
// the host by its marker, and kills when released (release waits for the command's answer). Nothing depends on how
// long a loaded machine takes to start the command.
func holdSlot(t *testing.T, srv *sandboxtest.Server) (release func()) {
	t.Helper()
	marker := fmt.Sprintf("600.%06d", rand.IntN(1000000))
	done := make(chan struct{})
	go func() {
		defer close(done)
		res, err := sandboxtest.CallRunErr(context.Background(), srv.Session, protocol.RunCommandInput{Command: "sleep " + marker, TimeoutSeconds: 600})
		if err != nil {
			t.Errorf("the command holding a slot: %v", err)
		} else if res.IsError {
			t.Errorf("the command holding a slot: %s", mcpserve.ToolErrorText(res))
		}
	}()
	if !waitFor(time.Minute, func() bool { return len(hostPIDs("sleep\x00"+marker)) == 1 }) {
		t.Fatalf("the command holding a slot did not start (found %v)", hostPIDs(marker))
	}
	var once sync.Once
	release = func() {
		once.Do(func() {
			for _, p := range hostPIDs("sleep\x00" + marker) {
				if pid, err := strconv.Atoi(p); err == nil {
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
			}
			<-done
		})
	}
	t.Cleanup(release)
	return release
}
