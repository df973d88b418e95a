package local

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"
)

// holderConn is the server's end of one of the holder's request sockets (layers, forks): a SOCK_SEQPACKET pair,
// one request at a time, each one message with descriptors answered by one message with descriptors.
type holderConn struct {
	mu   sync.Mutex // one request at a time; close takes it too, so the socket is not closed under a request
	sock *os.File
	fd   int // sock's descriptor, taken once: os.File.Fd is not safe beside Close
}

// newHolderConn makes a socket pair and hands the holder cmd (not started yet) its end, named in its environment
// by envName. The caller closes theirs once cmd started.
func newHolderConn(cmd *exec.Cmd, envName string) (c *holderConn, theirs *os.File, err error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("holder socketpair: %w", err)
	}
	theirs = os.NewFile(uintptr(fds[1]), envName)
	cmd.ExtraFiles = append(cmd.ExtraFiles, theirs)
	cmd.Env = append(cmd.Env, envName+"="+strconv.Itoa(2+len(cmd.ExtraFiles)))
	return &holderConn{sock: os.NewFile(uintptr(fds[0]), envName), fd: fds[0]}, theirs, nil
}

// call sends req with fds and returns the reply and up to maxFds descriptors that came with it; what names what
// is asked for in errors.
func (c *holderConn) call(what string, req []byte, fds []int, maxFds int) ([]byte, []int, error) {
	if c == nil {
		return nil, nil, fmt.Errorf("the namespace holder makes no %s", what)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sock == nil {
		return nil, nil, fmt.Errorf("ask the namespace holder for %s: it is closed", what)
	}
	var oob []byte
	if len(fds) > 0 {
		oob = unix.UnixRights(fds...)
	}
	if err := unix.Sendmsg(c.fd, req, oob, nil, 0); err != nil {
		return nil, nil, fmt.Errorf("ask the namespace holder for %s: %w", what, err)
	}
	buf := make([]byte, 4096)
	oob = make([]byte, unix.CmsgSpace(max(maxFds, 1)*4))
	n, oobn, _, _, err := unix.Recvmsg(c.fd, buf, oob, unix.MSG_CMSG_CLOEXEC)
	if err != nil {
		return nil, nil, fmt.Errorf("hear from the namespace holder about %s: %w", what, err)
	}
	if n == 0 {
		return nil, nil, errors.New("the namespace holder is gone")
	}
	return buf[:n], receivedFds(oob[:oobn]), nil
}

// close wakes a request still waiting for the holder (shutdown), then closes the socket once that request has let
// go of it: a descriptor closed under a running Recvmsg could be reused by another file meanwhile.
func (c *holderConn) close() {
	if c == nil {
		return
	}
	c.mu.Lock()
	open := c.sock != nil
	c.mu.Unlock()
	if !open {
		return
	}
	_ = unix.Shutdown(c.fd, unix.SHUT_RDWR)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sock != nil {
		c.sock.Close()
		c.sock = nil
	}
}

// serveHolderConn runs in the holder: it answers each request on the socket its environment names with handle's
// reply, until the socket closes. handle owns the descriptors it is given; those it returns are closed once sent.
func serveHolderConn(envName string, maxFds int, handle func(req []byte, fds []int) ([]byte, []int)) {
	sock, err := strconv.Atoi(os.Getenv(envName))
	if err != nil {
		return
	}
	buf := make([]byte, 64<<10)
	oob := make([]byte, unix.CmsgSpace(max(maxFds, 1)*4))
	for {
		n, oobn, _, _, err := unix.Recvmsg(sock, buf, oob, unix.MSG_CMSG_CLOEXEC)
		if err == unix.EINTR {
			continue
		}
		if err != nil || n == 0 {
			return // the server closed the socket, or died
		}
		rep, fds := handle(buf[:n], receivedFds(oob[:oobn]))
		var rights []byte
		if len(fds) > 0 {
			rights = unix.UnixRights(fds...)
		}
		_ = unix.Sendmsg(sock, rep, rights, nil, 0)
		for _, fd := range fds {
			unix.Close(fd)
		}
	}
}

// receivedFds are the descriptors of one message.
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
