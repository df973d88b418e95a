package docker

// -net-allow on the docker backend: the same egress proxy as the local backend's, reached the same way. Every
// command container joins the network namespace of the network holder (network.go), which has only a
// loopback; the server makes a TCP socket listening on 127.0.0.1 inside that namespace (egress_linux.go)
// and serves the proxy on it, dialling upstreams from the host's network. The containers keep network "none" in
// every other respect: no interface but lo, no route, no DNS; a connection that ignores the proxy goes nowhere.
//
// Making a socket in a container's namespace takes a thread that enters it (setns), which needs CAP_SYS_ADMIN
// over the namespace, and the holder's process seen in this server's /proc: a root server on the Docker host
// itself. Anywhere else (an ordinary user in the docker group, Docker Desktop's VM, a remote Engine) New refuses
// -net-allow and says why. An internal Docker network with the proxy as its only member outside would lift that,
// at the price of a second container image for the proxy; not done.
//
// Each command's proxy URL carries its own credentials (see package egress), written to its control folder as
// "proxy" and exported by the launcher; its result gets what the proxy refused it and what it reached.

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/goalbox/goalbox/pkg/protocol"
	"github.com/goalbox/goalbox/servers/executor/execserver/backend"
	"github.com/goalbox/goalbox/servers/executor/execserver/egress"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"
)

// dockerEgress is the backend's egress proxy and its listeners, one per network holder.
type dockerEgress struct {
	proxy  *egress.Proxy
	mu     sync.Mutex
	addrs  map[string]string // holder ID → 127.0.0.1:port in its namespace
	last   string            // the address of the newest listener, for /healthz
	bundle string            // host path of the CA bundle (-secret), "" without
}

// containerBundle is where a container finds the CA bundle.
const containerBundle = "/run/goalbox-egress/roots.pem"

// mounts are the egress proxy's binds for a command container.
func (e *dockerEgress) mounts() []mount.Mount {
	if e == nil || e.bundle == "" {
		return nil
	}
	return []mount.Mount{{Type: mount.TypeBind, Source: e.bundle, Target: containerBundle, ReadOnly: true,
		BindOptions: &mount.BindOptions{Propagation: mount.PropagationRPrivate}}}
}

// startEgress makes the proxy when the configuration allows hosts, and its listener in the current holder.
func (b *dockerBackend) startEgress(ctx context.Context) error {
	if b.cfg.Network.Allow.Empty() {
		return nil
	}
	cfg := b.cfg.Network
	cfg.Logger = cmp.Or(cfg.Logger, b.log)
	p, err := egress.New(cfg)
	if err != nil {
		return fmt.Errorf("docker backend: %w", err)
	}
	b.egress = &dockerEgress{proxy: p, addrs: map[string]string{}}
	if roots := p.RootsBundle(); roots != nil {
		// The proxy's CA (-secret), with the host's roots, for every container: a file of the control root, bound
		// read-only into each container.
		b.egress.bundle = filepath.Join(b.ctlRoot, "egress-roots.pem")
		if err := os.WriteFile(b.egress.bundle, roots, 0o644); err != nil {
			return fmt.Errorf("docker backend: the egress proxy's CA: %w", err)
		}
	}
	return b.egressAttach(ctx, b.net.current())
}

// egressAttach opens the proxy's listener in the network namespace of the holder id.
func (b *dockerBackend) egressAttach(ctx context.Context, id string) error {
	if b.egress == nil {
		return nil
	}
	insp, err := b.cli.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
	if err != nil {
		return fmt.Errorf("docker backend: -net-allow: inspect the network holder: %w", err)
	}
	if insp.Container.State == nil || insp.Container.State.Pid == 0 {
		return fmt.Errorf("docker backend: -net-allow: the network holder %.12s is not running", id)
	}
	ln, err := listenInNetns(insp.Container.State.Pid)
	if err != nil {
		return fmt.Errorf("docker backend: -net-allow needs the egress proxy's listener inside the network holder's namespace, "+
			"which only a root server on the Docker host itself (in its PID namespace) can open: %v. "+
			"Run the executor as root on the Docker host, use -backend local, or leave -net-allow empty", err)
	}
	b.egress.mu.Lock()
	b.egress.addrs[id] = ln.Addr().String()
	b.egress.last = ln.Addr().String()
	b.egress.mu.Unlock()
	go func() {
		// Serve ends with nil when the proxy is closed; anything else leaves this holder's commands without a way out.
		if err := b.egress.proxy.Serve(ln); err != nil {
			b.log.Error("docker backend: the egress listener failed; commands have no network from now on", "err", err)
		}
	}()
	return nil
}

func (e *dockerEgress) close() {
	if e != nil {
		e.proxy.Close()
	}
}

// begin opens a command's session; nil without -net-allow.
func (e *dockerEgress) begin() *egress.Session {
	if e == nil {
		return nil
	}
	return e.proxy.Begin()
}

// proxyFor is the function that gives the command's proxy URL once its container's holder is known.
func (e *dockerEgress) proxyFor(s *egress.Session) func(holder string) string {
	if e == nil || s == nil {
		return nil
	}
	return func(holder string) string {
		e.mu.Lock()
		addr := e.addrs[holder]
		e.mu.Unlock()
		if addr == "" {
			return "" // a holder without a listener (its attach failed): the command has no way out
		}
		return s.ProxyURL(addr)
	}
}

// staticEnv are the proxy variables every container shares.
func (e *dockerEgress) staticEnv() []string {
	if e == nil {
		return nil
	}
	return e.proxy.Env(containerBundle, containerBundle)
}

func (e *dockerEgress) health() *protocol.EgressHealth {
	if e == nil {
		return nil
	}
	e.mu.Lock()
	addr := e.last
	e.mu.Unlock()
	return e.proxy.Health(addr)
}

// network is the confinement report's network: a loopback shared by this executor's commands (the network
// namespace of a holder container on network none), with or without the egress proxy.
func (b *dockerBackend) network() protocol.NetworkConfinement {
	if b.egress == nil {
		return protocol.NetworkSharedLoopback
	}
	return protocol.NetworkEgressProxy
}

// Run runs a command with its egress session around it (run.go runs it).
func (b *dockerBackend) Run(ctx context.Context, req backend.Request) (backend.Result, error) {
	s := b.egress.begin()
	res, err := b.run(ctx, req, s)
	u := s.End()
	res.NetworkDenied, res.Network = u.Denied, u.Hosts
	return res, err
}
