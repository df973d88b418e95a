//go:build windows

package docker

import (
	"os/exec"
	"syscall"
)

// detach starts the reaper in a process group of its own: a console's Ctrl-C to the server misses it.
func detach(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{CreationFlags: syscall.CREATE_NEW_PROCESS_GROUP}
}
