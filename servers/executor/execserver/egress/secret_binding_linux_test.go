//go:build linux

package egress

import (
	"compress/gzip"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goalbox/goalbox/servers/executor/execserver/egress/egresstest"
)

// secretFixture is a proxy with one secret, TOKEN for secret.test, in front of a real upstream in a network
// namespace of the test's own that serves three virtual hosts on one address, over HTTPS and plain HTTP, as a shared
// front (a CDN, a hosting platform) does: secret.test checks the token; tenant.test and allowed.test echo every
// request (headers and body) back, as a debugging endpoint or another tenant's site would. Only secret.test and
// allowed.test are on the allow-list.
type secretFixture struct {
	up    *egresstest.Upstream
	p     *Proxy
	addr  string
	tok   Secret
	real  string
	seen  *safeBuf // every request the upstream received: "host|Authorization|body"
	logs  *safeBuf
	trust *x509.CertPool
}

// secretFixtureValue is a value net/http's canonical form of a header name leaves as it is (as it does a lower-case
// hex token's), so that sent as a header's name it reaches the upstream whole where the search is off.
const secretFixtureValue = "Real-Secret-Value-5be1d09a"

func newSecretFixture(t *testing.T) *secretFixture {
	t.Helper()
	t.Setenv("EGRESS_FIXTURE_TOKEN", secretFixtureValue)
	up := egresstest.NewUpstream(t, "secret.test", "tenant.test", "allowed.test")
	f := &secretFixture{up: up, real: secretFixtureValue, seen: &safeBuf{}, logs: &safeBuf{}}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		host, _, ok := splitHostHeader(r.Host)
		if !ok {
			host = r.Host
		}
		auth := r.Header.Get("Authorization")
		// What the upstream received, decoded: every header's value (Basic credentials too), the path, the query and
		// the body (a long one shortened around the value, if it holds it).
		heads := []string{r.Method}
		for k, vs := range r.Header {
			heads = append(heads, k)
			heads = append(heads, vs...)
		}
		for k, vs := range r.Trailer { // read with the body
			heads = append(heads, k)
			heads = append(heads, vs...)
		}
		if _, pass, ok := r.BasicAuth(); ok {
			heads = append(heads, pass)
		}
		if i := strings.Index(string(body), f.real); len(body) > 200 && i >= 0 {
			body = fmt.Appendf(nil, "<%d bytes, %s at %d>", len(body), f.real, i)
		} else if len(body) > 200 {
			body = fmt.Appendf(nil, "<%d bytes, ending %q>", len(body), body[len(body)-40:])
		}
		fmt.Fprintf(f.seen, "%s|%s|%s?%s|%s\n", host, strings.Join(heads, ","), r.URL.Path, r.URL.RawQuery, body)
		switch host {
		case "secret.test":
			if auth != "Bearer "+f.real {
				http.Error(w, "secret.test: unauthorized", http.StatusUnauthorized)
				return
			}
			switch r.URL.Path {
			case "/echo": // an endpoint that hands the credential back, in a header and deep in a long body
				w.Header().Set("X-Echo", auth)
				fmt.Fprintf(w, "%s|%s|%s", strings.Repeat("x", 100000), auth, auth)
			case "/echo-gzip": // the same, compressed whatever the request asked for
				w.Header().Set("Content-Encoding", "gzip")
				zw := gzip.NewWriter(w)
				io.WriteString(zw, auth)
				zw.Close()
			default:
				io.WriteString(w, "secret.test: authorized\n")
			}
		default:
			fmt.Fprintf(w, "%s saw: %s %s\n", host, auth, body)
		}
	})
	up.Serve(t, 443, true, h)
	up.Serve(t, 80, false, h)
	hosts := filepath.Join(t.TempDir(), "hosts")
	os.WriteFile(hosts, []byte(up.IP+" secret.test tenant.test allowed.test\n"), 0o644)
	var err error
	if f.tok, err = ParseSecret("TOKEN=env:EGRESS_FIXTURE_TOKEN@secret.test"); err != nil {
		t.Fatal(err)
	}
	allow, _ := ParseAllowList("secret.test,allowed.test," + up.Subnet)
	f.p, err = New(Config{Allow: allow, Resolver: HostsFile(hosts), Secrets: []Secret{f.tok}, UpstreamCA: up.CAPEM,
		Logger: slog.New(slog.NewTextHandler(f.logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go f.p.Serve(ln)
	t.Cleanup(func() { f.p.Close() })
	f.addr = ln.Addr().String()
	// A command trusts the proxy's CA (for secret.test) and, through a plain tunnel, the upstream's (allowed.test).
	f.trust = x509.NewCertPool()
	f.trust.AppendCertsFromPEM(f.p.CAPEM())
	f.trust.AppendCertsFromPEM(up.CAPEM)
	return f
}

// client is an HTTP client of session s, as a command's would be; tlsConf, when given, replaces the default.
func (f *secretFixture) client(s *Session, tlsConf *tls.Config) *http.Client {
	pu, _ := url.Parse(s.ProxyURL(f.addr))
	if tlsConf == nil {
		tlsConf = &tls.Config{RootCAs: f.trust}
	}
	return &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(pu), TLSClientConfig: tlsConf, DisableKeepAlives: true}}
}

// do sends one request and returns the status and body (status 0 and the error when there is no response).
func do(c *http.Client, method, u, host string, header http.Header, body string) (int, string) {
	req, _ := http.NewRequest(method, u, strings.NewReader(body))
	if body == "" {
		req.Body = nil
	}
	if host != "" {
		req.Host = host
	}
	for k, vs := range header {
		if name, ok := strings.CutPrefix(k, "Trailer:"); ok { // sent after a chunked body
			req.Trailer, req.ContentLength, req.Body = http.Header{name: vs}, -1, io.NopCloser(strings.NewReader(body))
			continue
		}
		req.Header[k] = vs
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func bearer(v string) http.Header { return http.Header{"Authorization": {"Bearer " + v}} }

// TestSecretBoundToItsHost: the attack. A CONNECT to secret.test whose request says Host: tenant.test, or
// whose TLS hello names tenant.test, is refused with a 403 that says which name differs; the real value reaches
// no virtual host but secret.test. Positive controls: the upstream really serves tenant.test at secret.test's
// address and echoes what it is sent (asked from the host with the real value, it shows it), and a request
// that names secret.test everywhere is authorized with the real value.
func TestSecretBoundToItsHost(t *testing.T) {
	f := newSecretFixture(t)
	req, _ := http.NewRequest("GET", "https://secret.test/", nil)
	req.Host = "tenant.test"
	req.Header.Set("Authorization", "Bearer "+f.real)
	resp, err := f.up.HostClient(f.up.IP).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), "tenant.test saw: Bearer "+f.real) {
		t.Fatalf("control: tenant.test at secret.test's address does not echo what it is sent: %q", b)
	}
	f.seen.Reset()

	s := f.p.Begin()
	c := f.client(s, nil)
	if code, body := do(c, "GET", "https://secret.test/", "", bearer(f.tok.Placeholder()), ""); code != 200 || body != "secret.test: authorized\n" {
		t.Fatalf("control: the placeholder to secret.test: %d %q", code, body)
	}
	code, body := do(c, "GET", "https://secret.test/", "tenant.test", bearer(f.tok.Placeholder()), "")
	if code != 403 || !strings.Contains(body, `the request's Host "tenant.test" is not the CONNECT target secret.test`) || !strings.Contains(body, "rule: host-mismatch") {
		t.Errorf("Host: tenant.test in a tunnel to secret.test: %d %q", code, body)
	}
	code, body = do(c, "GET", "https://secret.test/", "secret.test:8443", bearer(f.tok.Placeholder()), "")
	if code != 403 || !strings.Contains(body, "names port 8443, the CONNECT target port 443") {
		t.Errorf("Host: secret.test:8443 in a tunnel to secret.test:443: %d %q", code, body)
	}
	// An attacker's client need not verify anything: it names tenant.test in its hello.
	sni := f.client(s, &tls.Config{ServerName: "tenant.test", InsecureSkipVerify: true})
	code, body = do(sni, "GET", "https://secret.test/", "", bearer(f.tok.Placeholder()), "")
	if code != 403 || !strings.Contains(body, `the TLS server name (SNI) "tenant.test" is not the CONNECT target secret.test`) {
		t.Errorf("SNI tenant.test in a tunnel to secret.test: %d %q", code, body)
	}
	u := s.End()
	if strings.Join(u.Denied, " ") != "secret.test:443" {
		t.Errorf("network_denied %v", u.Denied)
	}
	if got := f.seen.String(); strings.Contains(got, "tenant.test") || strings.Count(got, "\n") != 1 {
		t.Errorf("a refused request reached the upstream: %q", got)
	}
}

func TestSplitHostHeader(t *testing.T) {
	for v, want := range map[string]string{
		"Secret.Test.": "secret.test 0", "secret.test:443": "secret.test 443", "[::1]": "::1 0", "[::1]:8080": "::1 8080",
		"": "bad", "h:": "bad", "h:0": "bad", "h:70000": "bad", "h:x": "bad", "::1": "bad", "[::1": "bad", "a:b:c": "bad", "[a]]": "bad",
	} {
		h, p, ok := splitHostHeader(v)
		got := fmt.Sprintf("%s %d", h, p)
		if !ok {
			got = "bad"
		}
		if got != want {
			t.Errorf("splitHostHeader(%q) = %s, want %s", v, got, want)
		}
	}
}
