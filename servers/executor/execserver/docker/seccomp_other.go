//go:build !linux

package docker

import "github.com/goalbox/goalbox/pkg/protocol"

// seccompProfile on a server that is not Linux: github.com/moby/profiles/seccomp builds the Engine's default profile
// only on Linux, so the containers get the Engine's own default (which, on Docker Desktop's current engine, already
// refuses io_uring and AF_VSOCK) and the mode sweep after each command (sweep_unix.go) is what clears set-user-id,
// set-group-id and world-writable bits. Confinement says so.
func seccompProfile() (string, error) { return "", nil }

// seccompReport: the Engine's default; set-user-id, set-group-id and world-writable bits are cleared after each
// command.
const seccompReport = protocol.SeccompEngineDefault
