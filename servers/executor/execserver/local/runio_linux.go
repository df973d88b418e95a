package local

// The plumbing both modes share around a running command: its stdin, its output, the wait with a timeout, and a
// request to terminate.

import (
	"context"
	"io"
	"os"
	"sync"
	"time"

	"github.com/goalbox/goalbox/servers/executor/execserver/backend"
)

// feedStdin writes prefix, then req's stdin (its Stdin, or StdinStream as it comes until EOF), to w and closes
// it, in the background. A command that does not read its stdin makes the write fail with EPIPE when it ends;
// that is fine.
func feedStdin(w *os.File, prefix string, req backend.Request) {
	go func() {
		defer w.Close()
		if _, err := io.WriteString(w, prefix); err != nil {
			return
		}
		if req.StdinStream != nil {
			_, _ = io.Copy(w, req.StdinStream)
			return
		}
		_, _ = io.WriteString(w, req.Stdin)
	}()
}

// onTerminate calls terminate once when ch is closed (nil: never), until the returned function is called.
func onTerminate(ch <-chan struct{}, terminate func()) (stop func()) {
	if ch == nil {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		select {
		case <-ch:
			terminate()
		case <-done:
		}
	}()
	return func() { close(done) }
}

// copyOutput copies the command's stdout and stderr pipes to out and errOut as they come. The returned function
// waits until both are at EOF, which comes when every process of the command has died; if something still holds a
// pipe after killGrace, it stops reading.
func copyOutput(stdoutR, stderrR *os.File, out, errOut io.Writer) (finish func()) {
	var copies sync.WaitGroup
	copies.Go(func() { _, _ = io.Copy(out, stdoutR) })
	copies.Go(func() { _, _ = io.Copy(errOut, stderrR) })
	return func() {
		copied := make(chan struct{})
		go func() { copies.Wait(); close(copied) }()
		select {
		case <-copied:
		case <-time.After(killGrace):
			stdoutR.Close()
			stderrR.Close()
			<-copied
		}
	}
}

// waitOrKill waits for wait to return. When ctx is done or timeout passes first, it calls kill and still waits.
func waitOrKill[T any](ctx context.Context, timeout time.Duration, wait func() T, kill func()) (res T, killed, timedOut bool) {
	done := make(chan T, 1)
	go func() { done <- wait() }()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case res = <-done:
		return res, false, false
	case <-ctx.Done():
	case <-timer.C:
		timedOut = true
	}
	kill()
	return <-done, true, timedOut
}
