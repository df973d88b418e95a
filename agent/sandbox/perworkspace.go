package sandbox

import (
	"context"
	"log/slog"
	"path/filepath"

	"github.com/goalbox/goalbox/agent/loop"
	"github.com/goalbox/goalbox/servers/executor/assemble"
	"github.com/goalbox/goalbox/servers/executor/execserver/backends"
	"github.com/goalbox/goalbox/servers/executor/execserver/local"
	"github.com/goalbox/goalbox/servers/filesystem/fsserver"
)

// PerWorkspaceOptions say how PerWorkspace configures the servers it starts over each workspace.
type PerWorkspaceOptions struct {
	// CacheDir holds the commands' homes, one per workspace, and in CacheDir/shared the build caches every
	// workspace shares, so Go does not rebuild its standard library for each.
	CacheDir string
	// CheckpointDir holds the filesystem server's checkpoint stores, one per workspace; "" is the server's default,
	// the user's cache.
	CheckpointDir string
	// ExtraReadDirs are folders outside the system ones that commands may read (shared JavaScript modules).
	ExtraReadDirs []string
	// Logger receives the servers' logs; nil discards them.
	Logger *slog.Logger
}

// PerWorkspace is a factory of sandboxes, one per workspace root it is given: both servers in-process over the
// root (Host), with the local backend (namespaces, Landlock, rlimits, scrubbed environment) and the default
// protection; close stops them. A benchmark opens one for each exercise's grade and each try of its model.
func PerWorkspace(o PerWorkspaceOptions) func(ctx context.Context, root string) (sb loop.Sandbox, close func() error, err error) {
	return func(ctx context.Context, root string) (loop.Sandbox, func() error, error) {
		h, err := Host(ctx, LocalOptions{Workspace: root, Logger: o.Logger,
			Executor: assemble.Options{Backend: backends.Local, CacheDir: o.CacheDir,
				Local: local.Config{SharedCacheDir: filepath.Join(o.CacheDir, "shared"), ExtraReadDirs: o.ExtraReadDirs}},
			Checkpoints: fsserver.CheckpointOptions{Dir: o.CheckpointDir}})
		if err != nil {
			return nil, nil, err
		}
		return h, h.Close, nil
	}
}
