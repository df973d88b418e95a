//go:build !linux

package load

import "os/exec"

func dieWithTest(*exec.Cmd) {}
