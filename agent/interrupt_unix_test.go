//go:build unix

package main

import (
	"bytes"
	"context"
	"io"
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
	model := looptest.New(t, looptest.Step{Calls: []looptest.Call{command("sleep 3 && touch late.txt")}})
	model.Repeat = &looptest.Step{Content: "done"}
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	time.AfterFunc(time.Second, cancel) // as the first Ctrl-C does
	start := time.Now()
	code := run(ctx, []string{"-goal", "x", "-workspace", ws, "-runs-dir", filepath.Join(dir, "runs")},
		map[string]string{"OPENAI_BASE_URL": model.BaseURL}, strings.NewReader(""), io.Discard, io.Discard)
	if code != exitInterrupted || time.Since(start) > 3*time.Second {
		t.Errorf("exit %d after %v; want %d before the command would have ended", code, time.Since(start), exitInterrupted)
	}
	time.Sleep(3 * time.Second)
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
