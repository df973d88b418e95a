package openaichat

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/goalbox/goalbox/agent/loop"
)

// A server that drops packets (a firewall's DROP): connecting hangs. One that never answered is named once the
// connect timeout passes, not retried, and the wait is that timeout, not the system's minutes.
func TestAServerThatDropsPacketsIsNamedWithinTheConnectTimeout(t *testing.T) {
	addr := droppingListener(t)
	m, err := New(Config{Model: "m", BaseURL: "http://" + addr + "/v1", MaxRetries: 5, ConnectTimeout: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = m.Complete(context.Background(), []loop.Message{{Role: loop.RoleUser, Content: "hi"}}, nil)
	took := time.Since(start)
	var me *loop.ModelError
	if !errors.As(err, &me) || me.Attempts != 1 || !strings.Contains(me.Hint, "nothing answered at http://"+addr) || !strings.Contains(me.Message, "timeout") {
		t.Fatalf("want the server named after one attempt: %v", err)
	}
	if took > 3*time.Second {
		t.Errorf("took %v: the connect timeout is 500ms", took)
	}
}

// droppingListener is an address where connecting hangs as behind a firewall that drops packets: a listener with
// a backlog of one that never accepts, its queue filled (Linux drops the SYNs of a listener whose queue is full).
func droppingListener(t *testing.T) string {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Listen(fd, 0); err != nil {
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", sa.(*syscall.SockaddrInet4).Port)
	for range 8 {
		c, err := net.DialTimeout("tcp", addr, 300*time.Millisecond)
		if err != nil {
			return addr // the queue is full: connecting now hangs
		}
		t.Cleanup(func() { c.Close() })
	}
	t.Fatal("the listener's queue never filled")
	return ""
}
