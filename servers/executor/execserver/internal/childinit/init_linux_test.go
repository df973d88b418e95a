package childinit

import (
	"bufio"
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/goalbox/goalbox/pkg/protocol"
	"github.com/goalbox/goalbox/servers/executor/execserver/internal/confine"
	"github.com/goalbox/goalbox/servers/executor/execserver/internal/seccomp"
)

// TestMain lets Start re-execute this test binary as an init.
func TestMain(m *testing.M) {
	if os.Args[0] == Arg0 {
		os.Exit(Main())
	}
	os.Exit(m.Run())
}

// TestInitKillsWhatTheCommandLeaves: a command starts a background sleep and waits on its stdin; the sleep is alive
// while the command runs (the control), and once the command ends the init has killed it, reported the command's
// status and what it applied, and exited.
func TestInitKillsWhatTheCommandLeaves(t *testing.T) {
	p, err := Start([]string{"PATH=/usr/bin:/bin"}, "/")
	if err != nil {
		t.Fatal(err)
	}
	defer p.ClosePipes()
	defer p.Ctl.Close()
	reports := Reports(p.Reports)
	cfg := Config{Command: "sleep 300 & echo $!; read x; exit 0", Dir: "/", Env: []string{"PATH=/usr/bin:/bin"},
		Rlimits: []confine.Rlimit{{Name: "core", Value: 0}}, Seccomp: seccomp.Policy{Fallback: true},
		Landlock: protocol.LandlockOff, UID: 65534, GID: 65534}
	if err := Send(p.Ctl, cfg); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(p.Stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("no pid from the command: %v", err)
	}
	orphan, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(orphan, 0); err != nil {
		t.Fatalf("control: the background sleep %d is not running while the command runs: %v", orphan, err)
	}
	p.Stdin.Close() // read x ends: the command exits, its sleep still running
	var applied *confine.Applied
	done := make(chan struct{})
	var exited *Report
	var setupErr string
	go func() { exited, setupErr = Collect(reports, &applied); close(done) }()
	select {
	case <-done:
	case <-time.After(KillGrace):
		t.Fatal("the init did not report the end of the command")
	}
	_ = p.Cmd.Wait()
	if setupErr != "" || exited == nil || exited.Status != 0 {
		t.Fatalf("the init reports %+v, %q", exited, setupErr)
	}
	if err := syscall.Kill(orphan, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("the background sleep %d outlived its command's init (kill 0: %v)", orphan, err)
		syscall.Kill(orphan, syscall.SIGKILL)
	}
	if applied == nil || !applied.Subreaper || !applied.NoNewPrivs || !applied.Seccomp || !applied.CapsDropped ||
		applied.Rlimits["core"] != 0 || applied.Landlock != protocol.LandlockOff {
		t.Errorf("the init says it applied %+v", applied)
	}
}
