//go:build unix

package mcpserve

import "syscall"

// setUmask sets the process's umask and returns the restore.
func setUmask(m int) func() {
	old := syscall.Umask(m)
	return func() { syscall.Umask(old) }
}
