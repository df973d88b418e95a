package egress

import (
	"bufio"
	"cmp"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/goalbox/goalbox/pkg/protocol"
)

// Defaults for Config.
const (
	// DefaultMaxConns bounds the client connections of all commands together: a few parallel package managers
	// (npm opens 16 at once) with room to spare.
	DefaultMaxConns = 256
	// DefaultMaxConnsPerCommand bounds one command's (or process's) connections at once.
	DefaultMaxConnsPerCommand = 64
	// DefaultIdleTimeout closes a connection on which nothing moved either way for this long.
	DefaultIdleTimeout = 2 * time.Minute
	// DefaultHeadTimeout is how long a new connection has to send its first request's head, whole: every client
	// sends it at once, and until it does the connection is nobody's (pending.go).
	DefaultHeadTimeout = 10 * time.Second
	// DefaultMaxBytesPerCommand bounds what one command moves through the proxy, both ways together: a large
	// toolchain download fits, an exfiltration of a disk does not.
	DefaultMaxBytesPerCommand = 4 << 30
	// connectTimeout bounds one connect to an upstream.
	connectTimeout = 30 * time.Second
	// maxDenied is how many distinct refusals one command's result lists (the count goes on).
	maxDenied = 64
	// maxHeaderBytes bounds a request's head, as net/http's server does.
	maxHeaderBytes = 1 << 20
)

// Config configures the proxy.
type Config struct {
	// Allow is what commands may reach; New refuses an empty list (no network needs no proxy).
	Allow *AllowList
	// Resolver resolves names; nil is the system's (net.DefaultResolver). Tests give a HostsFile.
	Resolver Resolver
	// MaxConns bounds the client connections of all commands together; 0 means DefaultMaxConns.
	MaxConns int
	// MaxConnsPerCommand bounds one command's client connections at once; 0 means DefaultMaxConnsPerCommand.
	MaxConnsPerCommand int
	// IdleTimeout closes a connection idle both ways this long; 0 means DefaultIdleTimeout.
	IdleTimeout time.Duration
	// HeadTimeout bounds the time to a new connection's first request head; 0 means DefaultHeadTimeout.
	HeadTimeout time.Duration
	// MaxBytesPerCommand bounds the bytes one command moves, both ways together; 0 means
	// DefaultMaxBytesPerCommand, -1 none.
	MaxBytesPerCommand int64
	// Logger gets one line per refusal (the audit trail of the network) and per error.
	Logger *slog.Logger
	// Secrets are credentials the proxy puts in HTTPS requests to their hosts (secret.go); each host must be
	// allowed by Allow.
	Secrets []Secret
	// UpstreamCA is PEM certificates trusted, beside the host's roots, for the upstreams of intercepted hosts.
	UpstreamCA []byte
}

func (c *Config) fill() error {
	if c.Allow.Empty() {
		return errors.New("egress proxy: the allow-list is empty (without -net-allow commands have no network, and need no proxy)")
	}
	if c.Resolver == nil {
		c.Resolver = net.DefaultResolver
	}
	c.MaxConns = cmp.Or(c.MaxConns, DefaultMaxConns)
	c.MaxConnsPerCommand = cmp.Or(c.MaxConnsPerCommand, DefaultMaxConnsPerCommand)
	c.IdleTimeout = cmp.Or(c.IdleTimeout, DefaultIdleTimeout)
	c.HeadTimeout = cmp.Or(c.HeadTimeout, DefaultHeadTimeout)
	c.MaxBytesPerCommand = cmp.Or(c.MaxBytesPerCommand, DefaultMaxBytesPerCommand)
	c.Logger = cmp.Or(c.Logger, slog.New(slog.DiscardHandler))
	for _, s := range c.Secrets {
		for _, h := range s.Hosts {
			if _, ok, _ := c.Allow.matchName(h, 443); !ok {
				return fmt.Errorf("-secret %s is for %s, which -net-allow does not allow on port 443: add it, or the secret can never be sent", s.Name, h)
			}
		}
	}
	switch {
	case c.MaxConns < 1:
		return fmt.Errorf("egress proxy: -net-max-conns %d: must be at least 1", c.MaxConns)
	case c.MaxConnsPerCommand < 1 || c.MaxConnsPerCommand > c.MaxConns:
		return fmt.Errorf("egress proxy: -net-max-conns-per-command %d: must be from 1 to -net-max-conns (%d)", c.MaxConnsPerCommand, c.MaxConns)
	case c.IdleTimeout < time.Second:
		return fmt.Errorf("egress proxy: -net-idle-timeout %v: must be at least 1s", c.IdleTimeout)
	case c.MaxBytesPerCommand < -1:
		return fmt.Errorf("egress proxy: -net-max-bytes %d: must be positive, or -1 for no limit", c.MaxBytesPerCommand)
	}
	return nil
}

// Proxy is the egress proxy. Each command (or background process) it serves has a Session, named by the
// credentials in the proxy URL the command is given (HTTP_PROXY=http://<session>:<token>@127.0.0.1:PORT): clients
// send them as Proxy-Authorization, so the proxy knows whose refusals and bytes a connection's are, without
// guessing from source ports that all commands share. A request without credentials is still served, under the
// allow-list and a session of its own ("unattributed", with a command's limits), and shows only in the log: the
// credentials are for accounting, the allow-list is the confinement. Wrong credentials are refused (407).
type Proxy struct {
	cfg     Config
	secrets *interceptor // nil without secrets
	anon    *Session
	denied  atomic.Int64

	mu        sync.Mutex
	sessions  map[string]*Session
	conns     int                 // connections that named their session (pending ones are not counted): admit.go
	pending   map[net.Conn]uint64 // connections that have not yet sent a request head, by order of arrival
	arrivals  uint64
	listeners []net.Listener
	closed    bool
	wg        sync.WaitGroup
	seq       uint64

	// leakCheckOff turns off the search for secrets' real values (leak.go): the positive control of its tests.
	leakCheckOff atomic.Bool
	// hideOff hands a secret's host's responses on as they come (hide.go): the positive control of its tests.
	hideOff atomic.Bool
	// fairShareOff makes a full executor refuse every new connection (admit.go), as it did: the positive control
	// of its tests.
	fairShareOff atomic.Bool

	// dial connects to an address already checked; tests replace it to reach an upstream on loopback (which the
	// real dialer refuses) after every check has run.
	dial func(ctx context.Context, addr netip.AddrPort) (net.Conn, error)
}

// New makes a proxy; Serve gives it a listener.
func New(cfg Config) (*Proxy, error) {
	if err := cfg.fill(); err != nil {
		return nil, err
	}
	p := &Proxy{cfg: cfg, sessions: map[string]*Session{}, pending: map[net.Conn]uint64{}}
	if len(cfg.Secrets) > 0 {
		in, err := newInterceptor(cfg.Secrets, cfg.UpstreamCA)
		if err != nil {
			return nil, fmt.Errorf("egress proxy: %w", err)
		}
		p.secrets = in
	}
	p.anon = p.newSession("unattributed")
	p.dial = p.dialChecked
	return p, nil
}

// Allow is the proxy's allow-list.
func (p *Proxy) Allow() *AllowList { return p.cfg.Allow }

// Health is the proxy's part of /healthz; addr is where commands reach it.
func (p *Proxy) Health(addr string) *protocol.EgressHealth {
	p.mu.Lock()
	conns := p.conns
	p.mu.Unlock()
	return &protocol.EgressHealth{
		Allow:              p.cfg.Allow.Entries(),
		DefaultPorts:       DefaultPorts,
		Proxy:              "http://" + addr,
		MaxConns:           p.cfg.MaxConns,
		MaxConnsPerCommand: p.cfg.MaxConnsPerCommand,
		IdleTimeoutSeconds: int(p.cfg.IdleTimeout.Seconds()),
		MaxBytesPerCommand: max(p.cfg.MaxBytesPerCommand, 0),
		ActiveConns:        conns,
		Denied:             p.denied.Load(),
		Secrets:            p.secretNames(),
	}
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, " and ")
}

// Serve accepts connections on ln until it is closed or the proxy is, and serves each. It returns nil when the
// proxy was closed.
func (p *Proxy) Serve(ln net.Listener) error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		ln.Close()
		return nil
	}
	p.listeners = append(p.listeners, ln)
	p.mu.Unlock()
	for {
		c, err := ln.Accept()
		if err != nil {
			p.mu.Lock()
			closed := p.closed
			p.mu.Unlock()
			if closed {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() || errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) {
				time.Sleep(50 * time.Millisecond)
				continue
			}
			return err
		}
		p.wg.Go(func() { p.serveConn(c) })
	}
}

// Close stops every listener and every connection, and waits for them.
func (p *Proxy) Close() error {
	p.mu.Lock()
	p.closed = true
	lns := p.listeners
	sessions := slices.Collect(maps.Values(p.sessions))
	pending := slices.Collect(maps.Keys(p.pending))
	p.mu.Unlock()
	for _, ln := range lns {
		ln.Close()
	}
	for _, c := range pending {
		c.Close()
	}
	for _, s := range append(sessions, p.anon) {
		s.closeConns()
	}
	p.wg.Wait()
	return nil
}

// Session is one command's use of the proxy: its credentials, its connections, what it was refused and what it
// reached.
type Session struct {
	p         *Proxy
	id, token string

	mu      sync.Mutex
	ended   bool
	conns   map[net.Conn]struct{} // client and upstream connections, closed by End
	places  map[*place]struct{}   // its client connections now (guarded by p.mu: admit.go)
	bytes   int64
	hosts   map[string]*protocol.NetworkHost
	order   []string
	denied  []string
	deniedN int
}

// Begin opens a session for one command. End it when the command ends.
func (p *Proxy) Begin() *Session {
	p.mu.Lock()
	p.seq++
	id := "c" + strconv.FormatUint(p.seq, 10)
	p.mu.Unlock()
	s := p.newSession(id)
	p.mu.Lock()
	p.sessions[id] = s
	p.mu.Unlock()
	return s
}

func (p *Proxy) newSession(id string) *Session {
	var tok [8]byte
	_, _ = rand.Read(tok[:])
	return &Session{p: p, id: id, token: hex.EncodeToString(tok[:]), conns: map[net.Conn]struct{}{}, places: map[*place]struct{}{}, hosts: map[string]*protocol.NetworkHost{}}
}

// ID names the session in the log.
func (s *Session) ID() string { return s.id }

// ProxyURL is the URL a command is given, with its credentials, for a proxy commands reach at addr (host:port).
// The user and password are letters and digits only, so no client needs to escape them.
func (s *Session) ProxyURL(addr string) string { return "http://" + s.id + ":" + s.token + "@" + addr }

// Usage is what a session did.
type Usage struct {
	Denied []string               // host:port refused, each once, in order, at most maxDenied
	Hosts  []protocol.NetworkHost // host:port reached, in order of first use
}

// End closes the session's connections (a command that ended leaves no tunnel open) and returns its usage. A nil
// session (no -net-allow) used nothing.
func (s *Session) End() Usage {
	if s == nil {
		return Usage{}
	}
	s.p.mu.Lock()
	delete(s.p.sessions, s.id)
	s.p.mu.Unlock()
	s.mu.Lock()
	s.ended = true
	s.mu.Unlock()
	s.closeConns()
	s.mu.Lock()
	defer s.mu.Unlock()
	u := Usage{Denied: slices.Clone(s.denied)}
	for _, h := range s.order {
		u.Hosts = append(u.Hosts, *s.hosts[h])
	}
	return u
}

func (s *Session) closeConns() {
	s.mu.Lock()
	conns := slices.Collect(maps.Keys(s.conns))
	s.mu.Unlock()
	for _, c := range conns {
		c.Close()
	}
}

// track adds a connection the session's End closes; false when the session already ended.
func (s *Session) track(c net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return false
	}
	s.conns[c] = struct{}{}
	return true
}

func (s *Session) untrack(c net.Conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
}

func (s *Session) deny(hostport string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.deniedN++
	if len(s.denied) < maxDenied && !slices.Contains(s.denied, hostport) {
		s.denied = append(s.denied, hostport)
	}
}

// host is the record of hostport, made at its first connection.
func (s *Session) host(hostport string) *protocol.NetworkHost {
	s.mu.Lock()
	defer s.mu.Unlock()
	h := s.hosts[hostport]
	if h == nil {
		h = &protocol.NetworkHost{Host: hostport}
		s.hosts[hostport] = h
		s.order = append(s.order, hostport)
	}
	h.Connections++
	return h
}

// count adds n bytes to h; false once the session is past its byte limit.
func (s *Session) count(h *protocol.NetworkHost, sent, received int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	h.BytesSent += sent
	h.BytesReceived += received
	s.bytes += sent + received
	return s.p.cfg.MaxBytesPerCommand < 0 || s.bytes <= s.p.cfg.MaxBytesPerCommand
}

// refusal is why a request was not served: the status, and words for the one who made it.
type refusal struct {
	status   int
	host     string
	port     int
	reason   string // a sentence, without "refused"
	rule     string // the rule that refused: "allow-list", "never-reachable", "private-range", "limit", ...
	denied   bool   // counts in network_denied (a policy refusal, not a malformed request)
	detailed bool   // reason already says what to do
}

func (r *refusal) hostport() string { return net.JoinHostPort(r.host, strconv.Itoa(r.port)) }

func (r *refusal) Error() string { return r.reason }

// body is what the client reads: curl prints it for plain HTTP, and the status line's reason phrase for CONNECT.
func (p *Proxy) body(r *refusal) string {
	b := fmt.Sprintf("goalbox egress proxy: refused %s (rule: %s): %s\n", r.hostport(), r.rule, r.reason)
	if !r.detailed {
		b += fmt.Sprintf("The executor's -net-allow allows: %s (a host without :port means ports %s). "+
			"To reach another host, whoever runs the executor adds it to -net-allow.\n", strings.Join(p.cfg.Allow.Entries(), ", "), joinInts(DefaultPorts))
	}
	return b
}

func (p *Proxy) refuse(w io.Writer, s *Session, r *refusal) {
	r.host, r.reason = p.secrets.redact(r.host), p.secrets.redact(r.reason)
	if r.denied {
		p.denied.Add(1)
		s.deny(r.hostport())
	}
	p.cfg.Logger.Warn("egress refused", "command", s.id, "host", r.host, "port", r.port, "rule", r.rule, "reason", r.reason, "status", r.status)
	body := p.body(r)
	phrase := fmt.Sprintf("Refused by goalbox -net-allow (%s: %s)", r.rule, r.hostport())
	if !r.denied {
		phrase = http.StatusText(r.status)
	}
	fmt.Fprintf(w, "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\nX-Goalbox-Egress-Rule: %s\r\n\r\n%s",
		r.status, phrase, len(body), r.rule, body)
}

// decide checks host:port against the allow-list and resolves it: the addresses it may be dialled at, or a refusal.
func (p *Proxy) decide(ctx context.Context, host string, port int) ([]netip.AddrPort, *refusal) {
	host = strings.ToLower(strings.TrimSuffix(strings.Trim(host, "[]"), "."))
	ref := func(status int, rule, reason string) *refusal {
		return &refusal{status: status, host: host, port: port, rule: rule, reason: reason, denied: true}
	}
	if port < 1 || port > 65535 {
		r := ref(http.StatusBadRequest, "bad-request", "no valid port")
		r.denied = false
		return nil, r
	}
	own := hostAddrs()
	if ip, err := netip.ParseAddr(host); err == nil {
		ip = ip.Unmap()
		if why := neverReason(ip, own); why != "" {
			return nil, ref(http.StatusForbidden, "never-reachable", ip.String()+" is "+why+", never reachable from the sandbox, whatever -net-allow says")
		}
		if _, ok := p.cfg.Allow.matchAddr(ip); !ok {
			return nil, ref(http.StatusForbidden, "allow-list", "no -net-allow entry names this address (an IP address is allowed only by a CIDR entry holding it)")
		}
		return []netip.AddrPort{netip.AddrPortFrom(ip, uint16(port))}, nil
	}
	if checkName(host) != nil {
		r := ref(http.StatusBadRequest, "bad-request", "not a host name")
		r.denied = false
		return nil, r
	}
	rule, ok, other := p.cfg.Allow.matchName(host, port)
	if !ok {
		if other != nil {
			ports := joinInts(DefaultPorts)
			if other.port != 0 {
				ports = strconv.Itoa(other.port)
			}
			return nil, ref(http.StatusForbidden, "allow-list", fmt.Sprintf("port %d is not allowed for %s: the entry %s opens port %s only", port, host, other.text, ports))
		}
		return nil, ref(http.StatusForbidden, "allow-list", "no -net-allow entry matches "+host)
	}
	rctx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	addrs, err := p.cfg.Resolver.LookupNetIP(rctx, "ip", host)
	if err != nil || len(addrs) == 0 {
		r := ref(http.StatusBadGateway, "resolve", fmt.Sprintf("%s (allowed by %s) does not resolve: %v", host, rule.text, err))
		r.denied, r.detailed = false, true
		return nil, r
	}
	var ok2 []netip.AddrPort
	var first *refusal
	for _, ip := range addrs {
		if r := p.checkAddr(ip, own); r != nil {
			if first == nil {
				first = ref(http.StatusForbidden, r.rule, fmt.Sprintf("%s (allowed by %s) resolves to %s", host, rule.text, r.reason))
				first.detailed = r.rule == "never-reachable"
			}
			continue
		}
		ok2 = append(ok2, netip.AddrPortFrom(ip.Unmap(), uint16(port)))
	}
	if len(ok2) == 0 {
		return nil, first
	}
	return ok2, nil
}

// checkAddr is the rule every connect obeys, by name or by literal: never the machine, its link or metadata; a
// private or reserved range only where a CIDR entry names it.
func (p *Proxy) checkAddr(ip netip.Addr, own []netip.Addr) *refusal {
	ip = ip.Unmap()
	if why := neverReason(ip, own); why != "" {
		return &refusal{rule: "never-reachable", reason: ip.String() + ", " + why + ", never reachable from the sandbox whatever -net-allow says"}
	}
	if isNonPublic(ip) {
		if _, ok := p.cfg.Allow.matchAddr(ip); !ok {
			return &refusal{rule: "private-range", reason: ip.String() + ", a private or reserved address, reachable only when a -net-allow CIDR entry names it"}
		}
	}
	return nil
}

// dialChecked connects to addr with the address checked again in the socket's Control hook, on the address the
// kernel is asked to connect to: whatever path led here, no connect to a refused address is made.
func (p *Proxy) dialChecked(ctx context.Context, addr netip.AddrPort) (net.Conn, error) {
	d := net.Dialer{Timeout: connectTimeout, Control: func(network, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return fmt.Errorf("egress: connect to %q: not an address", address)
		}
		if r := p.checkAddr(ap.Addr(), hostAddrs()); r != nil {
			return r
		}
		return nil
	}}
	return d.DialContext(ctx, "tcp", addr.String())
}

// connect dials the first address that answers.
func (p *Proxy) connect(ctx context.Context, addrs []netip.AddrPort) (net.Conn, error) {
	var errs []error
	for _, a := range addrs {
		c, err := p.dial(ctx, a)
		if err == nil {
			return c, nil
		}
		errs = append(errs, err)
	}
	return nil, errors.Join(errs...)
}

// serveConn serves one client connection: requests in a row (plain HTTP keeps the connection), or one CONNECT.
// Until its first request head names a session the connection is pending (pending.go), bounded in number and in
// time, and counts against no limit of a command's or of the executor's; from then on it is its session's.
func (p *Proxy) serveConn(c net.Conn) {
	defer c.Close()
	ic := &idleConn{Conn: c, idle: p.cfg.IdleTimeout, until: time.Now().Add(p.cfg.HeadTimeout)}
	p.pend(c)
	lr := &io.LimitedReader{R: ic}
	br := bufio.NewReaderSize(lr, 16<<10)
	req, err := readRequest(br, lr)
	ic.until = time.Time{}
	if !p.unpend(c) || err != nil {
		return // made room for a newer connection, or no head in time
	}
	sess := p.authOrRefuse(ic, req)
	if sess == nil {
		return
	}
	host, port := targetOf(req)
	pl, r := p.admit(sess, ic, host, port)
	if r != nil {
		p.refuse(ic, sess, r)
		return
	}
	defer p.release(pl)
	if !sess.track(c) {
		p.refuse(ic, sess, &refusal{status: http.StatusForbidden, host: host, port: port, rule: "ended", detailed: true,
			reason: "the command these proxy credentials are for has ended"})
		return
	}
	defer sess.untrack(c)
	var fw *forwarder
	defer func() {
		if fw != nil {
			fw.close()
		}
	}()
	for ; err == nil; req, err = readRequest(br, lr) {
		if s := p.authOrRefuse(ic, req); s != sess {
			return // one connection, one command
		}
		if req.Method == http.MethodConnect {
			p.tunnel(ic, br, req, sess)
			return
		}
		if fw == nil {
			fw = &forwarder{p: p, s: sess}
		}
		if !fw.forward(ic, req) {
			return
		}
	}
}

// authOrRefuse is the session req's credentials name, or nil once it has answered them with a 407.
func (p *Proxy) authOrRefuse(w io.Writer, req *http.Request) *Session {
	s, authErr := p.auth(req)
	if authErr == "" {
		return s
	}
	p.cfg.Logger.Warn("egress: bad proxy credentials", "error", authErr)
	body := "goalbox egress proxy: " + authErr + "\n"
	fmt.Fprintf(w, "HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm=\"goalbox\"\r\nContent-Type: text/plain\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", len(body), body)
	return nil
}

// readRequest reads one request's head, at most maxHeaderBytes of it (lr feeds br); what follows (a body, a
// tunnel's bytes) is not limited.
func readRequest(br *bufio.Reader, lr *io.LimitedReader) (*http.Request, error) {
	lr.N = maxHeaderBytes + int64(br.Buffered())
	req, err := http.ReadRequest(br)
	lr.N = 1 << 62
	return req, err
}

// targetOf is the host and port a proxy request names.
func targetOf(req *http.Request) (string, int) {
	hp := req.Host
	if req.Method != http.MethodConnect && req.URL != nil && req.URL.Host != "" {
		hp = req.URL.Host
	}
	host, ps, err := net.SplitHostPort(hp)
	if err != nil {
		host, ps = hp, "80"
		if req.URL != nil && req.URL.Scheme == "https" {
			ps = "443"
		}
	}
	port, _ := strconv.Atoi(ps)
	return host, port
}

// auth finds the session a request's Proxy-Authorization names: the anonymous one without it, an error for wrong
// credentials (a stale or forged session).
func (p *Proxy) auth(req *http.Request) (*Session, string) {
	h := req.Header.Get("Proxy-Authorization")
	if h == "" {
		return p.anon, ""
	}
	scheme, enc, _ := strings.Cut(h, " ")
	if !strings.EqualFold(scheme, "Basic") {
		return nil, "only Basic proxy credentials are understood (those in HTTP_PROXY)"
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(enc))
	if err != nil {
		return nil, "malformed proxy credentials"
	}
	id, tok, _ := strings.Cut(string(raw), ":")
	p.mu.Lock()
	s := p.sessions[id]
	p.mu.Unlock()
	if s == nil || subtle.ConstantTimeCompare([]byte(tok), []byte(s.token)) != 1 {
		return nil, "the proxy credentials name no running command (use the HTTP_PROXY your command was given)"
	}
	return s, ""
}

// tunnel serves CONNECT: decide, dial, 200, then bytes both ways until either side ends or idles out.
func (p *Proxy) tunnel(c *idleConn, br *bufio.Reader, req *http.Request, s *Session) {
	host, port := targetOf(req)
	if sec := p.secrets.leakedInName(host); sec != nil && !p.leakCheckOff.Load() {
		p.refuse(c, s, &refusal{status: http.StatusForbidden, host: host, port: port, rule: "secret", denied: true, detailed: true,
			reason: "the host name carries the real value of the secret " + sec.Name + ", which resolving it would send to DNS servers"})
		return
	}
	addrs, r := p.decide(req.Context(), host, port)
	if r != nil {
		p.refuse(c, s, r)
		return
	}
	up, err := p.open(req.Context(), s, host, port, addrs)
	if err != nil {
		p.refuseDial(c, s, host, port, err)
		return
	}
	defer up.Close()
	if _, err := io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return
	}
	if p.secrets.intercepts(strings.ToLower(strings.TrimSuffix(host, "."))) {
		p.intercept(c, br, up, s, strings.ToLower(strings.TrimSuffix(host, ".")), port)
		return
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		// Whatever the client sent after its CONNECT is in br already; the rest goes kernel to kernel.
		if n := br.Buffered(); n > 0 {
			b, _ := br.Peek(n)
			if _, err := up.Write(b); err != nil {
				return
			}
			_, _ = br.Discard(n)
		}
		_, _ = p.pump(up.raw(), c.Conn, -1, func(n int64) bool { return s.count(up.h, n, 0) })
		up.closeWrite()
	}()
	_, err = p.pump(c.Conn, up.raw(), -1, func(n int64) bool { return s.count(up.h, 0, n) })
	if errors.Is(err, errByteLimit) {
		up.overLimit()
	}
	c.closeWrite()
	select {
	case <-done:
	case <-time.After(p.cfg.IdleTimeout):
	}
}

// pumpChunk is how much pump moves between two looks at the limits and the deadline.
const pumpChunk = 1 << 20

// pump copies src to dst until EOF (limit < 0) or limit bytes, in chunks that io.CopyN hands to the kernel
// (splice(2) between two TCP connections, no copy through the proxy's memory): a download through the proxy costs
// about what it costs directly. account gets each chunk's bytes and says whether the command is still within its
// byte limit, so the limit may be passed by at most one chunk. The connection is idle only when a whole idle
// timeout passed without a byte.
func (p *Proxy) pump(dst, src net.Conn, limit int64, account func(int64) bool) (int64, error) {
	var total int64
	for limit < 0 || total < limit {
		chunk := int64(pumpChunk)
		if limit >= 0 {
			chunk = min(chunk, limit-total)
		}
		deadline := time.Now().Add(p.cfg.IdleTimeout)
		_ = src.SetReadDeadline(deadline)
		_ = dst.SetWriteDeadline(deadline)
		n, err := io.CopyN(dst, src, chunk)
		total += n
		if n > 0 && !account(n) {
			return total, errByteLimit
		}
		var ne net.Error
		switch {
		case err == nil:
		case errors.Is(err, io.EOF) && limit < 0:
			return total, nil
		case errors.As(err, &ne) && ne.Timeout() && n > 0:
			// Bytes moved within this chunk's deadline: slow, not idle.
		default:
			return total, err
		}
	}
	return total, nil
}

// refuseDial answers a failed connect: a 403 when the Control hook refused the address, else a 502.
func (p *Proxy) refuseDial(w io.Writer, s *Session, host string, port int, err error) {
	var r *refusal
	if errors.As(err, &r) {
		p.refuse(w, s, &refusal{status: http.StatusForbidden, host: host, port: port, rule: r.rule, reason: r.reason, denied: true, detailed: true})
		return
	}
	p.refuse(w, s, &refusal{status: http.StatusBadGateway, host: host, port: port, rule: "upstream", detailed: true,
		reason: "could not connect: " + err.Error()})
}

// open dials an upstream for s and wraps it in the session's accounting and the idle timeout.
func (p *Proxy) open(ctx context.Context, s *Session, host string, port int, addrs []netip.AddrPort) (*upConn, error) {
	raw, err := p.connect(ctx, addrs)
	if err != nil {
		return nil, err
	}
	hp := net.JoinHostPort(host, strconv.Itoa(port))
	u := &upConn{idleConn: idleConn{Conn: raw, idle: p.cfg.IdleTimeout}, s: s, h: s.host(hp), hostport: hp}
	if !s.track(u) {
		raw.Close()
		return nil, errors.New("the command has ended")
	}
	return u, nil
}

// forwarder forwards plain-HTTP requests of one client connection, keeping its upstream connection while requests
// go to the same host and port.
type forwarder struct {
	p        *Proxy
	s        *Session
	up       *upConn
	upR      *bufio.Reader
	hostport string
}

func (f *forwarder) close() {
	if f.up != nil {
		f.up.Close()
		f.s.untrack(f.up)
		f.up = nil
	}
}

// hopHeaders are a single connection's, never forwarded (RFC 9110 7.6.1), with the proxy's own credentials.
var hopHeaders = []string{"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authorization", "Proxy-Authenticate", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

func stripHop(h http.Header) {
	for _, f := range h.Values("Connection") {
		for _, k := range strings.Split(f, ",") {
			h.Del(strings.TrimSpace(k))
		}
	}
	for _, k := range hopHeaders {
		h.Del(k)
	}
}

// forward serves one plain-HTTP request; false when the client connection must close.
func (f *forwarder) forward(c *idleConn, req *http.Request) bool {
	p := f.p
	if req.URL == nil || !req.URL.IsAbs() {
		p.refuse(c, f.s, &refusal{status: http.StatusBadRequest, host: req.Host, port: 80, rule: "bad-request", detailed: true,
			reason: "this is a proxy: requests name an absolute http:// URL, or use CONNECT for anything else"})
		return false
	}
	if req.URL.Scheme != "http" {
		host, port := targetOf(req)
		p.refuse(c, f.s, &refusal{status: http.StatusBadRequest, host: host, port: port, rule: "bad-request", detailed: true,
			reason: fmt.Sprintf("the proxy forwards only http:// URLs; for %s:// a client uses CONNECT", req.URL.Scheme)})
		return false
	}
	host, port := targetOf(req)
	if sec := p.secrets.misplaced(req, host, true); sec != nil {
		p.refuse(c, f.s, &refusal{status: http.StatusForbidden, host: host, port: port, rule: "secret", denied: true, detailed: true,
			reason: fmt.Sprintf("the request carries the placeholder of the secret %s, which is only ever sent over HTTPS, to %s", sec.Name, strings.Join(sec.Hosts, ", "))})
		return false
	}
	if p.refuseLeak(c, f.s, req, host, port, true) {
		return false
	}
	hp := net.JoinHostPort(host, strconv.Itoa(port))
	if f.up == nil || f.hostport != hp {
		f.close()
		addrs, r := p.decide(req.Context(), host, port)
		if r != nil {
			p.refuse(c, f.s, r)
			return false
		}
		up, err := p.open(req.Context(), f.s, host, port, addrs)
		if err != nil {
			p.refuseDial(c, f.s, host, port, err)
			return false
		}
		f.up, f.upR, f.hostport = up, bufio.NewReader(up), hp
	}
	clientClose := req.Close
	stripHop(req.Header)
	if _, ok := req.Header["User-Agent"]; !ok {
		req.Header["User-Agent"] = []string{""} // else Request.Write adds Go's own
	}
	continueEarly(c, req)
	req.RequestURI = ""
	req.Close = false
	if err := req.Write(f.up); err != nil {
		f.close()
		return false
	}
	resp, err := http.ReadResponse(f.upR, req)
	if err != nil {
		f.close()
		p.refuse(c, f.s, &refusal{status: http.StatusBadGateway, host: host, port: port, rule: "upstream", detailed: true, reason: "no valid response: " + err.Error()})
		return false
	}
	upClose := resp.Close
	stripHop(resp.Header)
	resp.Close = clientClose
	if resp.ContentLength > 0 && len(resp.TransferEncoding) == 0 && req.Method != http.MethodHead {
		// The body is read past resp.Body, from the upstream's reader: closing resp.Body would wait to drain
		// bytes already sent.
		err = f.writeSized(c, resp)
	} else {
		err = resp.Write(c)
		resp.Body.Close()
	}
	if upClose {
		f.close()
	}
	return err == nil && !clientClose
}

// writeSized writes a response of known length: the head, what the upstream reader holds already, then the rest
// of the body pumped kernel to kernel.
func (f *forwarder) writeSized(c *idleConn, resp *http.Response) error {
	var head strings.Builder
	fmt.Fprintf(&head, "HTTP/%d.%d %s\r\n", resp.ProtoMajor, resp.ProtoMinor, resp.Status)
	resp.Header.Set("Content-Length", strconv.FormatInt(resp.ContentLength, 10))
	if resp.Close {
		resp.Header.Set("Connection", "close")
	}
	_ = resp.Header.Write(&head)
	head.WriteString("\r\n")
	if _, err := io.WriteString(c, head.String()); err != nil {
		return err
	}
	left := resp.ContentLength
	if n := min(int64(f.upR.Buffered()), left); n > 0 {
		b, _ := f.upR.Peek(int(n))
		if _, err := c.Write(b); err != nil {
			return err
		}
		_, _ = f.upR.Discard(int(n))
		left -= n
	}
	if left == 0 {
		return nil
	}
	_, err := f.p.pump(c.Conn, f.up.raw(), left, func(n int64) bool { return f.s.count(f.up.h, 0, n) })
	if errors.Is(err, errByteLimit) {
		f.up.overLimit()
	}
	if err != nil {
		f.close() // the upstream's stream is out of step now
	}
	return err
}

// idleConn closes a connection on which nothing moves for idle: every read and write pushes the deadline on. While
// until is set, reads have that fixed deadline instead, which bytes trickled in one at a time do not push on.
type idleConn struct {
	net.Conn
	idle  time.Duration
	until time.Time
}

func (c *idleConn) Read(b []byte) (int, error) {
	if !c.until.IsZero() {
		_ = c.Conn.SetDeadline(c.until)
	} else {
		_ = c.Conn.SetDeadline(time.Now().Add(c.idle))
	}
	return c.Conn.Read(b)
}

func (c *idleConn) Write(b []byte) (int, error) {
	_ = c.Conn.SetDeadline(time.Now().Add(c.idle))
	return c.Conn.Write(b)
}

func (c *idleConn) closeWrite() {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
}

// upConn is an upstream connection, counted for its session; past the session's byte limit it fails.
type upConn struct {
	idleConn
	s        *Session
	h        *protocol.NetworkHost
	hostport string
	once     sync.Once
}

var errByteLimit = errors.New("egress: the command moved more bytes through the proxy than -net-max-bytes allows")

func (u *upConn) Read(b []byte) (int, error) {
	n, err := u.idleConn.Read(b)
	if n > 0 && !u.s.count(u.h, 0, int64(n)) {
		u.overLimit()
		return n, errByteLimit
	}
	return n, err
}

func (u *upConn) Write(b []byte) (int, error) {
	n, err := u.idleConn.Write(b)
	if n > 0 && !u.s.count(u.h, int64(n), 0) {
		u.overLimit()
		return n, errByteLimit
	}
	return n, err
}

// raw is the upstream's TCP connection, for pump: reads from it are counted by pump's caller.
func (u *upConn) raw() net.Conn { return u.idleConn.Conn }

func (u *upConn) overLimit() {
	u.once.Do(func() {
		u.s.p.denied.Add(1)
		u.s.deny(u.hostport)
		u.s.p.cfg.Logger.Warn("egress refused", "command", u.s.id, "host", u.hostport, "rule", "limit",
			"reason", fmt.Sprintf("past -net-max-bytes (%d bytes)", u.s.p.cfg.MaxBytesPerCommand))
		u.Close()
	})
}

func (u *upConn) Close() error {
	u.s.untrack(u)
	return u.idleConn.Conn.Close()
}

// ProxyVars are the variables that carry the proxy's URL to a command, in both cases, since tools disagree on
// which they read (curl reads only http_proxy in lower case; Go and pip read either).
var ProxyVars = []string{"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"}

// NoProxy keeps the sandbox's own loopback direct, where a test suite's servers listen: the value of NO_PROXY and
// no_proxy.
const NoProxy = "localhost,127.0.0.1,::1"

// CAPEM is the certificate of the proxy's CA, for commands to trust (nil without secrets): it signs certificates
// for the secrets' hosts only (name constraints).
func (p *Proxy) CAPEM() []byte {
	if p.secrets == nil {
		return nil
	}
	return p.secrets.caPEM
}

// RootsBundle is the host's CA roots (the first of the usual bundles that exists) followed by the proxy's CA: what
// a command trusts when the proxy signs the certificates of the secrets' hosts. nil without secrets.
func (p *Proxy) RootsBundle() []byte {
	ca := p.CAPEM()
	if ca == nil {
		return nil
	}
	for _, f := range []string{os.Getenv("SSL_CERT_FILE"), "/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt", "/etc/ssl/cert.pem"} {
		if b, err := os.ReadFile(f); f != "" && err == nil {
			return append(append(b, '\n'), ca...)
		}
	}
	return ca
}

// Env is what every command's environment gets besides its proxy URL: NO_PROXY, NAME=placeholder for each secret,
// and with secrets the usual variables of TLS clients (OpenSSL, curl, Python's requests, pip, git, cargo) pointing
// at bundle, a file holding RootsBundle, and node's at caFile, which node adds to its own roots (bundle serves too).
func (p *Proxy) Env(bundle, caFile string) []string {
	env := []string{"NO_PROXY=" + NoProxy, "no_proxy=" + NoProxy}
	for _, s := range p.cfg.Secrets {
		env = append(env, s.Name+"="+s.placeholder)
	}
	if p.secrets == nil {
		return env
	}
	env = append(env, "NODE_EXTRA_CA_CERTS="+caFile)
	for _, k := range []string{"SSL_CERT_FILE", "CURL_CA_BUNDLE", "REQUESTS_CA_BUNDLE", "PIP_CERT", "GIT_SSL_CAINFO", "CARGO_HTTP_CAINFO"} {
		env = append(env, k+"="+bundle)
	}
	return env
}

// secretNames are NAME@host,host for each secret.
func (p *Proxy) secretNames() []string {
	var out []string
	for _, s := range p.cfg.Secrets {
		out = append(out, s.Name+"@"+strings.Join(s.Hosts, ","))
	}
	return out
}

// continueEarly answers a client's "Expect: 100-continue" at once and drops it from the request: Request.Write
// sends the body without waiting for the upstream's 100, so a client still waiting for one would stall (curl and
// git wait a second, then send anyway).
func continueEarly(w io.Writer, req *http.Request) {
	if strings.EqualFold(req.Header.Get("Expect"), "100-continue") {
		req.Header.Del("Expect")
		_, _ = io.WriteString(w, "HTTP/1.1 100 Continue\r\n\r\n")
	}
}
