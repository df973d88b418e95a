//go:build linux

package docker

import (
	"testing"

	"github.com/goalbox/goalbox/servers/executor/execserver/backend"
	"github.com/goalbox/goalbox/servers/executor/execserver/internal/sandboxtest"
)

// dockerGuardBackend is a docker backend whose containers work on layers (a root server on the Docker host), or
// without them (the positive controls).
func dockerGuardBackend(t *testing.T, o sandboxtest.GuardOptions) (backend.Backend, string) {
	b, ws := newDockerTestBackend(t, func(c *Config) {
		c.NoWorkspaceLayer, c.MaxWorkspaceBytes, c.MaxWorkspaceInodes = o.Off, o.MaxBytes, o.MaxInodes
		c.CacheHostDir = t.TempDir()
	})
	if b.layered == o.Off {
		t.Fatalf("the workspace layer is %v where it should be %v: %s", b.layered, !o.Off, b.layerNote)
	}
	return b, ws
}

// TestDockerWorkspaceGuard runs the shared suite's workspace-guard attacks on the docker backend (a root server on
// the Docker host): the byte cap at the act (a quick 1 GiB fallocate under 100 MiB; a command started over the
// cap), and what a running process sees and lands. Each has its positive control in the suite (the guard off).
// Left out, and why: the swapped .git's control expects the guard off to plant, but docker without the layer still
// has its read-only binds and the server's sweep, which stop it (TestDockerLayerGuard has the attack with a control
// of its own, nothing protected); the host's git replacing .git needs git in the command image, which the test
// image lacks; /dev/shm is a container's own and goes with it, so no control could show it outlive a command; the
// inode cap is TestDockerLayerGuard's (the suite's 30,000 files cost minutes through containers).
func TestDockerWorkspaceGuard(t *testing.T) {
	requireRoot(t)
	t.Run("disk_cap", func(t *testing.T) { sandboxtest.RunDiskCapAtTheAct(t, dockerGuardBackend) })
	t.Run("process_visibility", func(t *testing.T) { sandboxtest.RunLayerVisibility(t, dockerGuardBackend) })
}
