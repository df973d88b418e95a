package local

// The backend's side of each command's layer (layer_linux.go): whether the holder can make layers here, how large
// each may grow, and applying it through Request.Apply (package wsguard) while the command runs and when it ends.

import (
	"fmt"
	"time"

	"github.com/goalbox/goalbox/pkg/protocol"
	"github.com/goalbox/goalbox/servers/executor/execserver/backend"
	"github.com/goalbox/goalbox/servers/executor/execserver/internal/diskcap"
	"github.com/goalbox/goalbox/servers/executor/execserver/wsguard"
	"golang.org/x/sys/unix"
)

// layerFresh is how long a layer made ahead of its command stays sized right: past it, the sandbox is made again
// when its command comes, so that what the filesystem server or the person wrote since counts. Commands that
// follow each other closer (a build's steps, a benchmark) keep the ones made ahead; an agent's, seconds apart,
// pay the measurement of the workspace (a walk: some milliseconds per 10,000 files).
const layerFresh = time.Second

// DefaultMaxWorkspaceInodes is the default inode cap: files, folders and links of the workspace and the private
// home, temp and cache folders together. Each is some hundred bytes of kernel memory on the host (100,000 empty
// files made by one command cost 100,681 inodes of the host's root filesystem before the cap).
const DefaultMaxWorkspaceInodes = 1_000_000

// layerBytesFloor and layerInodesFloor are the least a layer is made with: below them a command is refused as over
// the cap rather than started to fail on its first write.
const (
	layerBytesFloor  = 1 << 20
	layerInodesFloor = 64
)

// overCapNote is what a command started while the workspace and its private folders are at a cap finds at the end
// of its stderr: its layer holds only the floor, so it can delete files (and clean a cache) but add almost nothing.
func overCapNote(used, maxBytes, inodes, maxInodes int64) string {
	return fmt.Sprintf("\n[goalbox: the workspace, home, temp and cache folders were at the executor's cap when this command started "+
		"(%d of %d bytes, %d of %d files and folders): it could delete files but write at most %d bytes and %d files (ENOSPC past them); "+
		"delete files to make room (the filesystem server's delete tool works too)]\n", used, maxBytes, inodes, maxInodes, layerBytesFloor, layerInodesFloor)
}

// probeLayers makes one layer to learn whether this kernel mounts an overlay in a user namespace, and so whether
// commands get layers (commandPolicy.Layer); the reason they do not is kept for /healthz and the start log.
func (b *localBackend) probeLayers(h *holder) bool {
	if b.noLayer {
		b.layerNote = "off (-no-workspace-layer, for comparison only): commands write the workspace through read-only binds of the protected paths and a sweep"
		return false
	}
	l, err := h.layer(b.workspace, layerBytesFloor, layerInodesFloor)
	if err != nil {
		b.layerNote = "no overlay in a user namespace here (" + err.Error() + "): commands write the workspace, protected paths by read-only binds and a sweep"
		b.logger.Warn("WORKSPACE GUARD UNAVAILABLE: commands write the workspace directly", "error", err)
		return false
	}
	l.close()
	return true
}

// Layered reports whether each command works on a layer of its own (backend.Layered).
func (b *localBackend) Layered() bool { return b.policy.Layer }

// newLayer makes the layer of ns's next command, as large in bytes and inodes as the caps leave now; nil when the
// backend does not layer. A workspace already at a cap gets a layer of the floor only, and a note saying so: the
// command can delete, not add (refusing it would lock out the cleanup of a full cache, which no tool reaches).
func (b *localBackend) newLayer(ns *nsSandbox) (*commandLayer, error) {
	if !b.policy.Layer {
		return nil, nil
	}
	used, inodes := diskcap.UsageInodes(b.diskDirs()...)
	bytesLeft, inodesLeft := int64(diskcap.DefaultMax), b.maxInodes-inodes
	if b.maxDisk > 0 {
		bytesLeft = b.maxDisk - used
	}
	if b.maxInodes <= 0 {
		inodesLeft = DefaultMaxWorkspaceInodes
	}
	note := ""
	if bytesLeft < layerBytesFloor || inodesLeft < layerInodesFloor {
		note = overCapNote(used, b.maxDisk, inodes, b.maxInodes)
		bytesLeft, inodesLeft = layerBytesFloor, layerInodesFloor
	}
	l, err := ns.holder.layer(b.workspace, bytesLeft, inodesLeft)
	if l != nil {
		l.overCap = note
	}
	return l, err
}

// defaultApply applies layers for a request that brings no Apply of its own (a caller of the backend without the
// executor's server): with the default protected paths.
func (b *localBackend) defaultApply() func(string) []protocol.WorkspaceRefusal {
	return b.fallbackGuard.Apply(b.workspace, func(err error) { b.logger.Error("the workspace guard could not open the workspace", "error", err) })
}

// watchLayer applies l every wsguard.ApplyEvery while the command runs; finish stops that and applies it a last time,
// returning what the last apply refused. A layer that held anything makes the sandboxes made ahead stale: their
// layers were sized before the workspace grew.
func (b *localBackend) watchLayer(req backend.Request, l *commandLayer) (finish func() []protocol.WorkspaceRefusal) {
	if l == nil {
		return func() []protocol.WorkspaceRefusal { return nil }
	}
	apply := req.Apply
	if apply == nil {
		apply = b.defaultApply()
	}
	last := wsguard.Watch(func() []protocol.WorkspaceRefusal { return apply(l.upper()) })
	return func() []protocol.WorkspaceRefusal {
		refused := last()
		if l.holds() {
			b.protectGen.Add(1)
		}
		return refused
	}
}

// usedInodes is what the layer's tmpfs holds, counted by the kernel.
func (l *commandLayer) usedInodes() uint64 {
	var st unix.Statfs_t
	if err := unix.Fstatfs(int(l.tmpfs.Fd()), &st); err != nil {
		return ^uint64(0)
	}
	return st.Files - st.Ffree
}

// holds reports whether the command put anything in its layer (or its /dev/shm).
func (l *commandLayer) holds() bool { return l.usedInodes() > l.baseInodes }

// workspaceGuard is the guard's part of /healthz. The server knows whether anything is protected: it reports mode
// "none" itself when nothing is.
func (b *localBackend) workspaceGuard() *protocol.WorkspaceGuard {
	g := &protocol.WorkspaceGuard{Mode: protocol.ProtectedSweep, MaxBytes: b.maxDisk, MaxInodes: b.maxInodes, PrivateDirsPolled: b.maxDisk > 0}
	if g.PrivateDirsPolled {
		g.PollEverySeconds = diskcap.CheckEvery.Seconds()
	}
	if b.policy.Layer {
		g.Mode, g.ProtectedByConstruction, g.ShmPerCommand = protocol.ProtectedLayer, true, true
		g.BytesAtTheAct, g.InodesAtTheAct = b.maxDisk > 0, b.maxInodes > 0
		g.ApplyEverySeconds = wsguard.ApplyEvery.Seconds()
	}
	return g
}
