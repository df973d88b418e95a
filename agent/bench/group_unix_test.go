//go:build unix

package bench

import (
	"os/exec"
	"syscall"
)

// newGroup starts a command in a process group of its own, so killGroup ends all of it.
func newGroup() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

func killGroup(cmd *exec.Cmd) { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
