package local

// The backend's side of each command's layer (package layer): whether the holder can make layers here, how large
// each may grow, and applying it through Request.Apply (package wsguard) while the command runs and when it ends.

import (
	"time"

	"github.com/goalbox/goalbox/pkg/protocol"
	"github.com/goalbox/goalbox/servers/executor/execserver/backend"
	"github.com/goalbox/goalbox/servers/executor/execserver/internal/diskcap"
	"github.com/goalbox/goalbox/servers/executor/execserver/internal/layer"
	"github.com/goalbox/goalbox/servers/executor/execserver/wsguard"
)

// layerFresh is how long a layer made ahead of its command stays sized right: past it, the sandbox is made again
// when its command comes, so that what the filesystem server or the person wrote since counts. Commands that
// follow each other closer (a build's steps, a benchmark) keep the ones made ahead; an agent's, seconds apart,
// pay the measurement of the workspace (a walk: some milliseconds per 10,000 files).
const layerFresh = time.Second

// probeLayers makes one layer (of the workspace and the private folders) to learn whether this kernel mounts an
// overlay in a user namespace, and so whether commands get layers (commandPolicy.Layer); the reason they do not is
// kept for /healthz and the start log.
func (b *localBackend) probeLayers(h *holder, private []string) bool {
	if b.noLayer {
		b.layerNote = "off (-no-workspace-layer, for comparison only): commands write the workspace through read-only binds of the protected paths and a sweep"
		return false
	}
	l, err := h.layer(b.workspace, private, layer.BytesFloor, layer.InodesFloor)
	if err != nil {
		b.layerNote = "no overlay in a user namespace here (" + err.Error() + "): commands write the workspace, protected paths by read-only binds and a sweep"
		b.logger.Warn("WORKSPACE GUARD UNAVAILABLE: commands write the workspace directly", "error", err)
		return false
	}
	l.Close()
	return true
}

// Layered reports whether each command works on a layer of its own (backend.Layered).
func (b *localBackend) Layered() bool { return b.policy.Layer }

// newLayer makes the layer of ns's next command, as large in bytes and inodes as the caps leave now (layer.Room);
// nil when the backend does not layer.
func (b *localBackend) newLayer(ns *nsSandbox) (*layer.Layer, error) {
	if !b.policy.Layer {
		return nil, nil
	}
	bytes, inodes, note := layer.Room(b.diskDirs(), b.maxDisk, b.maxInodes, "the workspace, home, temp and cache folders")
	l, err := ns.holder.layer(b.workspace, layer.Dirs(ns.policy.PrivateLayers), bytes, inodes)
	if l != nil {
		l.OverCap = note
	}
	return l, err
}

// defaultApply applies layers for a request that brings no Apply of its own (a caller of the backend without the
// executor's server): with the default protected paths.
func (b *localBackend) defaultApply() func(string) []protocol.WorkspaceRefusal {
	return b.fallbackGuard.Apply(b.workspace, func(err error) { b.logger.Error("the workspace guard could not open the workspace", "error", err) })
}

// watchLayer applies l's workspace layer every wsguard.ApplyEvery while the command runs (the private folders' only at
// the end); finish stops that and applies it a last time,
// returning what the last apply refused. A layer that held anything makes the sandboxes made ahead stale: their
// layers were sized before the workspace grew.
func (b *localBackend) watchLayer(req backend.Request, l *layer.Layer) (finish func() []protocol.WorkspaceRefusal) {
	if l == nil {
		return func() []protocol.WorkspaceRefusal { return nil }
	}
	apply := req.Apply
	if apply == nil {
		apply = b.defaultApply()
	}
	// The private folders are applied once, at the end: a build's temporary files come and go in $TMPDIR (go's
	// work folder, its compiled packages), and copying them every ApplyEvery while they are written is work for
	// nothing; no person waits to see a cache change while the command runs.
	private := b.privateGuards.Apply(l)
	last := wsguard.Watch(func() []protocol.WorkspaceRefusal { return apply(l.Upper()) })
	return func() []protocol.WorkspaceRefusal {
		refused := append(last(), private()...)
		if l.Holds() {
			b.protectGen.Add(1)
		}
		return refused
	}
}

// workspaceGuard is the guard's part of /healthz. The server knows whether anything is protected: it reports mode
// "none" itself when nothing is.
func (b *localBackend) workspaceGuard() *protocol.WorkspaceGuard {
	g := &protocol.WorkspaceGuard{Mode: protocol.ProtectedSweep, MaxBytes: b.maxDisk, MaxInodes: b.maxInodes, PrivateDirsPolled: b.maxDisk > 0}
	if b.maxDisk > 0 {
		g.PollEverySeconds = diskcap.CheckEvery.Seconds() // with a layer too, a second line behind it
	}
	if b.policy.Layer {
		// Home, temp and cache are in the command's layer (package layer): bounded at the act.
		g.PrivateDirsPolled = false
		g.Mode, g.ProtectedByConstruction, g.ShmPerCommand = protocol.ProtectedLayer, true, true
		g.BytesAtTheAct, g.InodesAtTheAct = b.maxDisk > 0, b.maxInodes > 0
		g.ApplyEverySeconds = wsguard.ApplyEvery.Seconds()
	}
	return g
}

// privateLayers are the private folders each command gets an overlay of: home, temp (bound at /tmp as well by
// the mount plan) and the build cache, unless the cache is shared between workspaces on purpose (SharedCacheDir:
// not this workspace's to bound, and written by other executors at the same time).
func (b *localBackend) privateLayers() []layer.Private {
	l := []layer.Private{{Dir: b.dirs.Home}, {Dir: b.dirs.Tmp, Also: "/tmp"}}
	if !b.sharedCache {
		l = append(l, layer.Private{Dir: b.dirs.Cache})
	}
	return l
}
