package layer

// The private home, temp and cache folders in each command's layer: a command writes them through overlays in the
// same bounded tmpfs as the workspace's upper layer, so one bound in bytes and inodes holds for all four folders at
// the act (a quick fallocate into $XDG_CACHE_HOME fails with ENOSPC at the cap and leaves nothing). The server
// applies each folder's upper layer back to it with the workspace's own code (package wsguard) but no protected
// paths: they are the executor's folders, not the person's project. What the guard never applies anywhere it never
// applies here either (set-id files, devices, FIFOs, sockets, a relative symlink that leads out of its folder), and
// each refusal is named in the result by its absolute path.
//
// Two commands that write the same file of a private folder: each apply writes its command's version, and the one
// applied last is what the folder keeps (as in the workspace).

import (
	"path/filepath"

	"github.com/goalbox/goalbox/pkg/protocol"
	"github.com/goalbox/goalbox/servers/executor/execserver/wsguard"
)

// PrivateGuards apply the private folders' layers, one guard per folder, in the layer's order.
type PrivateGuards struct {
	dirs   []string
	guards []*wsguard.Guard
}

// OpenPrivate opens the guards of folders dirs, with nothing protected.
func OpenPrivate(dirs []string) (*PrivateGuards, error) {
	g := &PrivateGuards{dirs: dirs}
	for _, d := range dirs {
		w, err := wsguard.New(d, nil)
		if err != nil {
			g.Close()
			return nil, err
		}
		g.guards = append(g.guards, w)
	}
	return g, nil
}

// Close closes the guards (none: nil). A command still ending afterwards may still call its apply: it then fails
// on closed folders, as the workspace's does.
func (g *PrivateGuards) Close() {
	if g == nil {
		return
	}
	for _, w := range g.guards {
		w.Close()
	}
}

// Apply returns the function that applies l's private folders, one session each, and names what it refused by
// absolute path.
func (g *PrivateGuards) Apply(l *Layer) func() []protocol.WorkspaceRefusal {
	sessions := make([]*wsguard.Session, len(g.guards))
	for i, w := range g.guards {
		sessions[i] = w.Session()
	}
	return func() []protocol.WorkspaceRefusal {
		var refused []protocol.WorkspaceRefusal
		for i, s := range sessions {
			for _, r := range s.Apply(l.PrivateUpper(i)) {
				if r.Path != "" {
					r.Path = filepath.Join(g.dirs[i], r.Path)
				}
				refused = append(refused, r)
			}
		}
		return refused
	}
}
