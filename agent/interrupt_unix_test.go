//go:build unix

package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/goalbox/goalbox/agent/loop/looptest"
)

// syncBuffer is a bytes.Buffer for a writer and a reader in different goroutines.
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

func TestASecondInterruptExitsAtOnce(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	exited := make(chan int, 1)
	var stderr syncBuffer
	stop := interrupts(cancel, &stderr, func(code int) { exited <- code })
	defer stop()

	if err := syscall.Kill(syscall.Getpid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ctx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the first interrupt did not cancel the run")
	}
	select {
	case code := <-exited:
		t.Fatalf("the first interrupt exited (%d): it should let the run stop its commands", code)
	case <-time.After(100 * time.Millisecond):
	}
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-exited:
		if code != exitInterrupted {
			t.Errorf("exit %d, want %d", code, exitInterrupted)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the second interrupt did not exit")
	}
	if s := stderr.String(); !bytes.Contains([]byte(s), []byte("Ctrl-C again")) {
		t.Errorf("the person should be told: %q", s)
	}
}

func TestInterruptStopsTheRunningCommandAndExits130(t *testing.T) {
	t.Parallel()
	// The command sleeps far longer than the run takes to wind down; its length, at random, names it on the host.
	marker := fmt.Sprintf("30.%06d", rand.IntN(1000000))
	model := looptest.New(t, looptest.Step{Calls: []looptest.Call{command("sleep " + marker + " && touch late.txt")}})
	model.Repeat = &looptest.Step{Content: "done"}
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The first Ctrl-C comes once the command runs, whatever the servers and the sandbox took to start.
	seen, ended := make(chan time.Time, 1), make(chan struct{})
	go func() {
		defer cancel()
		for end := time.Now().Add(time.Minute); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
			if len(hostPIDs("sleep\x00"+marker)) > 0 {
				seen <- time.Now()
				return
			}
			select {
			case <-ended:
				close(seen)
				return
			default:
			}
		}
		close(seen)
	}()
	begun := time.Now()
	code := run(ctx, []string{"-goal", "x", "-workspace", ws, "-runs-dir", filepath.Join(dir, "runs")},
		map[string]string{"OPENAI_BASE_URL": model.BaseURL}, strings.NewReader(""), io.Discard, io.Discard)
	returned := time.Now()
	close(ended)
	started, ok := <-seen
	if !ok {
		t.Fatalf("the command never ran (exit %d)", code)
	}
	if code != exitInterrupted || returned.Sub(started) > 20*time.Second {
		t.Errorf("exit %d %v after the command started; want %d before the command would have ended", code, returned.Sub(started), exitInterrupted)
	}
	waitPIDs(t, marker, false)
	t.Logf("the command ran %v after the run began; the run returned %v after the interrupt", started.Sub(begun), returned.Sub(started))
	if _, err := os.Stat(filepath.Join(ws, "late.txt")); err == nil {
		t.Error("the command went on after the interrupt")
	}
}

// SIGTERM twice (as `timeout` delivers it to a command under `go run`) cancels the run once and does not exit at
// once: the summary is still written. A Ctrl-C after it still does.
func TestATermTwiceStillLetsTheRunWindDown(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	exited := make(chan int, 1)
	var stderr syncBuffer
	stop := interrupts(cancel, &stderr, func(code int) { exited <- code })
	defer stop()
	// The second after the first was handled: two pending signals of a kind would merge into one.
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	<-ctx.Done()
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-exited:
		t.Fatalf("a second SIGTERM exited (%d) before the summary", code)
	case <-time.After(300 * time.Millisecond):
	}
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
	case <-time.After(5 * time.Second):
		t.Fatal("a Ctrl-C after it should exit at once")
	}
}

// An interrupt while the run is being set up (the servers starting, AGENTS.md read) is an interrupt with a
// summary, not a configuration error: the cancel comes before anything can be asked.
func TestAnInterruptDuringTheStartIsAnInterrupt(t *testing.T) {
	model := looptest.New(t)
	model.Repeat = &looptest.Step{Content: "done"}
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var stdout bytes.Buffer
	code := run(ctx, []string{"-goal", "x", "-workspace", filepath.Join(dir, "ws"), "-runs-dir", filepath.Join(dir, "runs")},
		map[string]string{"OPENAI_BASE_URL": model.BaseURL}, strings.NewReader(""), &stdout, io.Discard)
	sums, _ := filepath.Glob(filepath.Join(dir, "runs", "*", "summary.json"))
	if code != exitInterrupted || len(sums) != 1 || !strings.Contains(stdout.String(), "stop reason  canceled") {
		t.Errorf("exit %d, summaries %v, stdout %s", code, sums, stdout.String())
	}
}
