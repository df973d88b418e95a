package local

// The holder owns the namespaces every command of a backend shares: a user namespace where the run-as user is root
// (and unprivileged outside), a network namespace with only a loopback, and a mount namespace whose root is the
// minimal root of mountplan_linux.go: only what the policy allows, bound into an empty tmpfs. It is a
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
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// holderArg0 marks a re-executed holder.
const holderArg0 = "goalbox-exec-holder"

// holderPlanEnv carries the holder's mount plan (JSON).
const holderPlanEnv = "GOALBOX_HOLDER_PLAN"

// mountOp is one step of the holder's mount plan (mountplan_linux.go). Targets are paths as commands see them;
// until the pivot the holder builds them under the staging folder.
type mountOp struct {
	// Kind is "private" (stop propagation to and from the host), "root" (an empty tmpfs at Target, the staging
	// folder of the new root), "bind" (Source onto Target, its mountpoint made first), "tmpfs" (an empty tmpfs at
	// Target), "devpts" (a new devpts instance at Target), "dir" (an empty folder), "symlink" (a link at Target whose text is Source) or "pivot" (make the
	// staging folder Target the root, detach the old one, and make the root itself read-only).
	Kind   string `json:"kind"`
	Target string `json:"target"`
	// Source is opened before any mount is made, so a tmpfs over one of its folders does not hide it. A bind
	// source must be a mount of the holder's own namespace, so the server cannot open it for the holder.
	Source string `json:"source,omitempty"`
	Opts   string `json:"opts,omitempty"`   // tmpfs: mount options
	Write  bool   `json:"write,omitempty"`  // bind: read-write (else read-only)
	Device bool   `json:"device,omitempty"` // bind: device files may be opened (else nodev)
}

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
	egress   net.Listener // the sandbox's way out (egress_linux.go); nil without -net-allow
	layers   *holderConn  // each command's own layer (layer_linux.go)
	forks    *holderConn  // each command's keeper (holderfork_linux.go)
}

// startHolder starts the holder on t, the thread whose end must end every sandbox: its user namespace maps the
// run-as user to root, it carries out the mount plan ops, and it forks the sandboxes of policy p.
func startHolder(t *forkThread, ops []mountOp, p *commandPolicy, egress bool) (h *holder, err error) {
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
	eg, err := holderEgressStart(cmd, egress)
	defer eg.close()
	if err != nil {
		return nil, err
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
	if h.egress, err = eg.receive(); err != nil {
		return nil, err
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
	var ops []mountOp
	var p commandPolicy
	if err := json.Unmarshal([]byte(os.Getenv(holderPlanEnv)), &ops); err != nil {
		_ = out.Encode(holderReport{Error: "namespace holder: bad plan: " + err.Error()})
		return 1
	}
	if err := json.Unmarshal([]byte(os.Getenv(holderPolicyEnv)), &p); err != nil {
		_ = out.Encode(holderReport{Error: "namespace holder: bad policy: " + err.Error()})
		return 1
	}
	var warnings []string
	sources := map[string]*os.File{}
	for _, op := range ops {
		// Only a bind opens its Source; a symlink's Source is the link's text.
		if op.Kind != "bind" || sources[op.Source] != nil {
			continue
		}
		f, err := os.OpenFile(op.Source, unix.O_PATH|unix.O_CLOEXEC, 0)
		if err != nil {
			warnings = append(warnings, fmt.Sprintf("%s is not reachable for commands: %v", op.Source, err))
			continue
		}
		sources[op.Source] = f
	}
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
	staging := ""
	for _, op := range ops {
		if op.Kind == "bind" && sources[op.Source] == nil {
			continue
		}
		err := op.apply(sources[op.Source], staging)
		switch op.Kind {
		case "root":
			staging = op.Target
		case "pivot":
			staging = ""
		}
		if err != nil {
			if op.Kind == "tmpfs" || op.Kind == "symlink" {
				warnings = append(warnings, err.Error())
				continue
			}
			_ = out.Encode(holderReport{Error: "namespace holder: " + err.Error()})
			return 1
		}
	}
	if err := loopbackUp(); err != nil {
		warnings = append(warnings, "loopback not up in the network namespace: "+err.Error())
	}
	if err := holderEgressListen(); err != nil {
		_ = out.Encode(holderReport{Error: "namespace holder: " + err.Error()})
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

func (op mountOp) apply(src *os.File, staging string) error {
	target := op.Target
	if staging != "" {
		target = filepath.Join(staging, op.Target)
	}
	switch op.Kind {
	case "private":
		if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
			return fmt.Errorf("make mounts private: %w", err)
		}
	case "root":
		if err := unix.Mount("tmpfs", op.Target, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "size=1m,mode=755"); err != nil {
			return fmt.Errorf("could not make the new root at %s: %w", op.Target, err)
		}
	case "tmpfs":
		if err := os.MkdirAll(target, 0o755); err != nil {
			return err
		}
		if err := unix.Mount("tmpfs", target, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, op.Opts); err != nil {
			return fmt.Errorf("could not put a tmpfs over %s: %w", op.Target, err)
		}
	case "devpts":
		if err := os.MkdirAll(target, 0o755); err != nil {
			return err
		}
		if err := unix.Mount("devpts", target, "devpts", unix.MS_NOSUID|unix.MS_NOEXEC, "newinstance,ptmxmode=0666,mode=0620"); err != nil {
			return fmt.Errorf("could not mount a devpts of its own at %s: %w", op.Target, err)
		}
	case "dir":
		return os.MkdirAll(target, 0o755)
	case "symlink":
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return err
		}
		return os.Symlink(op.Source, target)
	case "bind":
		return bindInto(src, target, op.Write, op.Device)
	case "pivot":
		return pivotInto(op.Target)
	default:
		return fmt.Errorf("unknown mount step %q", op.Kind)
	}
	return nil
}

// bindInto binds the tree src is open on at target (its mountpoint made first), read-only unless write, nosuid,
// nodev unless device. The new mount API sets the flags on the clone before it is attached, so no moment exists
// where the bind is writable, and the flags the host set (locked in a user namespace) are kept, not restated.
func bindInto(src *os.File, target string, write, device bool) error {
	fi, err := src.Stat()
	if err != nil {
		return err
	}
	if fi.IsDir() {
		if err := os.MkdirAll(target, 0o755); err != nil {
			return fmt.Errorf("bind %s: %w", target, err)
		}
	} else {
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return fmt.Errorf("bind %s: %w", target, err)
		}
		if f, err := os.OpenFile(target, os.O_CREATE|os.O_RDONLY, 0o644); err == nil {
			f.Close()
		}
	}
	tree, err := unix.OpenTree(int(src.Fd()), "", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_EMPTY_PATH|unix.AT_RECURSIVE)
	if err != nil {
		return fmt.Errorf("bind %s: clone: %w", target, err)
	}
	defer unix.Close(tree)
	attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_NOSUID}
	if !device {
		attr.Attr_set |= unix.MOUNT_ATTR_NODEV
	}
	if !write {
		attr.Attr_set |= unix.MOUNT_ATTR_RDONLY
	}
	if err := unix.MountSetattr(tree, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, &attr); err != nil {
		return fmt.Errorf("bind %s: set flags: %w", target, err)
	}
	if err := unix.MoveMount(tree, "", unix.AT_FDCWD, target, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		return fmt.Errorf("bind %s: attach: %w", target, err)
	}
	return nil
}

// pivotInto makes the staging folder the root of the holder's mount namespace (every command joins it), detaches
// the host's tree below it, and makes the root's own tmpfs read-only, so commands cannot add names to / either.
func pivotInto(staging string) error {
	if err := unix.Chdir(staging); err != nil {
		return fmt.Errorf("pivot: %w", err)
	}
	if err := unix.PivotRoot(".", "."); err != nil {
		return fmt.Errorf("pivot_root: %w", err)
	}
	if err := unix.Unmount(".", unix.MNT_DETACH); err != nil {
		return fmt.Errorf("detach the host's root: %w", err)
	}
	if err := unix.Chdir("/"); err != nil {
		return err
	}
	attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}
	if err := unix.MountSetattr(unix.AT_FDCWD, "/", 0, &attr); err != nil {
		return fmt.Errorf("make the new root read-only: %w", err)
	}
	return nil
}
