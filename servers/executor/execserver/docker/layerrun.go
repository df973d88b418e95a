package docker

// The backend's side of each container's layer (layer_linux.go): applying it through Request.Apply (package
// wsguard) while the command runs and once it has ended, and what /healthz says of it.

import (
	"context"
	"fmt"

	"github.com/goalbox/goalbox/pkg/protocol"
	"github.com/goalbox/goalbox/servers/executor/execserver/backend"
	"github.com/goalbox/goalbox/servers/executor/execserver/wsguard"
)

// Layered reports whether each command works on a layer of its own (backend.Layered).
func (b *dockerBackend) Layered() bool { return b.layered }

// watchLayer applies l every wsguard.ApplyEvery while the command runs; finish stops that and applies it a last
// time, returning what that apply refused. Call finish only once nothing runs in the container any more.
func (b *dockerBackend) watchLayer(req backend.Request, l *commandLayer) (finish func() []protocol.WorkspaceRefusal) {
	if l == nil {
		return func() []protocol.WorkspaceRefusal { return nil }
	}
	apply := req.Apply
	if apply == nil {
		apply = b.defaultApply()
	}
	var cache func(string) []protocol.WorkspaceRefusal
	if l.cache && b.cacheGuard != nil {
		cache = b.cacheGuard.Session().Apply
	}
	once := func() []protocol.WorkspaceRefusal {
		refused := apply(l.upper())
		if cache != nil {
			for _, r := range cache(l.cacheUpper()) {
				// The cache's refusals are the cache's paths: named as the command sees them.
				if r.Path != "" {
					r.Path = containerCache + "/" + r.Path
				}
				refused = append(refused, r)
			}
		}
		return refused
	}
	return wsguard.Watch(once)
}

// defaultApply applies layers for a request that brings no Apply of its own (a caller of the backend without the
// executor's server): with the default protected paths.
func (b *dockerBackend) defaultApply() func(string) []protocol.WorkspaceRefusal {
	return b.fallbackGuard.Apply(b.hostWorkspace(), func(err error) {
		b.log.Error("docker backend: the workspace guard could not open the workspace", "err", err)
	})
}

// workspaceGuard is the guard's part of /healthz.
func (b *dockerBackend) workspaceGuard() *protocol.WorkspaceGuard {
	g := &protocol.WorkspaceGuard{Mode: protocol.ProtectedSweep, MaxBytes: max(b.cfg.MaxWorkspaceBytes, 0),
		PrivateDirsPolled: b.cfg.MaxWorkspaceBytes > 0}
	if b.layered {
		g.Mode, g.ProtectedByConstruction, g.MaxInodes = protocol.ProtectedLayer, true, max(b.cfg.MaxWorkspaceInodes, 0)
		g.BytesAtTheAct, g.InodesAtTheAct, g.PrivateDirsPolled = b.cfg.MaxWorkspaceBytes > 0, b.cfg.MaxWorkspaceInodes > 0, false
		g.ApplyEverySeconds = wsguard.ApplyEvery.Seconds()
		g.ShmPerCommand = true // in the layer's tmpfs (layer_linux.go)
	}
	return g
}

// startLayers decides, once the network holder runs, whether containers get layers (layerSupport), and opens the
// guard that applies the cache's.
func (b *dockerBackend) startLayers(ctx context.Context) error {
	pid, err := b.containerPid(ctx, b.net.current())
	if err == nil {
		err = b.layerSupport(pid)
	}
	if err != nil {
		b.layerNote = "no layers (" + err.Error() + "): commands write the workspace and the cache, protected paths by read-only binds and a sweep, the disk cap by a poll"
		if !b.cfg.NoWorkspaceLayer {
			b.log.Warn("docker backend: WORKSPACE GUARD UNAVAILABLE: commands write the workspace directly", "reason", err)
		}
		return nil
	}
	if b.cacheDir != "" {
		// The cache protects nothing: a nil protection, and the same rules as the workspace otherwise (no set-id
		// bits, devices or FIFOs; symlinks that stay inside).
		if b.cacheGuard, err = wsguard.New(b.cacheDir, nil); err != nil {
			return fmt.Errorf("docker backend: the cache's guard: %w", err)
		}
	}
	b.layered = true
	return nil
}

// protectedMode is how protected paths are kept: by the layers, or by read-only binds and the sweep.
func (b *dockerBackend) protectedMode() protocol.ProtectedEnforcement {
	if b.layered {
		return protocol.ProtectedLayer
	}
	return protocol.ProtectedReadOnly
}
