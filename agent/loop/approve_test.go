package loop

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

func TestTerminalApproverAnswers(t *testing.T) {
	var out bytes.Buffer
	a := NewTerminalApprover(strings.NewReader("y\nYES\n\nn\nuse the Makefile instead\n"), &out)
	want := []struct {
		ok     bool
		reason string
	}{{true, ""}, {true, ""}, {false, ""}, {false, ""}, {false, "use the Makefile instead"}, {false, "no one is there to approve commands (input closed)"}}
	for i, w := range want {
		ok, reason, err := a.Approve(context.Background(), "make test")
		if err != nil || ok != w.ok || reason != w.reason {
			t.Errorf("answer %d: %v %q %v, want %v %q", i+1, ok, reason, err, w.ok, w.reason)
		}
	}
	if n := strings.Count(out.String(), "make test"); n != len(want) {
		t.Errorf("the command should be shown before each question; shown %d times", n)
	}
}

func TestTerminalApproverGivesUpWithTheContext(t *testing.T) {
	r, w := io.Pipe()
	defer w.Close()
	a := NewTerminalApprover(r, io.Discard)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, _, err := a.Approve(ctx, "sleep 1"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v", err)
	}
	// The answer typed after the abandoned question belongs to the next one.
	go w.Write([]byte("y\n"))
	if ok, _, err := a.Approve(context.Background(), "true"); !ok || err != nil {
		t.Errorf("next question: %v %v", ok, err)
	}
}
