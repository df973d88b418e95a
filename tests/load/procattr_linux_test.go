package load

import (
	"os/exec"
	"syscall"
)

// dieWithTest makes the kernel kill the server if the test process dies first (a panic or a -timeout ends it before
// its cleanups run), so no server outlives the test.
func dieWithTest(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
