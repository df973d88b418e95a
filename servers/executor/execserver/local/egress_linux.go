package local

// The egress listener is the sandbox's only way out (-net-allow): a TCP socket listening on 127.0.0.1 inside the
// holder's network namespace, whose connections the server accepts and serves with its egress proxy, which dials
// upstreams from the host's own network. The server cannot make that socket itself: entering a network namespace
// takes CAP_SYS_ADMIN in the server's own user namespace too, which an unprivileged server lacks. So the holder, a
// member of the namespace, makes it when it starts and hands the descriptor over a unix socketpair (SCM_RIGHTS).
// Nothing else crosses: commands still have no route out, and the proxy decides every connection.

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/goalbox/goalbox/pkg/protocol"
	"github.com/goalbox/goalbox/servers/executor/execserver/egress"
	"golang.org/x/sys/unix"
)

// holderEgressEnv tells a holder to make the egress listener and send it on the descriptor the value names.
const holderEgressEnv = "GOALBOX_HOLDER_EGRESS_FD"

// egressPair is the server's end of the socketpair the holder sends its listener on.
type egressPair struct {
	ours, theirs *os.File
}

// holderEgressStart asks the holder cmd (not started yet) for an egress listener when want is set: it adds the
// holder's end of a socketpair to cmd's descriptors and names it in cmd's environment. nil when not wanted.
func holderEgressStart(cmd *exec.Cmd, want bool) (*egressPair, error) {
	if !want {
		return nil, nil
	}
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("egress socketpair: %w", err)
	}
	theirs := os.NewFile(uintptr(fds[1]), "egress-holder")
	cmd.ExtraFiles = append(cmd.ExtraFiles, theirs)
	cmd.Env = append(cmd.Env, holderEgressEnv+"="+strconv.Itoa(2+len(cmd.ExtraFiles)))
	return &egressPair{ours: os.NewFile(uintptr(fds[0]), "egress-server"), theirs: theirs}, nil
}

// receive takes the listener the holder sent (after its report), and closes the pair. Call it once cmd started
// (the holder's end in cmd.ExtraFiles may be closed by then: the holder has its copy).
func (e *egressPair) receive() (net.Listener, error) {
	if e == nil {
		return nil, nil
	}
	defer e.close()
	buf := make([]byte, 16)
	oob := make([]byte, unix.CmsgSpace(4))
	n, oobn, _, _, err := unix.Recvmsg(int(e.ours.Fd()), buf, oob, unix.MSG_CMSG_CLOEXEC|unix.MSG_DONTWAIT)
	if err != nil {
		return nil, fmt.Errorf("the namespace holder sent no egress listener: %w", err)
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil || len(msgs) != 1 {
		return nil, fmt.Errorf("the namespace holder's egress message is malformed (%q): %v", buf[:n], err)
	}
	fds, err := unix.ParseUnixRights(&msgs[0])
	if err != nil || len(fds) != 1 {
		for _, fd := range fds {
			unix.Close(fd)
		}
		return nil, fmt.Errorf("the namespace holder's egress message carries no descriptor: %v", err)
	}
	f := os.NewFile(uintptr(fds[0]), "egress-listener")
	defer f.Close()
	ln, err := net.FileListener(f) // a close-on-exec dup: no command inherits it
	if err != nil {
		return nil, fmt.Errorf("the egress listener: %w", err)
	}
	return ln, nil
}

// close releases both ends (the holder has its own copy once started); a second close does nothing.
func (e *egressPair) close() {
	if e != nil {
		e.ours.Close()
		e.theirs.Close()
	}
}

// holderEgressListen runs in the holder, after the loopback is up: when asked, it makes the listener on
// 127.0.0.1 (a free port: the server reads it from the socket and tells commands) and sends it to the server.
func holderEgressListen() error {
	v := os.Getenv(holderEgressEnv)
	if v == "" {
		return nil
	}
	sock, err := strconv.Atoi(v)
	if err != nil {
		return errors.New("namespace holder: bad " + holderEgressEnv)
	}
	defer unix.Close(sock)
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("egress listener: %w", err)
	}
	defer unix.Close(fd)
	if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		return fmt.Errorf("egress listener: bind 127.0.0.1: %w", err)
	}
	if err := unix.Listen(fd, 1024); err != nil {
		return fmt.Errorf("egress listener: listen: %w", err)
	}
	if err := unix.Sendmsg(sock, []byte("egress"), unix.UnixRights(fd), nil, 0); err != nil {
		return fmt.Errorf("egress listener: send it to the server: %w", err)
	}
	return nil
}

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
