package main

import (
	"context"
	"fmt"
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
	dc := docker.Config{
		Image:        opts.Image,
		CacheHostDir: opts.CacheDir,
		User:         opts.DockerUser,
		CPUs:         opts.CPUs,
		WarmPool:     opts.WarmPool,
		Logger:       logger,
	}
	// The limits are shared flags; zero or negative leaves the docker backend's defaults.
	if opts.PidsLimit > 0 {
		dc.PIDs = int64(opts.PidsLimit)
	}
	if opts.MemoryLimitMB > 0 {
		dc.Memory = opts.MemoryLimitMB << 20
	}
	b, c, err := backends.Open(ctx, g.Dir(), backends.Config{
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
			Network: egress.Config{Allow: opts.netAllow, MaxConns: opts.NetMaxConns, MaxConnsPerCommand: opts.NetMaxConnsPerCommand,
				IdleTimeout: opts.NetIdleTimeout, MaxBytesPerCommand: opts.NetMaxBytes, Logger: logger},
		},
		Docker:   dc,
		Logger:   logger,
		NewLocal: newLocal,
	})
	if err == nil && b.Name() != backends.Local && !opts.netAllow.Empty() {
		b.Close()
		return nil, c, errNetAllowBackend(b.Name())
	}
	return b, c, err
}

// errNetAllowBackend refuses -net-allow where no egress proxy confines it.
func errNetAllowBackend(name string) error {
	return fmt.Errorf("-net-allow: the %s backend has no egress proxy yet (its commands have network none), so the allowed hosts "+
		"would not be reachable; use -backend local (namespace mode), or leave -net-allow empty", name)
}
