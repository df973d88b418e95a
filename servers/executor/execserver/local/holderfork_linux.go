package local

// The holder forks every sandbox of the namespace mode. nsFork cannot use os/exec's vfork: its keeper must stay a
// copy of the process that forked it (it runs code between fork and exec, and never execs). Forked from the server,
// that copy would share the server's whole heap copy-on-write, and after every sandbox the server would pay a page
// fault on each page it writes (some 500 per command, measured), on the path of the next MCP response. So the
// server forks nothing itself: the holder, a small copy of its binary already inside the sandbox's namespaces,
// forks each keeper with CLONE_PARENT, which makes the keeper the server's child all the same — the server waits
// for it, sets its rlimits and cgroups, and kills it — and the keeper's parent-death signal is tied to the server's
// fork thread, which started the holder.
//
// The server asks over a socket of the holder's own (holderConn): one message per sandbox, its one byte the
// request's flags, carrying the keeper's five pipe ends and, with Landlock, its ruleset and, with a layer, the
// layer's mounts (SCM_RIGHTS); the reply is the keeper's pid or the errno of the fork. What is the same for every
// sandbox (the shell, its environment, the seccomp filter) the holder is given once, at start: the policy.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"syscall"

	"github.com/goalbox/goalbox/servers/executor/execserver/internal/layer"
	"golang.org/x/sys/unix"
)

// holderForkEnv tells the holder the descriptor of its fork socket, holderPolicyEnv the policy (JSON).
const (
	holderForkEnv   = "GOALBOX_HOLDER_FORK"
	holderPolicyEnv = "GOALBOX_HOLDER_POLICY"
)

// forkKeeper asks the holder for a keeper with these descriptors (stdin, stdout, stderr, go-ahead, report, then
// what flags name) and returns its pid: a child of this process.
func (h *holder) forkKeeper(flags byte, fds []int) (int, error) {
	rep, _, err := h.forks.call("a sandbox", []byte{flags}, fds, 0)
	switch {
	case err != nil:
		return 0, err
	case len(rep) != 8:
		return 0, errors.New("the namespace holder is gone")
	}
	if errno := syscall.Errno(binary.NativeEndian.Uint32(rep[4:])); errno != 0 {
		return 0, fmt.Errorf("fork: %w", errno)
	}
	return int(binary.NativeEndian.Uint32(rep[:4])), nil
}

// serveForks runs in the holder: it prepares the setup program from the policy, then forks one keeper per request
// until the socket closes.
func serveForks(p *commandPolicy) error {
	k, err := newKeeper(p)
	if err != nil {
		return err
	}
	go func() {
		runtime.LockOSThread()
		serveHolderConn(holderForkEnv, 6+layer.MaxMounts, func(req []byte, fds []int) ([]byte, []int) {
			var rep [8]byte
			errno := syscall.EINVAL
			var pid int
			if len(req) == 1 {
				pid, errno = k.fork(req[0], fds)
			}
			for _, fd := range fds {
				unix.Close(fd)
			}
			binary.NativeEndian.PutUint32(rep[:4], uint32(pid))
			binary.NativeEndian.PutUint32(rep[4:], uint32(errno))
			return rep[:], nil
		})
	}()
	return nil
}
