//go:build linux

package local

import (
	"os"
	"testing"

	"github.com/goalbox/goalbox/servers/executor/execserver/backend"
	"github.com/goalbox/goalbox/servers/executor/execserver/internal/sandboxtest"
)

// guardBackend is a namespace-mode backend with the workspace guard, or without it (the positive controls).
func guardBackend(t *testing.T, o sandboxtest.GuardOptions) (backend.Backend, string) {
	b, ws := newLocalTestBackend(t, func(c *Config) {
		c.NoWorkspaceLayer, c.MaxWorkspaceBytes, c.MaxWorkspaceInodes = o.Off, o.MaxBytes, o.MaxInodes
	})
	if l := b.(*localBackend); l.layered == o.Off {
		t.Fatalf("the workspace guard is %v where it should be %v: %s", l.layered, !o.Off, l.layerNote)
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
	t.Run("filler_ends_scan", func(t *testing.T) { sandboxtest.RunFillerEndsScan(t, guardBackend, fillerScanBound()) })
	t.Run("disk_cap", func(t *testing.T) { sandboxtest.RunDiskCapAtTheAct(t, guardBackend) })
	t.Run("inode_cap", func(t *testing.T) { sandboxtest.RunInodeCapAtTheAct(t, guardBackend) })
	t.Run("shm", func(t *testing.T) { sandboxtest.RunShmEndsWithCommand(t, guardBackend) })
	t.Run("unkept_protected_file", func(t *testing.T) { sandboxtest.RunUnkeptProtectedFile(t, guardBackend) })
	t.Run("process_visibility", func(t *testing.T) { sandboxtest.RunLayerVisibility(t, guardBackend) })
}

// fillerScanBound is the scan bound of finding 2's run here. The finding's own 200,001 files run once, on the
// root-started namespace mode, the default deployment: they show that nothing on the layer's path (the apply's
// walk, pathguard's own caps) stops at the old bound. Every other run (the ordinary user's, the fallback) lowers
// the bound so that 2,001 files reach the same code: the filler cost about a minute a run, six runs a package.
func fillerScanBound() int {
	if os.Getenv(asUserEnv) != "" {
		return sandboxtest.SmallScanBound
	}
	return 0
}

// TestWorkspaceGuardFallback: where there is no layer (the fallback without namespaces), the sweep fails closed:
// its scan walks the whole workspace past the cached scan's bound (lowered here: the code path is the bound's, not
// the number's), and a protected file it kept no copy of is taken out, not left changed.
func TestWorkspaceGuardFallback(t *testing.T) {
	modeWanted(t, true)
	fallback := func(t *testing.T, o sandboxtest.GuardOptions) (backend.Backend, string) {
		return newLocalTestBackend(t, func(c *Config) { c.NoNamespaces = true })
	}
	t.Run("filler_ends_scan", func(t *testing.T) { sandboxtest.RunFillerEndsScan(t, fallback, sandboxtest.SmallScanBound) })
	t.Run("unkept_protected_file", func(t *testing.T) { sandboxtest.RunUnkeptProtectedFile(t, fallback) })
}
