package netns

import (
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestMain lets the handoff test re-execute this binary as the member process.
func TestMain(m *testing.M) {
	if os.Getenv(handoffEnv) != "" {
		if err := SendListener(); err != nil {
			os.Stderr.WriteString(err.Error())
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestHandoffListener: a child process makes the listener and sends it; the server accepts on it a connection to
// 127.0.0.1, after the child has exited.
func TestHandoffListener(t *testing.T) {
	cmd := exec.Command("/proc/self/exe")
	cmd.Env = os.Environ()
	h, err := OfferHandoff(cmd)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the member process: %v %s", err, out)
	}
	ln, err := h.Receive()
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if !strings.HasPrefix(ln.Addr().String(), "127.0.0.1:") {
		t.Errorf("the listener is on %s, want 127.0.0.1", ln.Addr())
	}
	go func() {
		if c, err := net.Dial("tcp", ln.Addr().String()); err == nil {
			c.Close()
		}
	}()
	c, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
}

// TestReceiveWithoutListener: a member that sent nothing gives a clear error, not a hang.
func TestReceiveWithoutListener(t *testing.T) {
	cmd := exec.Command("true")
	h, err := OfferHandoff(cmd)
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Receive(); err == nil || !strings.Contains(err.Error(), "no listener was sent") {
		t.Errorf("Receive: %v", err)
	}
}
