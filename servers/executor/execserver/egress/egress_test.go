package egress

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
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
