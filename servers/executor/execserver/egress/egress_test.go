package egress

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestParseAllowList(t *testing.T) {
	a, err := ParseAllowList(" Registry.NPMjs.org , *.pypi.org:443,proxy.golang.org.:8443, 10.0.0.0/8, 192.168.1.7 ,fd00::/8")
	if err != nil {
		t.Fatal(err)
	}
	want := "registry.npmjs.org,*.pypi.org:443,proxy.golang.org:8443,10.0.0.0/8,192.168.1.7,fd00::/8"
	if got := a.String(); got != want {
		t.Fatalf("canonical list %q, want %q", got, want)
	}
	for _, bad := range []string{"exa mple.com", "*.", "a.*.com", "host:0", "host:99999", "host:http", "10.0.0.1/8", "10.0.0.1:80", "10.0.0.0/33", "-bad-:x", strings.Repeat("a", 64) + ".com"} {
		_, err := ParseAllowList("ok.example," + bad)
		if err == nil {
			t.Errorf("%q accepted", bad)
			continue
		}
		if !strings.Contains(err.Error(), "-net-allow entry") || !strings.Contains(err.Error(), "an entry is a host name") {
			t.Errorf("%q: the error does not name the entry and say what is accepted: %v", bad, err)
		}
	}
	if a, err := ParseAllowList(""); err != nil || !a.Empty() {
		t.Fatalf("empty list: %v %v", a, err)
	}
}

// hostsFile writes a hosts file for the test's names.
func hostsFile(t *testing.T, lines ...string) HostsFile {
	p := filepath.Join(t.TempDir(), "hosts")
	if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return HostsFile(p)
}

// ownAddr is a non-loopback address of this machine, if it has one.
func ownAddr() string {
	for _, a := range hostAddrs() {
		if !a.IsLoopback() && !a.IsLinkLocalUnicast() {
			return a.String()
		}
	}
	return ""
}

func TestDecide(t *testing.T) {
	own := ownAddr()
	lines := []string{
		"198.51.100.7 ok.test other.test",
		"127.0.0.1 loop.test",
		"169.254.169.254 meta.test",
		"fd00:ec2::254 meta6.test",
		"10.9.8.7 private.test",
		"172.16.0.5 unnamed-private.test",
		"127.0.0.1 mixed.test", "198.51.100.8 mixed.test a.b.wild.test",
	}
	if own != "" {
		lines = append(lines, own+" self.test")
	}
	a, err := ParseAllowList("ok.test,*.wild.test:8443,loop.test,meta.test,meta6.test,private.test,unnamed-private.test,mixed.test,self.test," +
		"198.51.100.0/24,10.0.0.0/8,fd00::/8,127.0.0.0/8,169.254.0.0/16")
	if err != nil {
		t.Fatal(err)
	}
	p, err := New(Config{Allow: a, Resolver: hostsFile(t, lines...)})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		host   string
		port   int
		rule   string // "" allowed
		reason string
	}{
		{"ok.test", 80, "", ""},
		{"OK.test.", 443, "", ""},
		{"ok.test", 8080, "allow-list", "port 8080 is not allowed for ok.test"},
		{"other.test", 80, "allow-list", "no -net-allow entry matches other.test"},
		{"a.b.wild.test", 8443, "", ""},
		{"wild.test", 8443, "allow-list", "no -net-allow entry matches"},
		{"loop.test", 80, "never-reachable", "127.0.0.1, a loopback address"},
		{"meta.test", 80, "never-reachable", "cloud metadata"},
		{"meta6.test", 80, "never-reachable", "cloud metadata"},
		{"private.test", 80, "", ""},
		{"unnamed-private.test", 80, "private-range", "172.16.0.5, a private or reserved address"},
		{"mixed.test", 80, "", ""},
		{"198.51.100.9", 22, "", ""},
		{"203.0.113.1", 80, "allow-list", "only by a CIDR entry"},
		{"127.0.0.1", 80, "never-reachable", "loopback"},
		{"[::1]", 80, "never-reachable", "loopback"},
		{"::ffff:127.0.0.1", 80, "never-reachable", "loopback"},
		{"64:ff9b::7f00:1", 80, "never-reachable", "loopback"},
		{"169.254.169.254", 80, "never-reachable", "metadata"},
		{"0.0.0.0", 80, "never-reachable", "unspecified"},
		{"224.0.0.1", 80, "never-reachable", "multicast"},
	} {
		addrs, r := p.decide(context.Background(), c.host, c.port)
		switch {
		case c.rule == "" && r != nil:
			t.Errorf("%s:%d refused: %v", c.host, c.port, r.reason)
		case c.rule == "" && len(addrs) == 0:
			t.Errorf("%s:%d: no address", c.host, c.port)
		case c.rule != "" && r == nil:
			t.Errorf("%s:%d allowed (%v), want refused by %s", c.host, c.port, addrs, c.rule)
		case c.rule != "" && (r.rule != c.rule || !strings.Contains(r.reason, c.reason)):
			t.Errorf("%s:%d refused by %s: %q; want %s: %q", c.host, c.port, r.rule, r.reason, c.rule, c.reason)
		}
		if c.host == "mixed.test" && (len(addrs) != 1 || addrs[0].Addr().String() != "198.51.100.8") {
			t.Errorf("mixed.test: dial %v, want only its public address", addrs)
		}
	}
	if own != "" {
		if _, r := p.decide(context.Background(), "self.test", 80); r == nil || !strings.Contains(r.reason, "the executor's own host") {
			t.Errorf("a name resolving to the host's own %s: %+v", own, r)
		}
	} else {
		t.Log("no non-loopback address here: the own-address case is covered by loopback only")
	}
	// The Control hook refuses the connect itself, whatever decided before it.
	for _, ap := range []string{"127.0.0.1:1", "169.254.169.254:80", "172.16.0.5:80"} {
		c, err := p.dialChecked(context.Background(), netip.MustParseAddrPort(ap))
		var r *refusal
		if err == nil {
			c.Close()
		}
		if !errorsAs(err, &r) {
			t.Errorf("dial %s: %v, want refused by the Control hook", ap, err)
		}
	}
}

func errorsAs(err error, r **refusal) bool {
	for err != nil {
		if x, ok := err.(*refusal); ok {
			*r = x
			return true
		}
		u, ok := err.(interface{ Unwrap() error })
		if !ok {
			return false
		}
		err = u.Unwrap()
	}
	return false
}

// testProxy serves a proxy on loopback whose dialer reaches upstream (an httptest server on loopback, which the
// real dialer refuses) once every check passed for the names of the hosts file.
func testProxy(t *testing.T, allow string, upstream map[string]string) (*Proxy, string) {
	t.Helper()
	a, err := ParseAllowList(allow)
	if err != nil {
		t.Fatal(err)
	}
	p, err := New(Config{Allow: a, Resolver: hostsFile(t, "198.51.100.7 ok.test other.test", "127.0.0.1 loop.test"), IdleTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	p.dial = func(ctx context.Context, ap netip.AddrPort) (net.Conn, error) {
		to := upstream[ap.String()]
		if to == "" {
			t.Errorf("dial %s: no upstream for it", ap)
			return nil, io.EOF
		}
		return (&net.Dialer{}).DialContext(ctx, "tcp", to)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go p.Serve(ln)
	t.Cleanup(func() { p.Close() })
	return p, ln.Addr().String()
}

func TestProxyForwardsAndTunnels(t *testing.T) {
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Proxy-Authorization") != "" {
			t.Error("the proxy's credentials reached the upstream")
		}
		io.WriteString(w, "plain "+r.URL.Path)
	}))
	defer plain.Close()
	tlsSrv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "secure "+r.URL.Path) }))
	defer tlsSrv.Close()
	p, addr := testProxy(t, "ok.test,198.51.100.0/24", map[string]string{
		"198.51.100.7:80": plain.Listener.Addr().String(), "198.51.100.7:443": tlsSrv.Listener.Addr().String()})
	s := p.Begin()
	pu, _ := url.Parse(s.ProxyURL(addr))
	pool := x509.NewCertPool()
	pool.AddCert(tlsSrv.Certificate())
	client := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(pu), TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: "example.com"}}}
	get := func(u string) (int, string) {
		resp, err := client.Get(u)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get("http://ok.test/a"); code != 200 || body != "plain /a" {
		t.Fatalf("plain HTTP: %d %q", code, body)
	}
	if code, body := get("http://ok.test/b"); code != 200 || body != "plain /b" {
		t.Fatalf("plain HTTP, kept connection: %d %q", code, body)
	}
	if code, body := get("https://ok.test/c"); code != 200 || body != "secure /c" {
		t.Fatalf("CONNECT: %d %q", code, body)
	}
	code, body := get("http://other.test/")
	if code != 403 || !strings.Contains(body, "refused other.test:80") || !strings.Contains(body, "-net-allow") || !strings.Contains(body, "rule: allow-list") {
		t.Fatalf("a host not on the list: %d %q", code, body)
	}
	if code, body := get("https://loop.test/"); code != 0 || !strings.Contains(body, "Forbidden") && !strings.Contains(body, "Refused") {
		t.Fatalf("CONNECT to a name resolving to loopback: %d %q", code, body)
	}
	u := s.End()
	if strings.Join(u.Denied, " ") != "other.test:80 loop.test:443" {
		t.Errorf("denied %v", u.Denied)
	}
	if len(u.Hosts) != 2 || u.Hosts[0].Host != "ok.test:80" || u.Hosts[0].BytesReceived == 0 || u.Hosts[1].Host != "ok.test:443" || u.Hosts[1].BytesSent == 0 {
		t.Errorf("hosts %+v", u.Hosts)
	}
	// The session ended: its credentials are refused now.
	client.CloseIdleConnections()
	if code, _ := get("http://ok.test/a"); code != http.StatusProxyAuthRequired {
		t.Errorf("an ended session's credentials: %d, want 407", code)
	}
}

func TestEndClosesTunnels(t *testing.T) {
	up, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer up.Close()
	go func() {
		for {
			c, err := up.Accept()
			if err != nil {
				return
			}
			go io.Copy(c, c)
		}
	}()
	p, addr := testProxy(t, "ok.test:7", map[string]string{"198.51.100.7:7": up.Addr().String()})
	p.cfg.Allow.rules = append(p.cfg.Allow.rules, Rule{kind: ruleCIDR, prefix: netip.MustParsePrefix("198.51.100.0/24"), text: "198.51.100.0/24"})
	s := p.Begin()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	pu, _ := url.Parse(s.ProxyURL(addr))
	pw, _ := pu.User.Password()
	req, _ := http.NewRequest(http.MethodConnect, "", nil)
	req.Host = "ok.test:7"
	req.SetBasicAuth(pu.User.Username(), pw)
	req.Header["Proxy-Authorization"] = req.Header["Authorization"]
	delete(req.Header, "Authorization")
	if err := req.Write(c); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4096)
	n, _ := c.Read(buf)
	if !strings.HasPrefix(string(buf[:n]), "HTTP/1.1 200") {
		t.Fatalf("CONNECT: %q", buf[:n])
	}
	io.WriteString(c, "echo")
	if n, _ := io.ReadAtLeast(c, buf, 4); string(buf[:n]) != "echo" {
		t.Fatalf("tunnel: %q", buf[:n])
	}
	s.End()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Read(buf); err == nil || strings.Contains(err.Error(), "timeout") {
		t.Fatalf("the tunnel outlived its command's session: %v", err)
	}
}

func TestLimits(t *testing.T) {
	a, _ := ParseAllowList("ok.test")
	if _, err := New(Config{Allow: a, MaxConns: 2, MaxConnsPerCommand: 3}); err == nil || !strings.Contains(err.Error(), "-net-max-conns-per-command") {
		t.Errorf("per-command above total: %v", err)
	}
	if _, err := New(Config{}); err == nil || !strings.Contains(err.Error(), "empty") {
		t.Errorf("empty list: %v", err)
	}
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(make([]byte, 64<<10)) }))
	defer up.Close()
	p, addr := testProxy(t, "ok.test,198.51.100.0/24", map[string]string{"198.51.100.7:80": up.Listener.Addr().String()})
	p.cfg.MaxBytesPerCommand = 100 << 10
	s := p.Begin()
	pu, _ := url.Parse(s.ProxyURL(addr))
	client := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(pu)}}
	var failed bool
	for range 4 {
		resp, err := client.Get("http://ok.test/")
		if err != nil {
			failed = true
			break
		}
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err != nil {
			failed = true
			break
		}
	}
	u := s.End()
	if !failed || len(u.Denied) != 1 || u.Denied[0] != "ok.test:80" {
		t.Errorf("past the byte limit: failed %v, denied %v", failed, u.Denied)
	}
}

func TestConnectionLimitsAndLog(t *testing.T) {
	up, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer up.Close()
	go func() {
		for {
			c, err := up.Accept()
			if err != nil {
				return
			}
			go io.Copy(c, c)
		}
	}()
	var logs safeBuf
	a, _ := ParseAllowList("ok.test:7,198.51.100.0/24")
	p, err := New(Config{Allow: a, Resolver: hostsFile(t, "198.51.100.7 ok.test"), MaxConns: 3, MaxConnsPerCommand: 2,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	p.dial = func(ctx context.Context, ap netip.AddrPort) (net.Conn, error) {
		return net.Dial("tcp", up.Addr().String())
	}
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	go p.Serve(ln)
	defer p.Close()
	connect := func(s *Session) (net.Conn, string) {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		auth := base64.StdEncoding.EncodeToString([]byte(s.id + ":" + s.token))
		fmt.Fprintf(c, "CONNECT ok.test:7 HTTP/1.1\r\nHost: ok.test:7\r\nProxy-Authorization: Basic %s\r\n\r\n", auth)
		buf := make([]byte, 4096)
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		n, _ := c.Read(buf)
		return c, string(buf[:n])
	}
	s1, s2 := p.Begin(), p.Begin()
	var open []net.Conn
	for i, want := range []string{"200", "200", "503"} {
		c, head := connect(s1)
		open = append(open, c)
		if !strings.Contains(strings.SplitN(head, "\n", 2)[0], want) {
			t.Errorf("command 1, connection %d: %q, want %s", i+1, head, want)
		}
		if want == "503" && !strings.Contains(head, "-net-max-conns-per-command") {
			t.Errorf("the per-command refusal does not name its flag: %q", head)
		}
	}
	// The refused connection counts until the proxy has closed it.
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		p.mu.Lock()
		n := p.conns
		p.mu.Unlock()
		if n == 2 || time.Now().After(deadline) {
			break
		}
	}
	c, head := connect(s2) // the third of the executor's three
	open = append(open, c)
	if !strings.Contains(head, "200") {
		t.Errorf("command 2's first connection: %q", head)
	}
	c, head = connect(s2)
	open = append(open, c)
	if !strings.Contains(head, "503") || !strings.Contains(head, "-net-max-conns") {
		t.Errorf("past the executor's total: %q", head)
	}
	for _, c := range open {
		c.Close()
	}
	s1.End()
	s2.End()
	if !strings.Contains(logs.String(), "egress refused") || !strings.Contains(logs.String(), "rule=limit") {
		t.Errorf("no log line for the refusals:\n%s", logs.String())
	}
}

type safeBuf struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *safeBuf) Write(p []byte) (int, error) { s.mu.Lock(); defer s.mu.Unlock(); return s.b.Write(p) }
func (s *safeBuf) String() string              { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }
func (s *safeBuf) Reset()                      { s.mu.Lock(); defer s.mu.Unlock(); s.b.Reset() }

func TestParseSecret(t *testing.T) {
	t.Setenv("EGRESS_TEST_TOKEN", "s3cr3t-value")
	f := filepath.Join(t.TempDir(), "tok")
	os.WriteFile(f, []byte("file-value\n"), 0o600)
	s, err := ParseSecret("GH_TOKEN=env:EGRESS_TEST_TOKEN@GitHub.com,api.github.com")
	if err != nil || s.value != "s3cr3t-value" || strings.Join(s.Hosts, ",") != "github.com,api.github.com" {
		t.Fatalf("%+v %v", s, err)
	}
	if !regexp.MustCompile(`^goalbox_secret_[0-9a-f]{32}$`).MatchString(s.Placeholder()) {
		t.Errorf("placeholder %q: letters, digits and _ only", s.Placeholder())
	}
	if s, err := ParseSecret("T=file:" + f + "@h.test"); err != nil || s.value != "file-value" {
		t.Errorf("file source: %+v %v", s, err)
	}
	for spec, want := range map[string]string{
		"T=hunter2@h.test":                 "a literal value is refused",
		"T=env:NOPE_NOT_SET@h.test":        "has no NOPE_NOT_SET",
		"T=env:EGRESS_TEST_TOKEN":          "no @HOST",
		"1T=env:X@h.test":                  "variable name",
		"T=env:EGRESS_TEST_TOKEN@*.h.test": "exact host names",
	} {
		if _, err := ParseSecret(spec); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", spec, err, want)
		}
	}
	a, _ := ParseAllowList("other.test")
	if _, err := New(Config{Allow: a, Secrets: []Secret{s}}); err == nil || !strings.Contains(err.Error(), "does not allow") {
		t.Errorf("a secret for a host not allowed: %v", err)
	}
}

// testCA makes a CA and a server certificate for names, signed by it.
func testCA(t *testing.T, names ...string) (caPEM []byte, leaf tls.Certificate, pool *x509.CertPool) {
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "egress test CA"}, NotBefore: time.Now().Add(-time.Hour),
		NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	der, err := x509.CreateCertificate(rand.Reader, &x509.Certificate{SerialNumber: big.NewInt(2), DNSNames: names, NotBefore: time.Now().Add(-time.Hour),
		NotAfter: time.Now().Add(time.Hour), ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, KeyUsage: x509.KeyUsageDigitalSignature}, caCert, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	pool = x509.NewCertPool()
	pool.AddCert(caCert)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, pool
}

// TestSecretsReplacedOnlyForTheirHosts: the proxy terminates TLS for a secret's host, puts the real value in place
// of the placeholder (a header, and inside Basic credentials), and refuses the placeholder over plain HTTP and to
// another intercepted host. Positive control: the upstream sees the real value when the placeholder went to its host.
func TestSecretsReplacedOnlyForTheirHosts(t *testing.T) {
	t.Setenv("EGRESS_TEST_TOKEN", "real-token-123")
	t.Setenv("EGRESS_TEST_OTHER", "other-token-456")
	tok, _ := ParseSecret("TOKEN=env:EGRESS_TEST_TOKEN@ok.test")
	other, _ := ParseSecret("OTHER=env:EGRESS_TEST_OTHER@other.test")
	upCA, upCert, _ := testCA(t, "ok.test", "other.test")
	var got safeBuf
	upTLS := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, pass, _ := r.BasicAuth()
		fmt.Fprintf(&got, "%s|%s|%s:%s\n", r.Host, r.Header.Get("X-Token"), user, pass)
		io.WriteString(w, "ok")
	}))
	upTLS.TLS = &tls.Config{Certificates: []tls.Certificate{upCert}}
	upTLS.StartTLS()
	defer upTLS.Close()
	upPlain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprintf(&got, "plain|%s\n", r.Header.Get("X-Token")) }))
	defer upPlain.Close()
	a, _ := ParseAllowList("ok.test,other.test,198.51.100.0/24")
	var logs safeBuf
	p, err := New(Config{Allow: a, Resolver: hostsFile(t, "198.51.100.7 ok.test other.test"), Secrets: []Secret{tok, other},
		UpstreamCA: upCA, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	p.dial = func(ctx context.Context, ap netip.AddrPort) (net.Conn, error) {
		if ap.Port() == 443 {
			return net.Dial("tcp", upTLS.Listener.Addr().String())
		}
		return net.Dial("tcp", upPlain.Listener.Addr().String())
	}
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	go p.Serve(ln)
	defer p.Close()
	s := p.Begin()
	pu, _ := url.Parse(s.ProxyURL(ln.Addr().String()))
	trust := x509.NewCertPool()
	trust.AppendCertsFromPEM(p.CAPEM())
	client := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(pu), TLSClientConfig: &tls.Config{RootCAs: trust}}}
	do := func(u string, basicUser, token string) (int, string) {
		req, _ := http.NewRequest("GET", u, nil)
		req.Header.Set("X-Token", token)
		if basicUser != "" {
			req.SetBasicAuth(basicUser, token)
		}
		resp, err := client.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := do("https://ok.test/", "git", tok.Placeholder()); code != 200 || body != "ok" {
		t.Fatalf("a placeholder to its host: %d %q", code, body)
	}
	if want := "ok.test|real-token-123|git:real-token-123\n"; got.String() != want {
		t.Errorf("the upstream saw %q, want %q", got.String(), want)
	}
	code, body := do("https://other.test/", "", tok.Placeholder())
	if code != 403 || !strings.Contains(body, "secret TOKEN") {
		t.Errorf("TOKEN's placeholder to other.test: %d %q", code, body)
	}
	code, body = do("http://ok.test/", "", tok.Placeholder())
	if code != 403 || !strings.Contains(body, "only ever sent over HTTPS") {
		t.Errorf("the placeholder over plain HTTP: %d %q", code, body)
	}
	if strings.Contains(got.String(), "plain|") || strings.Count(got.String(), "\n") != 1 {
		t.Errorf("a refused request reached an upstream: %q", got.String())
	}
	u := s.End()
	if !slices.Equal(u.Denied, []string{"other.test:443", "ok.test:80"}) {
		t.Errorf("denied %v", u.Denied)
	}
	if strings.Contains(logs.String(), "real-token-123") || strings.Contains(logs.String(), "other-token-456") {
		t.Errorf("a real value in the log:\n%s", logs.String())
	}
	// The proxy's CA vouches for the secrets' hosts only.
	block, _ := pem.Decode(p.CAPEM())
	ca, _ := x509.ParseCertificate(block.Bytes)
	if !slices.Equal(ca.PermittedDNSDomains, []string{"ok.test", "other.test"}) || !ca.PermittedDNSDomainsCritical {
		t.Errorf("the CA's name constraints: %v", ca.PermittedDNSDomains)
	}
}

// TestExpectContinue: a client waiting for "100 Continue" before its body is answered at once, so an upload does
// not stall (curl and git would wait a second each time).
func TestExpectContinue(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.Copy(w, r.Body) }))
	defer up.Close()
	p, addr := testProxy(t, "ok.test,198.51.100.0/24", map[string]string{"198.51.100.7:80": up.Listener.Addr().String()})
	s := p.Begin()
	defer s.End()
	pu, _ := url.Parse(s.ProxyURL(addr))
	client := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(pu), ExpectContinueTimeout: 5 * time.Second}}
	req, _ := http.NewRequest("POST", "http://ok.test/", strings.NewReader("uploaded body"))
	req.Header.Set("Expect", "100-continue")
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "uploaded body" || time.Since(start) > 2*time.Second {
		t.Errorf("upload with Expect: 100-continue: %q after %v", b, time.Since(start))
	}
}

// TestIdleTunnelCloses: a tunnel on which nothing moves for the idle timeout is closed; one that keeps moving is
// not (the positive control).
func TestIdleTunnelCloses(t *testing.T) {
	up, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer up.Close()
	go func() {
		for {
			c, err := up.Accept()
			if err != nil {
				return
			}
			go io.Copy(c, c)
		}
	}()
	a, _ := ParseAllowList("ok.test:7,198.51.100.0/24")
	p, err := New(Config{Allow: a, Resolver: hostsFile(t, "198.51.100.7 ok.test"), IdleTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	p.dial = func(ctx context.Context, ap netip.AddrPort) (net.Conn, error) {
		return net.Dial("tcp", up.Addr().String())
	}
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	go p.Serve(ln)
	defer p.Close()
	open := func() net.Conn {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(c, "CONNECT ok.test:7 HTTP/1.1\r\nHost: ok.test:7\r\n\r\n")
		buf := make([]byte, 64)
		if n, _ := c.Read(buf); !strings.HasPrefix(string(buf[:n]), "HTTP/1.1 200") {
			t.Fatalf("CONNECT: %q", buf[:n])
		}
		return c
	}
	busy, idle := open(), open()
	defer busy.Close()
	defer idle.Close()
	buf := make([]byte, 8)
	// Traffic every 100 ms for 3 s against a 2 s idle timeout: twenty times the gap, so that a loaded machine's
	// scheduling (a CI run on 2 busy cores once stretched a half-second gap past a 1 s timeout) cannot make it idle.
	for start := time.Now(); time.Since(start) < 3*time.Second; {
		io.WriteString(busy, "ping")
		_ = busy.SetReadDeadline(time.Now().Add(2 * time.Second))
		if _, err := io.ReadFull(busy, buf[:4]); err != nil {
			t.Fatalf("the busy tunnel was closed: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// By now the idle tunnel has had no traffic for 3 s; it must be closed within a few more.
	_ = idle.SetReadDeadline(time.Now().Add(8 * time.Second))
	if _, err := idle.Read(buf); err == nil || strings.Contains(err.Error(), "timeout") {
		t.Errorf("the idle tunnel is still open 11 s after its last byte with a 2 s idle timeout: %v", err)
	}
}
