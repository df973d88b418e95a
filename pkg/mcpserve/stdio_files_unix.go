//go:build unix

package mcpserve

import (
	"io"
	"os"
	"runtime"
	"syscall"
)

// stdioFiles returns stdin and stdout for -stdio, each in non-blocking mode and so waited on by the Go runtime's
// poller where it is a pipe or a socket (as an MCP client starts a server). A blocking read holds an OS thread in
// the kernel between requests, and each request then crosses threads — the reader's, the SDK's, the handler's —
// with a wake-up of the kernel's each time; on the poller a request wakes one thread, which reads, handles and
// writes it (with GOMAXPROCS 1, see Run). A terminal or a file is left as it is: the mode of a terminal is shared
// with the shell that owns it. restore puts both back in blocking mode.
func stdioFiles() (in io.Reader, out io.Writer, restore func()) {
	in, restoreIn := pollable(os.Stdin)
	out, restoreOut := pollable(os.Stdout)
	return in, out, func() { restoreIn(); restoreOut() }
}

func pollable(f *os.File) (*os.File, func()) {
	fi, err := f.Stat()
	if err != nil || fi.Mode()&(os.ModeNamedPipe|os.ModeSocket) == 0 {
		return f, func() {}
	}
	fd := int(f.Fd())
	if err := syscall.SetNonblock(fd, true); err != nil {
		return f, func() {}
	}
	// os.NewFile registers a descriptor that is already non-blocking with the poller. The new File is kept by the
	// closure so that its finalizer does not close the descriptor under os.Stdin or os.Stdout.
	p := os.NewFile(uintptr(fd), f.Name())
	return p, func() {
		syscall.SetNonblock(fd, false)
		runtime.KeepAlive(p)
	}
}
