package main

import (
	"context"
	"log/slog"

	"github.com/goalbox/goalbox/pkg/pathguard"
	"github.com/goalbox/goalbox/servers/executor/execserver"
	"github.com/goalbox/goalbox/servers/executor/execserver/backends"
	"github.com/goalbox/goalbox/servers/executor/execserver/docker"
	"github.com/goalbox/goalbox/servers/executor/execserver/egress"
	"github.com/goalbox/goalbox/servers/executor/execserver/local"
)

// newLocal builds the local backend; the tests' main mode replaces it (main_test.go) to make the local backend
// unusable, or namespace-less, on a machine where it is neither.
var newLocal = local.New

// newBackend builds the backend named by opts.Backend, or lets package backends choose one (auto): the flags map
// onto both backends' configurations, and the choice is the one the agent's in-process executor makes too.
func newBackend(ctx context.Context, opts settings, g *pathguard.Guard, logger *slog.Logger) (execserver.Backend, backends.Choice, error) {
	network := egress.Config{Allow: opts.netAllow, MaxConns: opts.NetMaxConns, MaxConnsPerCommand: opts.NetMaxConnsPerCommand,
		IdleTimeout: opts.NetIdleTimeout, MaxBytesPerCommand: opts.NetMaxBytes, Logger: logger, Secrets: opts.secrets, UpstreamCA: opts.upstreamCA}
	dc := docker.Config{
		Network:      network,
		Image:        opts.Image,
		CacheHostDir: opts.CacheDir,
		User:         opts.DockerUser,
		CPUs:         opts.CPUs,
		WarmPool:     opts.WarmPool,
		Logger:       logger,
		Instance:     opts.Instance,
		// Both backends take the same disk cap and totals (0 default, -1 none).
		MaxWorkspaceBytes: opts.MaxWorkspaceBytes,
		TotalMemory:       opts.TotalMemoryLimitMB << 20,
		TotalPIDs:         int64(opts.TotalPidsLimit),
	}
	// The limits are shared flags; zero or negative leaves the docker backend's defaults.
	if opts.PidsLimit > 0 {
		dc.PIDs = int64(opts.PidsLimit)
	}
	if opts.MemoryLimitMB > 0 {
		dc.Memory = opts.MemoryLimitMB << 20
	}
	return backends.Open(ctx, g.Dir(), backends.Config{
		Backend: opts.Backend,
		Local: local.Config{
			CacheDir:          opts.CacheDir,
			NoNamespaces:      opts.NoNamespaces,
			RunAs:             opts.RunAs,
			MemoryLimit:       opts.MemoryLimitMB << 20,
			PidsLimit:         opts.PidsLimit,
			TotalMemoryLimit:  opts.TotalMemoryLimitMB << 20,
			TotalPidsLimit:    opts.TotalPidsLimit,
			MaxWorkspaceBytes: opts.MaxWorkspaceBytes,
			Network:           network,
		},
		Docker:   dc,
		Logger:   logger,
		NewLocal: newLocal,
	})
}
