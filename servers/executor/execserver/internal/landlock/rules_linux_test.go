package landlock

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/goalbox/goalbox/pkg/ciskip"
	"github.com/goalbox/goalbox/pkg/protocol"
	"golang.org/x/sys/unix"
)

// TestEnforceConfinesTheThread enforces rules that let one folder be read on a thread of this test, and reads from
// that thread: the folder's file opens, a file beside it does not; both opened on the same thread before (the
// control: nothing but the ruleset stops the second read).
func TestEnforceConfinesTheThread(t *testing.T) {
	if _, ok := ABI(); !ok {
		ciskip.Skip(t, "the kernel has no Landlock")
	}
	dir := t.TempDir()
	allowed, other := filepath.Join(dir, "allowed"), filepath.Join(dir, "other")
	for _, d := range []string{allowed, other} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "f"), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	type outcome struct {
		before, allowedAfter, otherAfter error
		enforced                         Enforced
		err                              error
	}
	done := make(chan outcome)
	go func() {
		// Never unlocked: the confined thread ends with this goroutine and is never reused.
		runtime.LockOSThread()
		var o outcome
		_, o.before = os.ReadFile(filepath.Join(other, "f"))
		if o.err = unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); o.err == nil {
			o.enforced, o.err = Enforce(Rules{ReadDirs: []string{allowed}})
		}
		_, o.allowedAfter = os.ReadFile(filepath.Join(allowed, "f"))
		_, o.otherAfter = os.ReadFile(filepath.Join(other, "f"))
		done <- o
	}()
	o := <-done
	if o.err != nil {
		t.Fatal(o.err)
	}
	if o.before != nil {
		t.Fatalf("control: the file outside the rules does not open before Enforce: %v", o.before)
	}
	if o.enforced.State != protocol.LandlockEnforced || o.enforced.ABI < 1 {
		t.Errorf("Enforce reports %+v", o.enforced)
	}
	if o.allowedAfter != nil {
		t.Errorf("the folder the rules allow does not open: %v", o.allowedAfter)
	}
	if o.otherAfter == nil {
		t.Error("the file outside the rules opens after Enforce")
	}
}
