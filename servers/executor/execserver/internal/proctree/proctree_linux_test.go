package proctree

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestChildrenAndSignal: a shell with two background sleeps; Children finds the shell under this process and the
// sleeps under the shell, Stat names the shell's parent, and Signal ends the sleeps but spares the skipped shell
// (which, once they are gone, goes on to another sleep).
func TestChildrenAndSignal(t *testing.T) {
	sh := exec.Command("sh", "-c", "sleep 30 & sleep 30 & echo started; wait; exec sleep 30")
	out, err := sh.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := sh.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sh.Process.Kill(); sh.Wait() })
	buf := make([]byte, 8)
	if _, err := out.Read(buf); err != nil || !strings.HasPrefix(string(buf), "started") {
		t.Fatalf("the shell did not start its children: %q %v", buf, err)
	}
	if !slices.Contains(Children(os.Getpid()), sh.Process.Pid) {
		t.Fatalf("the shell %d is not among this process's children %v", sh.Process.Pid, Children(os.Getpid()))
	}
	if ppid, _, ok := Stat(sh.Process.Pid); !ok || ppid != os.Getpid() {
		t.Errorf("Stat of the shell: parent %d ok %v", ppid, ok)
	}
	sleeps := Children(sh.Process.Pid)
	if len(sleeps) != 2 {
		t.Fatalf("the shell's children are %v, want the two sleeps", sleeps)
	}
	if got := scanChildren(sh.Process.Pid); len(got) != 2 {
		t.Errorf("the /proc scan finds %v, want the two sleeps", got)
	}
	Signal(os.Getpid(), sh.Process.Pid, syscall.SIGTERM)
	for _, p := range sleeps {
		for deadline := time.Now().Add(5 * time.Second); !isZombie(p); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("the sleep %d lives on after Signal", p)
			}
		}
	}
	if _, state, ok := Stat(sh.Process.Pid); !ok || state == "Z" {
		t.Errorf("the skipped shell was signalled too (state %q, %v)", state, ok)
	}
}
