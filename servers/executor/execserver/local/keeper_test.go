//go:build linux

package local

import (
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/goalbox/goalbox/pkg/protocol"
)

// TestSetupProgramOrder: the sandbox's setup is one sequence in the documented order (README.md): namespaces,
// mounts, PID 1, privileges dropped, Landlock, seccomp, exec, and the optional steps come only with their request.
func TestSetupProgramOrder(t *testing.T) {
	k, err := newKeeper(&commandPolicy{Isolation: protocol.IsolationPIDNamespace, Dir: "/", Env: []string{"A=b"}})
	if err != nil {
		t.Fatal(err)
	}
	firsts := func(prog []forkStep) []uint32 {
		var seen []uint32
		for _, s := range prog {
			if s.step != 0 && !slices.Contains(seen, s.step) {
				seen = append(seen, s.step)
			}
		}
		return seen
	}
	want := []uint32{stepFds, stepParent, stepSync, stepSetnsUser, stepSetnsNet, stepSetnsMnt, stepSetgid, stepSetuid,
		stepUnshare, stepAttach, stepFork, stepSetsid, stepMountProc, stepChdir, stepNoNewPrivs, stepBounding,
		stepSecurebits, stepLandlockProc, stepLandlock, stepSeccomp, stepExec}
	if got := firsts(k.programs[forkRuleset|forkLayer]); !slices.Equal(got, want) {
		t.Errorf("the setup's steps come in this order:\n%v\nwant\n%v", names(got), names(want))
	}
	plain := firsts(k.programs[0])
	for _, s := range []uint32{stepAttach, stepLandlockProc, stepLandlock} {
		if slices.Contains(plain, s) {
			t.Errorf("a request without a layer or a ruleset still has the step %q", stepNames[s])
		}
	}
	if last := k.programs[0][len(k.programs[0])-1]; last.step != stepExec {
		t.Errorf("the program ends with %q, not the exec", stepNames[last.step])
	}
}

// TestSetupFailureNamesItsStep: a step that fails in the child (here setns into a descriptor that is no
// namespace) is reported to the server with its name and errno, and the keeper exits without running the rest.
// Control: the same keeper sent no go-ahead exits quietly, and the server reads no failure.
func TestSetupFailureNamesItsStep(t *testing.T) {
	k, err := newKeeper(&commandPolicy{Isolation: protocol.IsolationPIDNamespace, Dir: "/", Env: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	notNS, err := os.Open("/dev/null")
	if err != nil {
		t.Fatal(err)
	}
	defer notNS.Close()
	thread := newForkThread()
	defer thread.close()
	run := func(goAhead bool) error {
		syncR, syncW, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		repR, repW, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		k.state.cloneFlags, k.state.ppid = 0, uintptr(os.Getpid())
		for i := range k.state.fds {
			k.state.fds[i] = -1
		}
		k.state.fds[fdSync], k.state.fds[fdReport] = int(syncR.Fd()), int(repW.Fd())
		k.state.fds[fdUserNS], k.state.fds[fdNetNS], k.state.fds[fdMntNS] = int(notNS.Fd()), int(notNS.Fd()), int(notNS.Fd())
		var pid int
		var errno syscall.Errno
		_ = thread.do(func() {
			syscall.ForkLock.Lock()
			pid, errno = nsFork(k.programs[0], &k.state)
			syscall.ForkLock.Unlock()
		})
		syncR.Close()
		repW.Close()
		if errno != 0 {
			t.Fatalf("fork: %v", errno)
		}
		st := &nsStarted{syncW: syncW, reportR: repR}
		if !goAhead {
			syncW.Close()
			st.syncW, _ = os.Open("/dev/null") // goAhead writes to it and closes it
		}
		err = st.goAhead()
		var ws syscall.WaitStatus
		if _, werr := syscall.Wait4(pid, &ws, 0, nil); werr != nil || ws.ExitStatus() != 253 {
			t.Errorf("the keeper ended with %v (%v), want exit code 253", ws, werr)
		}
		return err
	}
	err = run(true)
	if err == nil || !strings.Contains(err.Error(), "joining the user namespace") || !strings.Contains(err.Error(), syscall.EINVAL.Error()) {
		t.Errorf("a failing setns was reported as %v, want its step (joining the user namespace) and EINVAL", err)
	}
	if err := run(false); err != nil {
		t.Errorf("control: a keeper sent no go-ahead reported %v, want nothing", err)
	}
}

func names(steps []uint32) []string {
	var n []string
	for _, s := range steps {
		n = append(n, stepNames[s])
	}
	return n
}
