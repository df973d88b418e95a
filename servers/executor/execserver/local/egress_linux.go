package local

// The egress listener is the sandbox's only way out (-net-allow): a TCP socket listening on 127.0.0.1 inside the
// holder's network namespace, whose connections the server accepts and serves with its egress proxy, which dials
// upstreams from the host's own network. The server cannot make that socket itself (an unprivileged server may not
// enter the namespace), so the holder, a member of it, makes it when it starts and hands it over (package netns:
// OfferHandoff, SendListener). Nothing else crosses: commands still have no route out, and the proxy decides every
// connection.

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"

	"github.com/goalbox/goalbox/pkg/protocol"
	"github.com/goalbox/goalbox/servers/executor/execserver/egress"
)

// egressState is the backend's egress proxy and where commands reach it.
type egressState struct {
	proxy  *egress.Proxy
	addr   string // 127.0.0.1:port in the sandbox's network namespace
	logger *slog.Logger
	files  []string // the CA files egressTrust wrote
}

// newEgress makes the proxy for cfg; nil when cfg allows nothing (commands keep no network).
func newEgress(cfg egress.Config, logger *slog.Logger) (*egressState, error) {
	if cfg.Allow.Empty() {
		return nil, nil
	}
	cfg.Logger = cmp.Or(cfg.Logger, logger)
	p, err := egress.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("local backend: %w", err)
	}
	return &egressState{proxy: p, logger: cfg.Logger}, nil
}

// attach serves the proxy on the holder's listener.
func (e *egressState) attach(ln net.Listener) error {
	if e == nil {
		return nil
	}
	if ln == nil {
		return errors.New("local backend: the namespace holder made no egress listener")
	}
	e.addr = ln.Addr().String()
	go func() {
		// Serve ends with nil when the proxy is closed; anything else leaves commands without a way out.
		if err := e.proxy.Serve(ln); err != nil {
			e.logger.Error("egress proxy: the listener failed; commands have no network from now on", "err", err)
		}
	}()
	return nil
}

func (e *egressState) close() {
	if e != nil {
		e.proxy.Close()
		for _, f := range e.files {
			os.Remove(f)
		}
	}
}

// begin opens a command's session and gives the proxy URL with its own credentials, for the init script's header.
func (e *egressState) begin() (*egress.Session, string) {
	if e == nil {
		return nil, ""
	}
	s := e.proxy.Begin()
	return s, s.ProxyURL(e.addr)
}

// health is the proxy's part of the confinement report.
func (e *egressState) health() *protocol.EgressHealth {
	if e == nil {
		return nil
	}
	return e.proxy.Health(e.addr)
}

// errEgressFallback is why -net-allow needs the namespace mode.
const errEgressFallback = "-net-allow needs the local backend's namespace mode: without a private network namespace a command's " +
	"Internet sockets are refused outright (seccomp and Landlock), so it could not reach the egress proxy, and allowing them would open " +
	"the whole network to it, not the allowed hosts. Run where user namespaces are permitted (see the start-up log for why they are not here), " +
	"or use -backend docker (as root on the Docker host)"

// egressTrust gives commands the proxy's variables (Proxy.Env) and its CA (secret.go): the CA and a bundle of the
// host's roots with it are written beside the workspaces' folders in cacheDir (not writable by commands: Landlock),
// named for this instance, and readable by commands. close removes them.
func (b *localBackend) egressTrust(cacheDir, instance string) error {
	if b.egress == nil {
		return nil
	}
	caFile := filepath.Join(cacheDir, "egress-ca-"+instance+".pem")
	bundle := filepath.Join(cacheDir, "egress-roots-"+instance+".pem")
	b.policy.Env = slices.Concat(b.policy.Env, b.egress.proxy.Env(bundle, caFile))
	ca := b.egress.proxy.CAPEM()
	if ca == nil {
		return nil
	}
	for f, content := range map[string][]byte{caFile: ca, bundle: b.egress.proxy.RootsBundle()} {
		if err := os.WriteFile(f, content, 0o644); err != nil {
			return fmt.Errorf("local backend: the egress proxy's CA: %w", err)
		}
		b.egress.files = append(b.egress.files, f)
	}
	b.policy.Rules.ReadFiles = append(b.policy.Rules.ReadFiles, caFile, bundle)
	return nil
}
