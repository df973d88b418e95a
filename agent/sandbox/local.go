package sandbox

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/goalbox/goalbox/pkg/mcpserve"
	"github.com/goalbox/goalbox/pkg/pathguard"
	"github.com/goalbox/goalbox/servers/executor/assemble"
	"github.com/goalbox/goalbox/servers/executor/execserver/backends"
	"github.com/goalbox/goalbox/servers/filesystem/fsserver"
)

// LocalOptions say how to start both servers inside this process.
type LocalOptions struct {
	// Workspace is the folder both servers are confined to; created if missing.
	Workspace string
	// Executor is what the executor is built from, as the executor command's flags make it (package
	// servers/executor/assemble). Its Backend "auto" lets the executor's automatic choice pick (local with
	// namespaces, else docker when an engine answers, else local's fallback where it still confines, else an error
	// saying what to install); "docker" the docker backend; "local", or empty here, the local backend. Its
	// Serving.Protection is set from Protection below.
	Executor assemble.Options
	// Protection is the protected project files of both servers (the agent's -protect and -unprotect); nil means
	// the defaults, as the servers' own commands have them: an embedded server is never less protected.
	Protection *pathguard.Protection
	// Checkpoints configure the filesystem server's checkpoint store; the zero value is the server's default (a
	// folder in the user's cache). The benchmark keeps its stores in the run folder instead.
	Checkpoints fsserver.CheckpointOptions
	// Logger receives the servers' logs; nil discards them.
	Logger *slog.Logger
}

// Local is the two servers running in-process on loopback, each on its own free port, reached through the same
// streamable HTTP clients as remote servers: one code path for the agent, and the same Host/Origin and token checks.
type Local struct {
	// Endpoints are the filesystem server's and the executor's MCP endpoints.
	Endpoints []Endpoint
	// Health reports both servers' state, confinement included.
	Health func() map[string]any
	// Choice is the executor's backend and why it was chosen.
	Choice  backends.Choice
	closers []func() error
}

// StartLocal opens the workspace and starts both servers on 127.0.0.1. Close stops them. build changes how the
// executor is built (tests).
func StartLocal(opts LocalOptions, build ...assemble.Option) (l *Local, err error) {
	if opts.Workspace == "" {
		return nil, errors.New("no workspace folder given")
	}
	l = &Local{}
	defer func() {
		if err != nil {
			l.Close()
		}
	}()
	prot := opts.Protection
	if prot == nil {
		if prot, err = pathguard.NewProtection(nil, nil); err != nil {
			return nil, fmt.Errorf("protected files: %w", err)
		}
	}
	g, err := pathguard.Open(opts.Workspace, pathguard.Options{Protection: prot})
	if err != nil {
		return nil, fmt.Errorf("workspace: %w", err)
	}
	l.closers = append(l.closers, g.Close)
	eo := opts.Executor
	eo.Backend = cmp.Or(eo.Backend, backends.Local)
	eo.Serving.Protection = prot
	// The executor's default cap fits what coding agents keep of a result; this agent cuts results for its model
	// itself (loop's budget) and keeps each one whole in its transcript, so its own executor keeps more.
	eo.Serving.OutputCap = cmp.Or(eo.Serving.OutputCap, hostedOutputCap)
	exec, err := assemble.New(context.Background(), g, eo, opts.Logger, build...)
	if err != nil {
		return nil, fmt.Errorf("executor: %w", err)
	}
	l.Choice = exec.Choice
	l.closers = append(l.closers, exec.Close) // its processes, then the backend
	files := fsserver.New(g, fsserver.Options{Logger: opts.Logger, Checkpoints: opts.Checkpoints})
	// Each server generates its own token (mcpserve.Start, as Token is empty) and the client gets it in memory:
	// loopback is shared by every user of the machine, so the ports are no one else's way in.
	cfg := mcpserve.Config{Addr: "127.0.0.1:0"}
	fs, err := mcpserve.Start(files.Server(), cfg, files.Health, opts.Logger)
	if err != nil {
		return nil, fmt.Errorf("filesystem server: %w", err)
	}
	l.closers = append(l.closers, fs.Close)
	ex, err := mcpserve.Start(exec.Server(), cfg, exec.Health, opts.Logger)
	if err != nil {
		return nil, fmt.Errorf("executor server: %w", err)
	}
	l.closers = append(l.closers, ex.Close)
	l.Endpoints = []Endpoint{{URL: fs.URL, Token: fs.Token}, {URL: ex.URL, Token: ex.Token}}
	l.Health = func() map[string]any {
		return map[string]any{"filesystem": files.Health(), "executor": exec.Health()}
	}
	return l, nil
}

// hostedOutputCap is the output cap of the executor the agent hosts, unless its options set one: the cap the
// executor had before its default was cut for coding agents.
const hostedOutputCap = 256 << 10

// Close stops the servers and releases the workspace and the backend, last started first.
func (l *Local) Close() error {
	var errs []error
	for i := len(l.closers) - 1; i >= 0; i-- {
		errs = append(errs, l.closers[i]())
	}
	l.closers = nil
	return errors.Join(errs...)
}

// Hosted is both servers running in this process and a client connected to them, as one loop.Sandbox.
type Hosted struct {
	*Client
	// Local is the servers: their endpoints and their health.
	Local *Local
}

// Host starts both servers over opts.Workspace and connects to them: the goal mode's sandbox when no running
// servers are named, and every sandbox of the benchmark. Close stops them.
func Host(ctx context.Context, opts LocalOptions, build ...assemble.Option) (*Hosted, error) {
	l, err := StartLocal(opts, build...)
	if err != nil {
		return nil, err
	}
	c, err := Connect(ctx, l.Endpoints...)
	if err != nil {
		return nil, errors.Join(err, l.Close())
	}
	return &Hosted{Client: c, Local: l}, nil
}

// Close ends the sessions, then stops the servers.
func (h *Hosted) Close() error { return errors.Join(h.Client.Close(), h.Local.Close()) }
