// Package netns opens listeners inside another network namespace, two ways: Listen enters it (the docker backend's
// egress proxy listens in its network holder's this way, as root on the host), and a member process makes one and
// hands it over (OfferHandoff, SendListener: the local backend's holder, for a server that may not enter it). The
// egress tests' upstreams listen in namespaces of their own.
package netns

import (
	"fmt"
	"net"
	"os"
	"runtime"

	"golang.org/x/sys/unix"
)

// Listen opens a TCP listener on addr in the network namespace named by the file nsPath (/proc/<pid>/ns/net, or a
// named namespace's /run/netns/<name>): a thread enters the namespace for the one call, and the socket keeps the
// namespace after the thread is back in the server's. If the thread cannot go back it is not unlocked, and ends with
// its goroutine (the runtime never reuses it, nor makes new threads from a locked one).
func Listen(nsPath, addr string) (net.Listener, error) {
	var ln net.Listener
	var err error
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread()
		self, e := os.Open("/proc/thread-self/ns/net")
		if e != nil {
			err = e
			runtime.UnlockOSThread()
			return
		}
		defer self.Close()
		target, e := os.Open(nsPath)
		if e != nil {
			err = e
			runtime.UnlockOSThread()
			return
		}
		defer target.Close()
		if e := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); e != nil {
			err = fmt.Errorf("enter the network namespace %s: %w", nsPath, e)
			runtime.UnlockOSThread()
			return
		}
		ln, err = net.Listen("tcp", addr)
		if e := unix.Setns(int(self.Fd()), unix.CLONE_NEWNET); e == nil {
			runtime.UnlockOSThread()
		}
	}()
	<-done
	return ln, err
}
