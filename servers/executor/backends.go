package main

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/goalbox/goalbox/pkg/pathguard"
	"github.com/goalbox/goalbox/servers/executor/execserver"
)

// backendNames are the values -backend accepts.
const backendNames = "local or docker"

// newBackend builds the backend named by opts.Backend. This is the one place that knows every backend.
func newBackend(ctx context.Context, opts options, g *pathguard.Guard, logger *slog.Logger) (execserver.Backend, error) {
	switch opts.Backend {
	case "local":
		return execserver.NewLocalBackend(execserver.LocalConfig{
			Workspace:    g.Dir(),
			CacheDir:     opts.CacheDir,
			NoNamespaces: opts.NoNamespaces,
			MemoryLimit:  opts.MemoryLimitMB << 20,
			PidsLimit:    opts.PidsLimit,
		}, logger)
	case "docker":
		// The docker backend's options: the image, and the cache folder when one is given.
		return execserver.NewDockerBackend(ctx, execserver.DockerConfig{Image: opts.Image, WorkspaceHostDir: g.Dir(), CacheHostDir: opts.CacheDir, Logger: logger})
	default:
		return nil, fmt.Errorf("unknown backend %q: use %s", opts.Backend, backendNames)
	}
}
