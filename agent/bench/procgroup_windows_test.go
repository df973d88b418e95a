//go:build windows

package bench

import "os/exec"

// newProcessGroup: Windows has no process groups to kill as one; the tests that use localSandbox run on Linux (they
// need sh), and on Windows only compile.
func newProcessGroup(cmd *exec.Cmd) {}

// killProcessGroup kills cmd itself (not what it started).
func killProcessGroup(cmd *exec.Cmd) { _ = cmd.Process.Kill() }
