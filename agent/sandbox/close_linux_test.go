package sandbox_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/goalbox/goalbox/agent/sandbox"
	"github.com/goalbox/goalbox/pkg/protocol"
)

// TestCloseEndsARunningCommand: closing the hosted sandbox while a command runs (the agent stopping mid-call, the
// call's context not cancelled) ends the command with the session and the call with an error. The go-sdk's Close
// waits for the calls still running; over HTTP the session's DELETE cancels them, and over the in-memory link
// Close cuts the pipe first. The control is the look itself: the command is seen running before Close.
func TestCloseEndsARunningCommand(t *testing.T) {
	sb, err := sandbox.Host(context.Background(), sandbox.LocalOptions{Workspace: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	// The command is named by a duration of its own, so the host's /proc shows which process is its.
	marker := fmt.Sprintf("600.%06d", rand.IntN(1e6))
	returned := make(chan error, 1)
	go func() {
		_, err := sb.Call(context.Background(), protocol.ToolRunCommand, json.RawMessage(`{"command":"sleep `+marker+`"}`))
		returned <- err
	}()
	if !waitSleep(marker, true) {
		sb.Close()
		t.Fatalf("control: the command sleep %s was never seen running", marker)
	}
	closed := make(chan struct{})
	go func() { sb.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(30 * time.Second):
		t.Fatal("Close still waits 30 s later, for the command to end")
	}
	select {
	case err := <-returned:
		if err == nil {
			t.Error("the call returned a result after Close; want an error: the sandbox is gone")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the call still runs 30 s after Close")
	}
	if !waitSleep(marker, false) {
		t.Errorf("the command sleep %s still runs after Close", marker)
	}
}

// waitSleep waits up to 30 s for a process `sleep marker` to be there (running) or gone (!running).
func waitSleep(marker string, running bool) bool {
	for end := time.Now().Add(30 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		found := false
		dirs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
		for _, d := range dirs {
			if b, err := os.ReadFile(d); err == nil && strings.Contains(string(b), "sleep\x00"+marker) {
				found = true
				break
			}
		}
		if found == running {
			return true
		}
	}
	return false
}
