package local

// The holder owns the namespaces every command of a backend shares: a user namespace where the run-as user is root
// (and unprivileged outside), a network namespace with only a loopback, and a mount namespace whose root is the
// minimal root of package rootfs: only what the policy allows, bound into an empty tmpfs. It is a
// copy of the server's binary re-executed once per backend (argv[0] is holderArg0) by os/exec with CLONE_NEWUSER:
// a multi-threaded Go process cannot create a user namespace for itself, and an ordinary user can create the
// others only inside one. It sets its mounts up, reports, and then serves the server's requests to make protected
// paths read-only (protect_linux.go) until its stdin closes (the backend closes, or the server dies: it has the
// server's death as its parent-death signal too).
//
// Each command joins these namespaces from nsFork and adds PID, mount, IPC, UTS and cgroup namespaces of its own.

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/goalbox/goalbox/servers/executor/execserver/internal/netns"
	"github.com/goalbox/goalbox/servers/executor/execserver/internal/rootfs"
	"golang.org/x/sys/unix"
)

// holderArg0 marks a re-executed holder.
const holderArg0 = "goalbox-exec-holder"

// holderPlanEnv carries the holder's mount plan (JSON).
const holderPlanEnv = "GOALBOX_HOLDER_PLAN"

// holderReport is the line the holder writes when its mounts are done.
type holderReport struct {
	Error    string   `json:"error,omitempty"`
	Warnings []string `json:"warnings,omitempty"`
}

// holder is the server's handle on the holder process.
type holder struct {
	cmd      *exec.Cmd
	stdin    *os.File // requests (protect_linux.go); closing it ends the holder
	replies  *os.File
	replyR   *bufio.Reader
	mu       sync.Mutex // one request at a time
	warnings []string
	egress   net.Listener // the sandbox's way out (egress_linux.go), made by the holder; nil without -net-allow
	layers   *holderConn  // each command's own layer (layer_linux.go)
	forks    *holderConn  // each command's keeper (holderfork_linux.go)
}

// startHolder starts the holder on t, the thread whose end must end every sandbox: its user namespace maps the
// run-as user to root, it carries out the mount plan ops, and it forks the sandboxes of policy p.
func startHolder(t *forkThread, ops []rootfs.Op, p *commandPolicy, egress bool) (h *holder, err error) {
	plan, err := json.Marshal(ops)
	if err != nil {
		return nil, err
	}
	policy, err := json.Marshal(p)
	if err != nil {
		return nil, err
	}
	stdinR, stdinW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer stdinR.Close()
	stdoutR, stdoutW, err := os.Pipe()
	if err != nil {
		stdinW.Close()
		return nil, err
	}
	defer stdoutW.Close()
	cmd := &exec.Cmd{
		Path:   "/proc/self/exe",
		Args:   []string{holderArg0},
		Env:    []string{holderPlanEnv + "=" + string(plan), holderPolicyEnv + "=" + string(policy)},
		Dir:    "/",
		Stdin:  stdinR,
		Stdout: stdoutW,
		Stderr: os.Stderr,
		SysProcAttr: &syscall.SysProcAttr{
			Cloneflags:  syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS | syscall.CLONE_NEWNET | syscall.CLONE_NEWIPC,
			UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: p.UID, Size: 1}},
			GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: p.GID, Size: 1}},
			// A root server's holder clears the supplementary groups it inherited (root's), which every keeper
			// it forks would carry: setgroups must be allowed in its namespace for that, which only a process
			// with CAP_SETGID outside may allow. An ordinary user's are kept, as they were outside.
			GidMappingsEnableSetgroups: p.DropGroups,
			// No Credential: the holder stays the server's uid, so that it may execute the server's binary
			// wherever that lies (a root server's binary is often in a folder only root may enter), and keeps
			// the capabilities it needs in its own user namespace as ambient ones across the exec. For a root
			// server that uid is not mapped in the namespace, so these capabilities reach only the inodes of the
			// run-as user; the holder runs nothing but its mounts, and commands never share its credentials.
			// CAP_SETPCAP is for the keepers it forks, which inherit its capabilities: they empty the bounding
			// set and lock the secure bits before PID 1 executes anything.
			AmbientCaps: []uintptr{unix.CAP_SYS_ADMIN, unix.CAP_NET_ADMIN, unix.CAP_DAC_OVERRIDE, unix.CAP_DAC_READ_SEARCH, unix.CAP_SETUID,
				unix.CAP_SETGID, unix.CAP_SETPCAP},
			Pdeathsig: syscall.SIGKILL,
			Setsid:    true,
		},
	}
	h = &holder{cmd: cmd, stdin: stdinW, replies: stdoutR, replyR: bufio.NewReader(stdoutR)}
	// made is h for the clean-up below: a failing return sets the result h to nil before deferred calls run.
	made := h
	started := false
	defer func() {
		if err == nil {
			return
		}
		if started {
			made.close()
			return
		}
		made.layers.close()
		made.forks.close()
		stdinW.Close()
		stdoutR.Close()
	}()
	var layerTheirs, forkTheirs *os.File
	if h.layers, layerTheirs, err = newHolderConn(cmd, holderLayerEnv); err != nil {
		return nil, err
	}
	defer layerTheirs.Close()
	if h.forks, forkTheirs, err = newHolderConn(cmd, holderForkEnv); err != nil {
		return nil, err
	}
	defer forkTheirs.Close()
	var handoff *netns.Handoff // the egress listener's way to the server
	if egress {
		if handoff, err = netns.OfferHandoff(cmd); err != nil {
			return nil, err
		}
		defer handoff.Close()
	}
	// Started on the fork thread: each keeper, the server's child through CLONE_PARENT, has that thread as its
	// parent, and dies with it.
	if terr := t.do(func() { err = cmd.Start() }); terr != nil {
		err = terr
	}
	if err != nil {
		return nil, fmt.Errorf("start the namespace holder: %w", err)
	}
	started = true
	stdoutW.Close()
	line, rerr := h.readReply(30 * time.Second)
	var rep holderReport
	if rerr == nil {
		rerr = json.Unmarshal(line, &rep)
	}
	switch {
	case rerr != nil:
		return nil, fmt.Errorf("the namespace holder did not start: %v", rerr)
	case rep.Error != "":
		return nil, errors.New(rep.Error)
	}
	h.warnings = rep.Warnings
	if handoff != nil {
		if h.egress, err = handoff.Receive(); err != nil {
			return nil, fmt.Errorf("the namespace holder's egress listener: %w", err)
		}
	}
	return h, nil
}

// root is the holder's view of path p: where the server finds what commands see there (its /dev/shm, say).
func (h *holder) root(p string) string {
	return "/proc/" + strconv.Itoa(h.cmd.Process.Pid) + "/root" + p
}

func (h *holder) close() {
	if h.egress != nil {
		h.egress.Close()
	}
	h.layers.close()
	h.forks.close()
	h.stdin.Close()
	defer h.replies.Close()
	done := make(chan struct{})
	go func() { _ = h.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		_ = h.cmd.Process.Kill()
		<-done
	}
}

// readReply reads the holder's next line within d.
func (h *holder) readReply(d time.Duration) ([]byte, error) {
	_ = h.replies.SetReadDeadline(time.Now().Add(d))
	return h.replyR.ReadBytes('\n')
}

// holderMain runs in the re-executed holder: root of the new user namespace, with every capability in it.
func holderMain() int {
	out := json.NewEncoder(os.Stdout)
	var ops []rootfs.Op
	var p commandPolicy
	if err := json.Unmarshal([]byte(os.Getenv(holderPlanEnv)), &ops); err != nil {
		_ = out.Encode(holderReport{Error: "namespace holder: bad plan: " + err.Error()})
		return 1
	}
	if err := json.Unmarshal([]byte(os.Getenv(holderPolicyEnv)), &p); err != nil {
		_ = out.Encode(holderReport{Error: "namespace holder: bad policy: " + err.Error()})
		return 1
	}
	sources, warnings := rootfs.Open(ops)
	// Now become root of the namespace (the run-as user outside): what the mounts create (mountpoints in a
	// tmpfs) must belong to a user mapped in the namespace.
	if err := syscall.Setresgid(0, 0, 0); err != nil {
		_ = out.Encode(holderReport{Error: "namespace holder: setresgid: " + err.Error()})
		return 1
	}
	if err := syscall.Setresuid(0, 0, 0); err != nil {
		_ = out.Encode(holderReport{Error: "namespace holder: setresuid: " + err.Error()})
		return 1
	}
	if p.DropGroups {
		if err := syscall.Setgroups(nil); err != nil {
			_ = out.Encode(holderReport{Error: "namespace holder: clearing the supplementary groups: " + err.Error()})
			return 1
		}
	}
	built, err := rootfs.Build(ops, sources)
	warnings = append(warnings, built...)
	if err != nil {
		_ = out.Encode(holderReport{Error: "namespace holder: " + err.Error()})
		return 1
	}
	if err := netns.LoopbackUp(); err != nil {
		warnings = append(warnings, "loopback not up in the network namespace: "+err.Error())
	}
	if err := netns.SendListener(); err != nil {
		_ = out.Encode(holderReport{Error: "namespace holder: egress " + err.Error()})
		return 1
	}
	if err := serveForks(&p); err != nil {
		_ = out.Encode(holderReport{Error: "namespace holder: " + err.Error()})
		return 1
	}
	_ = out.Encode(holderReport{Warnings: warnings})
	go serveLayers()
	serveProtectRequests(os.Stdin, out)
	return 0
}
