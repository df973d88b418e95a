package sandbox

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"

	"github.com/goalbox/goalbox/pkg/mcpserve"
	"github.com/goalbox/goalbox/pkg/pathguard"
	"github.com/goalbox/goalbox/servers/executor/assemble"
	"github.com/goalbox/goalbox/servers/executor/execserver/backends"
	"github.com/goalbox/goalbox/servers/filesystem/fsserver"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/sync/errgroup"
)

// LocalOptions say how to start both servers inside this process.
type LocalOptions struct {
	// Workspace is the folder both servers are confined to; created if missing.
	Workspace string
	// Executor is what the executor is built from, as the executor command's flags make it (package
	// servers/executor/assemble), with the executor's defaults: an empty Backend is the executor's automatic choice
	// (local with namespaces, else docker when an engine answers, else local's fallback where it still confines,
	// else an error saying what to install). Its Serving.Protection is set from Protection below.
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

// Local is the two servers running in-process, each serving one client over an in-memory link (memory.go): no
// port, no token, nothing another process can reach. Connect makes that client.
type Local struct {
	// Health reports both servers' state, confinement included.
	Health func() map[string]any
	// Choice is the executor's backend and why it was chosen.
	Choice backends.Choice

	servers []hostedServer // the filesystem server, then the executor
	serving errgroup.Group // one ServeStdio per server, from Connect on
	stop    context.CancelFunc
	closers []func() error
}

// hostedServer is one server of Local and the name errors give it.
type hostedServer struct {
	name string
	srv  *mcp.Server
}

// StartLocal opens the workspace and builds both servers. Connect reaches them; Close stops them. build changes how
// the executor is built (tests).
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
	l.servers = []hostedServer{{"the in-process filesystem server", files.Server()}, {"the in-process executor", exec.Server()}}
	l.closers = append(l.closers, l.stopServing)
	l.Health = func() map[string]any {
		return map[string]any{"filesystem": files.Health(), "executor": exec.Health()}
	}
	return l, nil
}

// Connect serves each server on an in-memory link and opens a session to it. A server serves one client (its
// session is its stdio's), so Connect works once.
func (l *Local) Connect(ctx context.Context) (*Client, error) {
	conns, err := l.serve()
	if err != nil {
		return nil, err
	}
	return open(ctx, func(s *Client) []link {
		links := make([]link, len(conns))
		for i, c := range conns {
			links[i] = link{name: l.servers[i].name, transport: newMemoryLink(c, s.results).transport()}
			s.cut = append(s.cut, c)
		}
		return links
	})
}

// serve starts serving each server on its end of a new pipe, as mcpserve serves stdio, and returns the client's
// ends in the order of l.servers.
func (l *Local) serve() ([]net.Conn, error) {
	if l.stop != nil {
		return nil, errors.New("the in-process servers already serve their client: each serves one session")
	}
	ctx, stop := context.WithCancel(context.Background())
	l.stop = stop
	clients := make([]net.Conn, len(l.servers))
	for i, hs := range l.servers {
		client, server := net.Pipe()
		clients[i] = client
		l.serving.Go(func() error {
			defer server.Close() // which ends the server's reader, blocked on the pipe
			if err := mcpserve.ServeStdio(ctx, hs.srv, server, server, mcpserve.Config{}); err != nil {
				return fmt.Errorf("%s: %w", hs.name, err)
			}
			return nil
		})
	}
	return clients, nil
}

// stopServing ends the sessions (their running calls are cancelled, their background processes stopped) and waits
// for the servers to return.
func (l *Local) stopServing() error {
	if l.stop == nil {
		return nil
	}
	l.stop()
	return l.serving.Wait()
}

// hostedOutputCap is the output cap of the executor the agent hosts, unless its options set one: the cap the
// executor had before its default was cut for coding agents.
const hostedOutputCap = 256 << 10

// Close stops the servers and releases the workspace and the backend, last started first. A client still
// connected then gets errors: the sandbox is gone.
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
	// Local is the servers: their health and the executor's backend.
	Local *Local
}

// Host starts both servers over opts.Workspace and connects to them: the goal mode's sandbox when no running
// servers are named, and every sandbox of the benchmark. Close stops them.
func Host(ctx context.Context, opts LocalOptions, build ...assemble.Option) (*Hosted, error) {
	l, err := StartLocal(opts, build...)
	if err != nil {
		return nil, err
	}
	c, err := l.Connect(ctx)
	if err != nil {
		return nil, errors.Join(err, l.Close())
	}
	return &Hosted{Client: c, Local: l}, nil
}

// Close ends the sessions, then stops the servers.
func (h *Hosted) Close() error { return errors.Join(h.Client.Close(), h.Local.Close()) }
