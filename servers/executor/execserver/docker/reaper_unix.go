//go:build unix

package docker

import (
	"os/exec"
	"syscall"
)

// detach puts the reaper in a process group of its own: a terminal's Ctrl-C to the server's group misses it.
func detach(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} }
