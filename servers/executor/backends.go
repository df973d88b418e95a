package main

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/goalbox/goalbox/pkg/pathguard"
	"github.com/goalbox/goalbox/servers/executor/execserver"
	"github.com/goalbox/goalbox/servers/executor/execserver/docker"
	"github.com/goalbox/goalbox/servers/executor/execserver/local"
)

// backendNames are the values -backend accepts.
const backendNames = "local or docker"

// newBackend builds the backend named by opts.Backend. This is the one place that knows every backend.
func newBackend(ctx context.Context, opts settings, g *pathguard.Guard, logger *slog.Logger) (execserver.Backend, error) {
	switch opts.Backend {
	case "local":
		return local.New(local.Config{
			Workspace:         g.Dir(),
			CacheDir:          opts.CacheDir,
			NoNamespaces:      opts.NoNamespaces,
			RunAs:             opts.RunAs,
			MemoryLimit:       opts.MemoryLimitMB << 20,
			PidsLimit:         opts.PidsLimit,
			TotalMemoryLimit:  opts.TotalMemoryLimitMB << 20,
			TotalPidsLimit:    opts.TotalPidsLimit,
			MaxWorkspaceBytes: opts.MaxWorkspaceBytes,
		}, logger)
	case "docker":
		dc := docker.Config{
			Image:            opts.Image,
			WorkspaceHostDir: g.Dir(),
			CacheHostDir:     opts.CacheDir,
			User:             opts.DockerUser,
			CPUs:             opts.CPUs,
			WarmPool:         opts.WarmPool,
			Logger:           logger,
		}
		// The limits are shared flags; zero or negative leaves the docker backend's defaults.
		if opts.PidsLimit > 0 {
			dc.PIDs = int64(opts.PidsLimit)
		}
		if opts.MemoryLimitMB > 0 {
			dc.Memory = opts.MemoryLimitMB << 20
		}
		return docker.New(ctx, dc)
	default:
		return nil, fmt.Errorf("unknown backend %q: use %s", opts.Backend, backendNames)
	}
}
