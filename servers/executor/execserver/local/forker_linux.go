package local

// The forker makes every sandbox of the namespace mode. nsFork cannot use os/exec's vfork: its keeper must stay a
// copy of the process that forked it (it runs code between fork and exec, and never execs). Forked from the server,
// that copy shares the server's whole heap copy-on-write, so after every sandbox the server pays a page fault on
// each page it writes (some 500 per command, measured), on the path of the next MCP response. So the server forks
// nothing itself: a small copy of its binary, re-executed once per backend (argv[0] is forkerArg0), forks each
// keeper with CLONE_PARENT, which makes the keeper the server's child all the same — the server waits for it, sets
// its rlimits and cgroups, and kills it as before, and the keeper's parent-death signal is tied to the server's
// fork thread, as the forker's own is.
//
// The server asks over a SOCK_SEQPACKET socket: one message per sandbox, carrying the keeper's five pipe ends and,
// with Landlock, its ruleset (SCM_RIGHTS); the reply is the keeper's pid or the errno of the fork. What is the same
// for every sandbox (the shell, its environment, the seccomp filter, the holder's namespaces) the forker is given
// once, at start.

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// forkerArg0 marks a re-executed forker.
const forkerArg0 = "goalbox-exec-forker"

// The forker's descriptors: its socket to the server and the holder's namespaces.
const (
	forkerSock   = 3
	forkerUserNS = 4
	forkerNetNS  = 5
	forkerMntNS  = 6
)

// forker is the server's end of a running forker.
type forker struct {
	cmd  *exec.Cmd
	mu   sync.Mutex // one request at a time; close takes it too, so the socket is not closed under a request
	sock *os.File
	fd   int // sock's descriptor, taken once: os.File.Fd is not safe beside Close
}

// startForker starts the forker on t, the thread whose end must end every sandbox.
func startForker(t *forkThread, h *holder, p *commandPolicy) (*forker, error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	ours, theirs := os.NewFile(uintptr(fds[0]), "forker"), os.NewFile(uintptr(fds[1]), "forker")
	defer theirs.Close()
	conf, err := json.Marshal(p)
	if err != nil {
		ours.Close()
		return nil, err
	}
	cmd := &exec.Cmd{
		Path:        "/proc/self/exe",
		Args:        []string{forkerArg0},
		Dir:         "/",
		Stdin:       bytes.NewReader(conf),
		Stderr:      os.Stderr,
		ExtraFiles:  []*os.File{theirs, h.userNS, h.netNS, h.mntNS},
		SysProcAttr: &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL},
	}
	var startErr error
	if err := t.do(func() { startErr = cmd.Start() }); err != nil {
		startErr = err
	}
	if startErr != nil {
		ours.Close()
		return nil, fmt.Errorf("start the forker: %w", startErr)
	}
	return &forker{cmd: cmd, sock: ours, fd: int(ours.Fd())}, nil
}

// fork asks for a keeper with these descriptors (stdin, stdout, stderr, go-ahead, report, then what flags name)
// and returns its pid: a child of this process.
func (f *forker) fork(flags byte, fds []int) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	sock := f.fd
	if f.sock == nil {
		return 0, errors.New("the forker is closed")
	}
	if err := unix.Sendmsg(sock, []byte{flags}, unix.UnixRights(fds...), nil, 0); err != nil {
		return 0, fmt.Errorf("ask the forker: %w", err)
	}
	var rep [8]byte
	n, _, _, _, err := unix.Recvmsg(sock, rep[:], nil, 0)
	switch {
	case err != nil:
		return 0, fmt.Errorf("hear from the forker: %w", err)
	case n != len(rep):
		return 0, errors.New("the forker is gone")
	}
	if errno := syscall.Errno(binary.NativeEndian.Uint32(rep[4:])); errno != 0 {
		return 0, fmt.Errorf("fork: %w", errno)
	}
	return int(binary.NativeEndian.Uint32(rep[:4])), nil
}

// close ends the forker: it exits when its socket closes. The shutdown first ends a request waiting for its reply
// (its Recvmsg returns), so the lock is free soon whatever the forker does; the socket is then closed under it.
func (f *forker) close() {
	_ = unix.Shutdown(f.fd, unix.SHUT_RDWR)
	f.mu.Lock()
	if f.sock != nil {
		f.sock.Close()
		f.sock = nil
	}
	f.mu.Unlock()
	_ = f.cmd.Wait()
}

// forkerMain is the forker: it answers the server's requests until its socket closes.
func forkerMain() int {
	runtime.LockOSThread()
	var p commandPolicy
	if err := json.NewDecoder(os.Stdin).Decode(&p); err != nil {
		fmt.Fprintln(os.Stderr, "goalbox forker: policy:", err)
		return 2
	}
	k, err := newKeeper(&p)
	if err != nil {
		fmt.Fprintln(os.Stderr, "goalbox forker:", err)
		return 2
	}
	var msg [1]byte
	oob := make([]byte, unix.CmsgSpace((6+layerMounts)*4))
	for {
		n, oobn, _, _, err := unix.Recvmsg(forkerSock, msg[:], oob, unix.MSG_CMSG_CLOEXEC)
		if err == syscall.EINTR {
			continue
		}
		if err != nil || n == 0 {
			return 0 // the server closed the socket, or died
		}
		fds := receivedFds(oob[:oobn])
		pid, errno := k.fork(msg[0], fds)
		for _, fd := range fds {
			unix.Close(fd)
		}
		var rep [8]byte
		binary.NativeEndian.PutUint32(rep[:4], uint32(pid))
		binary.NativeEndian.PutUint32(rep[4:], uint32(errno))
		if _, err := unix.Write(forkerSock, rep[:]); err != nil {
			return 0
		}
	}
}

// receivedFds are the descriptors of one request.
func receivedFds(oob []byte) []int {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil
	}
	var fds []int
	for _, m := range msgs {
		if r, err := unix.ParseUnixRights(&m); err == nil {
			fds = append(fds, r...)
		}
	}
	return fds
}
