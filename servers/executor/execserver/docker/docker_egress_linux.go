//go:build linux

package docker

import (
	"fmt"
	"net"
	"os"
	"runtime"

	"golang.org/x/sys/unix"
)

// listenInNetns opens a TCP listener on 127.0.0.1 (a free port) in the network namespace of process pid: a thread
// enters the namespace for the one call, and the socket keeps the namespace after the thread is back in the
// server's. If the thread cannot go back it is not unlocked, and ends with its goroutine (the runtime never
// reuses it, nor makes new threads from a locked one).
func listenInNetns(pid int) (net.Listener, error) {
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
		target, e := os.Open(fmt.Sprintf("/proc/%d/ns/net", pid))
		if e != nil {
			err = e
			runtime.UnlockOSThread()
			return
		}
		defer target.Close()
		if e := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); e != nil {
			err = fmt.Errorf("enter the holder's network namespace: %w", e)
			runtime.UnlockOSThread()
			return
		}
		ln, err = net.Listen("tcp", "127.0.0.1:0")
		if e := unix.Setns(int(self.Fd()), unix.CLONE_NEWNET); e == nil {
			runtime.UnlockOSThread()
		}
	}()
	<-done
	return ln, err
}
