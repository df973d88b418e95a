//go:build linux

package local

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/goalbox/goalbox/servers/executor/execserver/backend"
	"github.com/goalbox/goalbox/servers/executor/execserver/internal/sandboxtest"
)

// syncBuffer is a buffer a command writes while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// TestLongRunningCommands: what a long-running process needs from the backend, in both modes. Its stdin stays open
// and data written over time reaches it; Terminate sends SIGTERM to the whole tree (the foreground program's trap
// runs, a background sleep dies) and the command ends long before its timeout, leaving nothing behind.
func TestLongRunningCommands(t *testing.T) {
	for _, noNS := range []bool{false, true} {
		t.Run(fmt.Sprintf("no-namespaces=%v", noNS), func(t *testing.T) {
			modeWanted(t, noNS)
			b, ws := newLocalTestBackend(t, func(c *Config) { c.NoNamespaces = noNS })

			t.Run("open stdin", func(t *testing.T) {
				inR, inW := io.Pipe()
				var out syncBuffer
				done := make(chan backend.Result, 1)
				go func() {
					res, err := b.Run(context.Background(), backend.Request{Command: `while IFS= read -r l; do echo "got $l"; done; echo eof`,
						Dir: ".", Timeout: time.Minute, StdinStream: inR, Stdout: &out, Stderr: io.Discard})
					if err != nil {
						t.Error(err)
					}
					done <- res
				}()
				_, _ = io.WriteString(inW, "first\n")
				if !waitFor(10*time.Second, func() bool { return out.String() == "got first\n" }) {
					t.Fatalf("waited 10s for %s; stdout %q", "the first line's answer", out.String())
				}
				_, _ = io.WriteString(inW, "second\n")
				if !waitFor(10*time.Second, func() bool { return strings.Contains(out.String(), "got second") }) {
					t.Fatalf("waited 10s for %s; stdout %q", "the second line's answer", out.String())
				}
				inW.Close()
				if res := <-done; res.ExitCode != 0 || out.String() != "got first\ngot second\neof\n" {
					t.Errorf("got %+v, stdout %q", res, out.String())
				}
			})

			t.Run("terminate", func(t *testing.T) {
				marker := "termed-" + sandboxtest.RandomHex(4)
				term := make(chan struct{})
				var out syncBuffer
				done := make(chan backend.Result, 1)
				start := time.Now()
				go func() {
					res, err := b.Run(context.Background(), backend.Request{
						Command: fmt.Sprintf(`sleep 100 & sh -c 'trap "echo bye > %s; exit 7" TERM; echo up; while :; do sleep 0.1; done'`, marker),
						Dir:     ".", Timeout: time.Minute, Terminate: term, Stdout: &out, Stderr: io.Discard})
					if err != nil {
						t.Error(err)
					}
					done <- res
				}()
				if !waitFor(10*time.Second, func() bool { return out.String() == "up\n" }) {
					t.Fatalf("waited 10s for %s; stdout %q", "the child to start", out.String())
				}
				close(term)
				select {
				case res := <-done:
					// The command's own shell ends by the SIGTERM too (143), once its child has run its trap.
					if res.TimedOut || res.ExitCode != 143 {
						t.Errorf("terminated command: %+v, want exit code 143 (SIGTERM)", res)
					}
				case <-time.After(20 * time.Second):
					t.Fatal("the command did not end after Terminate")
				}
				if got, err := os.ReadFile(filepath.Join(ws, marker)); err != nil || string(got) != "bye\n" {
					t.Errorf("the background child's TERM trap did not run: %q %v", got, err)
				}
				if left := sandboxtest.ProcessesWith("sleep 100"); len(left) != 0 {
					t.Errorf("processes left: %v", left)
				}
				t.Logf("ended %v after it started", time.Since(start).Round(time.Millisecond))
			})

			// A stop stops a compound command: the shell does not go on to its next command once the first
			// is gone (positive control: without the stop, "after" is printed).
			t.Run("terminate compound", func(t *testing.T) {
				for _, stop := range []bool{false, true} {
					term := make(chan struct{})
					var out syncBuffer
					done := make(chan backend.Result, 1)
					go func() {
						res, _ := b.Run(context.Background(), backend.Request{Command: `echo up; sleep 2; echo after`,
							Dir: ".", Timeout: time.Minute, Terminate: term, Stdout: &out, Stderr: io.Discard})
						done <- res
					}()
					if !waitFor(10*time.Second, func() bool { return out.String() == "up\n" }) {
						t.Fatalf("waited 10s for the command to start; stdout %q", out.String())
					}
					if stop {
						time.Sleep(200 * time.Millisecond)
						close(term)
					}
					res := <-done
					switch {
					case stop && (strings.Contains(out.String(), "after") || res.ExitCode == 0):
						t.Errorf("stopped: the shell went on to its next command: %+v, stdout %q", res, out.String())
					case !stop && (out.String() != "up\nafter\n" || res.ExitCode != 0):
						t.Errorf("positive control, not stopped: %+v, stdout %q", res, out.String())
					}
				}
			})
		})
	}
}
