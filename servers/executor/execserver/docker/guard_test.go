//go:build linux

package docker

import (
	"testing"

	"github.com/goalbox/goalbox/servers/executor/execserver/backend"
	"github.com/goalbox/goalbox/servers/executor/execserver/internal/sandboxtest"
)

// dockerGuardBackend makes backends whose containers work on layers (a root server on the Docker host), or without
// them (the positive controls), in image, with a warm pool of pool containers.
func dockerGuardBackend(image string, pool int) sandboxtest.GuardBackend {
	return func(t *testing.T, o sandboxtest.GuardOptions) (backend.Backend, string) {
		b, ws := newDockerTestBackend(t, func(c *Config) {
			c.NoWorkspaceLayer, c.MaxWorkspaceBytes, c.MaxWorkspaceInodes = o.Off, o.MaxBytes, o.MaxInodes
			c.CacheHostDir, c.WarmPool = t.TempDir(), pool
			if image != "" {
				c.Image = image
			}
		})
		if b.layered == o.Off {
			t.Fatalf("the workspace layer is %v where it should be %v: %s", b.layered, !o.Off, b.layerNote)
		}
		return b, ws
	}
}

// TestDockerWorkspaceGuard runs the shared suite's workspace-guard attacks on the docker backend (a root server on
// the Docker host), each with its positive control in the suite: the swapped .git and the renamed folder holding
// .vscode (control: no layer and nothing protected, since docker without the layer still has its read-only binds
// and the server's sweep, which stop it), and the host's git replacing .git/config or the whole .git between
// commands, 20 tries (control: nothing protected), in the executor's own image, which has git; a filler one entry
// past the sweep's scan bound (control: nothing protected); the inode cap at the act (4,500 files under 3,000;
// control: the guard off); the byte cap at the act (a quick 1 GiB fallocate under 100 MiB; a command started over
// the cap; control: the guard off), cold and with a warm pool; what a running process sees and lands.
// Left out, and why: /dev/shm is a container's own and goes with it either way, so the suite's control could not
// show it outlive a command (TestDockerShm shows it counted, with a control of its own).
func TestDockerWorkspaceGuard(t *testing.T) {
	requireRoot(t)
	git := dockerGuardBackend(dockerGitImage(t), 0)
	t.Run("swapped_git", func(t *testing.T) { sandboxtest.RunSwappedGitUnprotectedControl(t, git) })
	t.Run("host_replaces_git", func(t *testing.T) { sandboxtest.RunHostReplacesGit(t, git, 20) })
	t.Run("filler_ends_scan", func(t *testing.T) {
		sandboxtest.RunFillerEndsScan(t, dockerGuardBackend("", 0), sandboxtest.SmallScanBound)
	})
	t.Run("inode_cap", func(t *testing.T) { sandboxtest.RunInodeCapAtTheAct(t, dockerGuardBackend("", 0)) })
	t.Run("disk_cap", func(t *testing.T) { sandboxtest.RunDiskCapAtTheAct(t, dockerGuardBackend("", 0)) })
	// A pooled container's layer was made before the workspace went over the cap: it must not be used.
	t.Run("disk_cap_warm_pool", func(t *testing.T) { sandboxtest.RunDiskCapAtTheAct(t, dockerGuardBackend("", 2)) })
	t.Run("process_visibility", func(t *testing.T) { sandboxtest.RunLayerVisibility(t, dockerGuardBackend("", 0)) })
}
