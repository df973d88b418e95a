//go:build linux

package local

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/goalbox/goalbox/pkg/ciskip"
	"github.com/goalbox/goalbox/pkg/protocol"
	"github.com/goalbox/goalbox/servers/executor/execserver/backend"
	"github.com/goalbox/goalbox/servers/executor/execserver/internal/layer"
	"github.com/goalbox/goalbox/servers/executor/execserver/internal/rootfs"
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
	want := []uint32{stepFds, stepParent, stepSync, stepUnshare, stepAttach, stepFork, stepSetsid, stepMountProc, stepChdir, stepNoNewPrivs, stepBounding,
		stepSecurebits, stepCapset, stepLandlockProc, stepLandlock, stepSeccomp, stepExec}
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

// TestSetupFailureNamesItsStep: a step that fails in the child (here a chdir to a folder that does not exist) is
// reported to the server with its name and errno, and the keeper exits without running the rest. Control: the same
// keeper sent no go-ahead exits quietly, and the server reads no failure.
func TestSetupFailureNamesItsStep(t *testing.T) {
	missing, err := syscall.BytePtrFromString(filepath.Join(t.TempDir(), "missing"))
	if err != nil {
		t.Fatal(err)
	}
	prog := []forkStep{{op: opPlaceFds, step: stepFds}, {op: opGoAhead, step: stepSync},
		{op: opCall, step: stepChdir, trap: syscall.SYS_CHDIR, args: [6]uintptr{uintptr(unsafe.Pointer(missing))}},
		{op: opCall, step: stepExec, trap: syscall.SYS_EXIT_GROUP}}
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
		st := &forkState{ppid: uintptr(os.Getpid())}
		for i := range st.fds {
			st.fds[i] = -1
		}
		st.fds[fdSync], st.fds[fdReport] = int(syncR.Fd()), int(repW.Fd())
		var pid int
		var errno syscall.Errno
		_ = thread.do(func() {
			syscall.ForkLock.Lock()
			pid, errno = nsFork(prog, st)
			syscall.ForkLock.Unlock()
		})
		syncR.Close()
		repW.Close()
		if errno != 0 {
			t.Fatalf("fork: %v", errno)
		}
		started := &nsStarted{syncW: syncW, reportR: repR}
		if !goAhead {
			syncW.Close()
			started.syncW, _ = os.Open("/dev/null") // goAhead writes to it and closes it
		}
		err = started.goAhead()
		var ws syscall.WaitStatus
		if _, werr := syscall.Wait4(pid, &ws, 0, nil); werr != nil || ws.ExitStatus() != 253 {
			t.Errorf("the keeper ended with %v (%v), want exit code 253", ws, werr)
		}
		runtime.KeepAlive(missing)
		return err
	}
	err = run(true)
	if err == nil || !strings.Contains(err.Error(), stepNames[stepChdir]) || !strings.Contains(err.Error(), syscall.ENOENT.Error()) {
		t.Errorf("a failing chdir was reported as %v, want its step (%s) and ENOENT", err, stepNames[stepChdir])
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

// TestCommandCarriesNoPrivilege: a command's keeper is forked by the holder and inherits its credentials, so the
// setup must take them all away: no capability in any set, no_new_privs, a seccomp filter, and for a root server no
// supplementary group (the server's are cleared in the holder). Controls: the holder itself holds capabilities,
// and a plain child of the server shows the server's supplementary group.
func TestCommandCarriesNoPrivilege(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("a root server's property: an ordinary user's supplementary groups are kept, as outside")
	}
	const group = 4242
	if err := syscall.Setgroups([]int{group}); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = syscall.Setgroups(nil) }()
	be, _ := newLocalTestBackend(t, nil)
	lb := be.(*localBackend)
	if !lb.policy.namespaced() {
		ciskip.Skip(t, "fallback mode: no holder here")
	}
	var out strings.Builder
	res, err := be.Run(context.Background(), backend.Request{Command: "cat /proc/self/status", Dir: ".", Timeout: time.Minute,
		Stdout: &out, Stderr: &out})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("%+v %v\n%s", res, err, out.String())
	}
	status := statusFields(out.String())
	for _, f := range []string{"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"} {
		if status[f] != "0000000000000000" {
			t.Errorf("the command's %s is %q, want no capability", f, status[f])
		}
	}
	if status["NoNewPrivs"] != "1" || status["Seccomp"] != "2" {
		t.Errorf("the command has NoNewPrivs %q and Seccomp %q, want 1 and 2 (a filter)", status["NoNewPrivs"], status["Seccomp"])
	}
	if status["Groups"] != "" {
		t.Errorf("the command carries the supplementary groups %q, want none", status["Groups"])
	}

	holder, err := os.ReadFile("/proc/" + strconv.Itoa(lb.ns.holder.cmd.Process.Pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	if eff := statusFields(string(holder))["CapEff"]; eff == "0000000000000000" || eff == "" {
		t.Errorf("control: the holder has CapEff %q, so the keepers inherit nothing to drop", eff)
	}
	plain, err := exec.Command("cat", "/proc/self/status").Output()
	if err != nil {
		t.Fatal(err)
	}
	if g := statusFields(string(plain))["Groups"]; g != strconv.Itoa(group) {
		t.Errorf("control: a plain child of the server has the groups %q, want %d", g, group)
	}
}

// statusFields are the fields of a /proc/PID/status text.
func statusFields(s string) map[string]string {
	m := map[string]string{}
	for line := range strings.Lines(s) {
		k, v, ok := strings.Cut(line, ":")
		if ok {
			m[k] = strings.TrimSpace(v)
		}
	}
	return m
}

// TestLayerKeeperProgram: the keeper's program attaches each of a layer's mounts (package layer orders them, its
// TestAttachOrder), and what the holder bound below a mount point of the layer is parked and put back: the egress
// roots file of a cache folder under /tmp, a read folder there (with what is below it); the mount points themselves
// and what lies elsewhere are not.
func TestLayerKeeperProgram(t *testing.T) {
	p := &commandPolicy{Dir: "/tmp/t1/ws", PrivateLayers: []layer.Private{{Dir: "/tmp/t1/cache/home"}, {Dir: "/tmp/t1/cache/tmp/i1", Also: "/tmp"},
		{Dir: "/tmp/t1/cache/cache"}}}
	k, err := newKeeper(&commandPolicy{Isolation: protocol.IsolationPIDNamespace, Dir: "/", Env: []string{"A=b"}, PrivateLayers: p.PrivateLayers})
	if err != nil {
		t.Fatal(err)
	}
	attach := 0
	for _, s := range k.programs[forkLayer] {
		if s.step == stepAttach {
			attach++
		}
	}
	if attach != 6 { // five mounts moved, one bind
		t.Errorf("the layer's program attaches %d times, want 6", attach)
	}
	plan := &rootfs.Plan{Ops: []rootfs.Op{{Kind: "bind", Target: "/usr"}, {Kind: "bind", Target: "/tmp"}, {Kind: "bind", Target: "/tmp/t1/cache/roots.pem"},
		{Kind: "bind", Target: "/tmp/t1/cache/home"}, {Kind: "bind", Target: "/tmp/t1/ro"}, {Kind: "bind", Target: "/tmp/t1/ro/sub"}, {Kind: "tmpfs", Target: "/dev/shm"}}}
	if keeps := layerKeeps(p, plan); !slices.Equal(keeps, []string{"/tmp/t1/cache/roots.pem", "/tmp/t1/ro"}) {
		t.Errorf("keeps %v", keeps)
	}
}
