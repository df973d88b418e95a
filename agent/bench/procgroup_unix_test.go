//go:build unix

package bench

import (
	"os/exec"
	"syscall"
)

// newProcessGroup starts cmd in a process group of its own, so that a timeout kills everything it started.
func newProcessGroup(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} }

// killProcessGroup kills cmd's process group.
func killProcessGroup(cmd *exec.Cmd) { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
