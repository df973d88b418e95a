//go:build linux

package local

import (
	"testing"

	"github.com/goalbox/goalbox/servers/executor/execserver/backend"
	"github.com/goalbox/goalbox/servers/executor/execserver/internal/sandboxtest"
)

// guardBackend is a namespace-mode backend with the workspace guard, or without it (the positive controls).
func guardBackend(t *testing.T, o sandboxtest.GuardOptions) (backend.Backend, string) {
	b, ws := newLocalTestBackend(t, func(c *Config) {
		c.NoWorkspaceLayer, c.MaxWorkspaceBytes, c.MaxWorkspaceInodes = o.Off, o.MaxBytes, o.MaxInodes
	})
	if l := b.(*localBackend); l.Layered() == o.Off {
		t.Fatalf("the workspace guard is %v where it should be %v: %s", l.Layered(), !o.Off, l.layerNote)
	}
	return b, ws
}

// TestWorkspaceGuard runs the workspace guard's attacks on the namespace mode, as root here
// and as an ordinary user in TestLocalContainmentAsOrdinaryUser.
func TestWorkspaceGuard(t *testing.T) {
	sandboxtest.RequireNamespaceMode(t)
	modeWanted(t, false)
	t.Run("swapped_git", func(t *testing.T) { sandboxtest.RunSwappedGit(t, guardBackend) })
	t.Run("host_replaces_git", func(t *testing.T) { sandboxtest.RunHostReplacesGit(t, guardBackend, 20) })
	t.Run("filler_ends_scan", func(t *testing.T) { sandboxtest.RunFillerEndsScan(t, guardBackend) })
	t.Run("disk_cap", func(t *testing.T) { sandboxtest.RunDiskCapAtTheAct(t, guardBackend) })
	t.Run("inode_cap", func(t *testing.T) { sandboxtest.RunInodeCapAtTheAct(t, guardBackend) })
	t.Run("shm", func(t *testing.T) { sandboxtest.RunShmEndsWithCommand(t, guardBackend) })
	t.Run("process_visibility", func(t *testing.T) { sandboxtest.RunLayerVisibility(t, guardBackend) })
}

// TestWorkspaceGuardFallback: where there is no layer (the fallback without namespaces), the sweep fails closed:
// its scan walks the whole workspace past the cached scan's bound.
func TestWorkspaceGuardFallback(t *testing.T) {
	modeWanted(t, true)
	sandboxtest.RunFillerEndsScan(t, func(t *testing.T, o sandboxtest.GuardOptions) (backend.Backend, string) {
		return newLocalTestBackend(t, func(c *Config) { c.NoNamespaces = true })
	})
}
