//go:build !unix

package bench

import (
	"os/exec"
	"syscall"
)

// newGroup: no process groups here; killGroup kills the command's own process.
func newGroup() *syscall.SysProcAttr { return nil }

func killGroup(cmd *exec.Cmd) { _ = cmd.Process.Kill() }
