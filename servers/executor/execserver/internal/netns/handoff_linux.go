package netns

// A listener made by a member of a network namespace and handed over: the way a server that may not enter the
// namespace (setns takes CAP_SYS_ADMIN in the server's own user namespace too, which an unprivileged server lacks)
// gets a socket in it. The member makes it when it starts and sends the descriptor over a unix socketpair
// (SCM_RIGHTS); nothing else crosses. The local backend's holder does this for the egress proxy.

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"

	"golang.org/x/sys/unix"
)

// handoffEnv tells the member process which descriptor to send its listener on.
const handoffEnv = "GOALBOX_NETNS_LISTENER_FD"

// Handoff is the server's end of the socketpair a member process sends its listener on.
type Handoff struct {
	ours, theirs *os.File
}

// OfferHandoff asks the process cmd (not started yet) for a listener: it adds the member's end of a socketpair to
// cmd's descriptors and names it in cmd's environment, for SendListener in that process.
func OfferHandoff(cmd *exec.Cmd) (*Handoff, error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("listener socketpair: %w", err)
	}
	theirs := os.NewFile(uintptr(fds[1]), "listener-member")
	cmd.ExtraFiles = append(cmd.ExtraFiles, theirs)
	cmd.Env = append(cmd.Env, handoffEnv+"="+strconv.Itoa(2+len(cmd.ExtraFiles)))
	return &Handoff{ours: os.NewFile(uintptr(fds[0]), "listener-server"), theirs: theirs}, nil
}

// Receive takes the listener the process sent (call it once the process said it is ready), and closes the pair.
// The listener is a close-on-exec descriptor: no child of the server inherits it.
func (h *Handoff) Receive() (net.Listener, error) {
	defer h.Close()
	buf := make([]byte, 16)
	oob := make([]byte, unix.CmsgSpace(4))
	n, oobn, _, _, err := unix.Recvmsg(int(h.ours.Fd()), buf, oob, unix.MSG_CMSG_CLOEXEC|unix.MSG_DONTWAIT)
	if err != nil {
		return nil, fmt.Errorf("no listener was sent: %w", err)
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil || len(msgs) != 1 {
		return nil, fmt.Errorf("the listener's message is malformed (%q): %v", buf[:n], err)
	}
	fds, err := unix.ParseUnixRights(&msgs[0])
	if err != nil || len(fds) != 1 {
		for _, fd := range fds {
			unix.Close(fd)
		}
		return nil, fmt.Errorf("the listener's message carries no descriptor: %v", err)
	}
	f := os.NewFile(uintptr(fds[0]), "listener")
	defer f.Close()
	return net.FileListener(f)
}

// Close releases both ends (the process has its own copy once started); a second close does nothing.
func (h *Handoff) Close() {
	h.ours.Close()
	h.theirs.Close()
}

// SendListener runs in the member process: when its server offered a handoff, it makes a TCP listener on
// 127.0.0.1 (a free port: the server reads it from the socket) in its network namespace and sends it. Without an
// offer it does nothing.
func SendListener() error {
	v := os.Getenv(handoffEnv)
	if v == "" {
		return nil
	}
	sock, err := strconv.Atoi(v)
	if err != nil {
		return errors.New("bad " + handoffEnv)
	}
	defer unix.Close(sock)
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("listener: %w", err)
	}
	defer unix.Close(fd)
	if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		return fmt.Errorf("listener: bind 127.0.0.1: %w", err)
	}
	if err := unix.Listen(fd, 1024); err != nil {
		return fmt.Errorf("listener: listen: %w", err)
	}
	if err := unix.Sendmsg(sock, []byte("listener"), unix.UnixRights(fd), nil, 0); err != nil {
		return fmt.Errorf("listener: send it to the server: %w", err)
	}
	return nil
}

// LoopbackUp brings up the loopback interface of the calling thread's network namespace.
func LoopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return err
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	return unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr)
}
