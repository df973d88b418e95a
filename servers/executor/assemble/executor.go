// Package assemble builds a ready command executor from one Options value: the policy, the protected files and the
// network parsed, the backend built by name or chosen (package execserver/backends), and the tool server over it
// (package execserver). It is the one way an executor is put together, for the executor command (servers/executor)
// and the agent's in-process servers (agent/sandbox).
package assemble

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/goalbox/goalbox/pkg/envflag"
	"github.com/goalbox/goalbox/pkg/mcpserve"
	"github.com/goalbox/goalbox/pkg/pathguard"
	"github.com/goalbox/goalbox/servers/executor/execserver"
	"github.com/goalbox/goalbox/servers/executor/execserver/backend"
	"github.com/goalbox/goalbox/servers/executor/execserver/backends"
	"github.com/goalbox/goalbox/servers/executor/execserver/egress"
	"github.com/goalbox/goalbox/servers/executor/execserver/local"
)

// ProtectDocs are the flag names and usage of Protection's fields for envflag.Options.Docs: pathguard's text, the
// same as the filesystem server's and the agent's.
var ProtectDocs = map[string]envflag.Doc{
	"Protect":   {Flag: "protect", Usage: pathguard.ProtectUsage},
	"Unprotect": {Flag: "unprotect", Usage: pathguard.UnprotectUsage()},
}

// Executor is the tool server over its backend, and how the backend was chosen. Close stops both.
type Executor struct {
	*execserver.Executor
	// Choice is the backend built and why.
	Choice  backends.Choice
	backend backend.Backend
}

// Close stops the executor's processes, then the backend.
func (e *Executor) Close() error {
	e.Executor.Close()
	return e.backend.Close()
}

// Option changes how New builds the executor, beyond what Options say.
type Option func(*build)

// build is what Options do not hold: how the parts are made.
type build struct{ startLocal backends.LocalStarter }

// WithLocalStarter makes New start the local backend with start instead of local.New: tests play a machine where
// the local backend cannot run, or runs without namespaces.
func WithLocalStarter(start backends.LocalStarter) Option {
	return func(b *build) { b.startLocal = start }
}

// New builds the executor o describes over the workspace g, which the caller keeps and closes after the executor.
// Every error is one of configuration: a setting that does not parse, or a backend that cannot start here.
func New(ctx context.Context, g *pathguard.Guard, o Options, logger *slog.Logger, opts ...Option) (*Executor, error) {
	b := build{startLocal: local.New}
	for _, opt := range opts {
		opt(&b)
	}
	logger = cmp.Or(logger, slog.New(slog.DiscardHandler))
	o.Backend = cmp.Or(o.Backend, backends.Auto)
	if err := backends.CheckName(o.Backend); err != nil {
		return nil, err
	}
	if err := o.parse(logger); err != nil {
		return nil, err
	}
	o.shareBetweenBackends()
	backend, choice, err := backends.Open(ctx, g.Dir(), backends.Config{Backend: o.Backend, Local: o.Local, Docker: o.Docker, Logger: logger,
		RequireNamespaces: o.RequireNamespaces}, b.startLocal)
	if err != nil {
		if o.Backend == backends.Auto {
			return nil, fmt.Errorf("-backend auto: %w", err)
		}
		return nil, fmt.Errorf("%s backend: %s", o.Backend, strings.TrimPrefix(err.Error(), o.Backend+" backend: "))
	}
	logger.Info("backend chosen", "backend", choice.Backend, "requested", choice.Requested, "rule", choice.Rule, "reason", choice.Reason)
	o.Serving.BackendChoice, o.Serving.BackendRule, o.Serving.BackendReason = "explicit", choice.Rule, choice.Reason
	if choice.Requested == backends.Auto {
		o.Serving.BackendChoice = "auto"
	}
	ex, err := execserver.New(o.Serving, backend, g, logger)
	if err != nil {
		backend.Close()
		return nil, err
	}
	logger.Info("executor ready", "version", mcpserve.Version(), "workspace", g.Dir(), "backend", backend.Name(), "policy", o.Serving.Policy.Describe())
	return &Executor{Executor: ex, Choice: choice, backend: backend}, nil
}

// parse turns the settings given as text (patterns, hosts, secrets, a file's path) into what the parts take.
func (o *Options) parse(logger *slog.Logger) error {
	var err error
	if n := o.Limits.MaxWorkspaceInodes; n < -1 || (n > 0 && n < minWorkspaceInodes) {
		return fmt.Errorf("-max-workspace-inodes (MAX_WORKSPACE_INODES) is %d: give a number of files, folders and links of at least %d, 0 for the default (%d) or -1 for no cap",
			n, minWorkspaceInodes, local.DefaultMaxWorkspaceInodes)
	}
	if o.Serving.Policy, err = execserver.NewPolicy(o.Policy.Allow, o.Policy.Deny); err != nil {
		return fmt.Errorf("policy: %w", err)
	}
	if o.Serving.Protection == nil {
		if o.Serving.Protection, err = pathguard.ParseProtection(o.Protection.Protect, o.Protection.Unprotect); err != nil {
			return err
		}
	}
	network := egress.Config{MaxConns: o.Network.MaxConns, MaxConnsPerCommand: o.Network.MaxConnsPerCommand,
		IdleTimeout: o.Network.IdleTimeout, MaxBytesPerCommand: o.Network.MaxBytes, Logger: logger}
	if network.Allow, err = egress.ParseAllowList(o.Network.Allow); err != nil {
		return err
	}
	for _, spec := range o.Network.Secrets {
		sec, err := egress.ParseSecret(spec)
		if err != nil {
			return err
		}
		network.Secrets = append(network.Secrets, sec)
	}
	if o.Network.UpstreamCA != "" {
		if network.UpstreamCA, err = os.ReadFile(o.Network.UpstreamCA); err != nil {
			return fmt.Errorf("-upstream-ca: %w", err)
		}
	}
	o.Local.Network, o.Docker.Network = network, network
	return nil
}

// shareBetweenBackends gives both backends the settings they share, each in its own units.
func (o *Options) shareBetweenBackends() {
	l := o.Limits
	o.Local.CacheDir, o.Docker.CacheHostDir = o.CacheDir, o.CacheDir
	o.Local.MemoryLimit, o.Local.PidsLimit = l.MemoryMB<<20, l.PIDs
	o.Local.TotalMemoryLimit, o.Local.TotalPidsLimit = l.TotalMemoryMB<<20, l.TotalPIDs
	o.Docker.TotalMemory, o.Docker.TotalPIDs = l.TotalMemoryMB<<20, int64(l.TotalPIDs)
	o.Local.MaxWorkspaceBytes, o.Docker.MaxWorkspaceBytes = l.MaxWorkspaceBytes, l.MaxWorkspaceBytes
	o.Local.MaxWorkspaceInodes, o.Docker.MaxWorkspaceInodes = l.MaxWorkspaceInodes, l.MaxWorkspaceInodes
	// The docker backend has no "none" for a container's own limits: zero or negative leaves its defaults.
	if l.PIDs > 0 {
		o.Docker.PIDs = int64(l.PIDs)
	}
	if l.MemoryMB > 0 {
		o.Docker.Memory = l.MemoryMB << 20
	}
}
