package egress

// Fuzz targets for what the proxy parses from a command: the request line and headers (through a real proxy on
// loopback, plain HTTP and CONNECT), a CONNECT target, the names a decrypted request must agree on (Host and SNI),
// the body search for a secret's value, and the value's replacement in a secret's host's responses. Each checks the proxy's promises, not only that it does not panic:
//
//	go test ./servers/executor/execserver/egress -run '^$' -fuzz '^FuzzProxyRequest$'  -fuzztime 60s
//	go test ./servers/executor/execserver/egress -run '^$' -fuzz '^FuzzConnectTarget$' -fuzztime 60s
//	go test ./servers/executor/execserver/egress -run '^$' -fuzz '^FuzzBinding$'       -fuzztime 60s
//	go test ./servers/executor/execserver/egress -run '^$' -fuzz '^FuzzLeakScanner$'   -fuzztime 60s
//	go test ./servers/executor/execserver/egress -run '^$' -fuzz '^FuzzValueHider$'    -fuzztime 60s
//
// What a run finds is kept as a seed in testdata/fuzz/<target>/.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

const fuzzValue = "fuzz-secret-value-0c7d"

// fuzzProxy is a proxy allowing ok.test (198.51.100.7) on 80 and 443, secret.test on 443 with a secret, and
// 198.51.100.0/24 by CIDR; its dialer records every address and hands back an upstream that reads HTTP requests and
// answers each, recording what it received.
type fuzzProxy struct {
	p    *Proxy
	addr string
	tok  Secret
	mu   sync.Mutex
	seen bytes.Buffer // every byte upstreams received
	bad  []string     // dials to addresses the rules refuse
}

func newFuzzProxy(f *testing.F) *fuzzProxy {
	f.Setenv("EGRESS_FUZZ_TOKEN", fuzzValue)
	tok, err := ParseSecret("TOKEN=env:EGRESS_FUZZ_TOKEN@secret.test")
	if err != nil {
		f.Fatal(err)
	}
	a, _ := ParseAllowList("ok.test,secret.test:443,198.51.100.0/24")
	dir := f.TempDir()
	hosts := HostsFile(dir + "/hosts")
	if err := os.WriteFile(string(hosts), []byte("198.51.100.7 ok.test secret.test\n127.0.0.1 loop.test\n"), 0o644); err != nil {
		f.Fatal(err)
	}
	p, err := New(Config{Allow: a, Resolver: hosts, Secrets: []Secret{tok}, IdleTimeout: time.Second, HeadTimeout: time.Second})
	if err != nil {
		f.Fatal(err)
	}
	fp := &fuzzProxy{p: p, tok: tok}
	// The upstream is on loopback TCP, not a net.Pipe, so that a client's half-close reaches it through a tunnel and
	// every input ends at once rather than at the idle timeout.
	up, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { up.Close() })
	go func() {
		for {
			c, err := up.Accept()
			if err != nil {
				return
			}
			go fp.upstream(c)
		}
	}()
	p.dial = func(ctx context.Context, ap netip.AddrPort) (net.Conn, error) {
		if r := p.checkAddr(ap.Addr(), nil); r != nil || ap.Addr() != netip.MustParseAddr("198.51.100.7") {
			fp.mu.Lock()
			fp.bad = append(fp.bad, ap.String())
			fp.mu.Unlock()
			return nil, io.EOF
		}
		return (&net.Dialer{}).DialContext(ctx, "tcp", up.Addr().String())
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		f.Fatal(err)
	}
	go p.Serve(ln)
	f.Cleanup(func() { p.Close() })
	fp.addr = ln.Addr().String()
	return fp
}

// upstream answers every request on c with a short 200, and keeps every byte it read.
func (fp *fuzzProxy) upstream(c net.Conn) {
	defer c.Close()
	_ = c.(*net.TCPConn).SetLinger(0)
	r := bufio.NewReader(io.TeeReader(c, writerFunc(func(b []byte) (int, error) {
		fp.mu.Lock()
		defer fp.mu.Unlock()
		return fp.seen.Write(b)
	})))
	for {
		req, err := http.ReadRequest(r)
		if err != nil {
			_, _ = io.Copy(io.Discard, r)
			return
		}
		_, _ = io.Copy(io.Discard, req.Body)
		if _, err := io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"); err != nil {
			return
		}
	}
}

type writerFunc func([]byte) (int, error)

func (w writerFunc) Write(b []byte) (int, error) { return w(b) }

// exchange sends raw to the proxy as one client connection, half-closes it, and returns what came back.
func (fp *fuzzProxy) exchange(t *testing.T, raw []byte) []byte {
	var c net.Conn
	var err error
	for try := 0; ; try++ {
		// Thousands of connections a second can run out of ephemeral ports for a moment: that is the harness's.
		if c, err = net.Dial("tcp", fp.addr); err == nil || try == 50 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.(*net.TCPConn).SetLinger(0) // no TIME_WAIT left behind per input
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	go func() {
		_, _ = c.Write(raw)
		_ = c.(*net.TCPConn).CloseWrite()
	}()
	out, _ := io.ReadAll(c)
	return out
}

// FuzzProxyRequest sends any bytes as a client connection: request lines, headers, several requests in a row,
// CONNECT. The proxy must answer with HTTP or nothing, dial only addresses the rules allow, and never let the
// secret's real value reach an upstream over plain HTTP (the only way any can: nothing here completes TLS).
func FuzzProxyRequest(f *testing.F) {
	fp := newFuzzProxy(f)
	auth := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	for _, seed := range []string{
		"GET http://ok.test/ HTTP/1.1\r\nHost: ok.test\r\n\r\n",
		"GET http://ok.test/a HTTP/1.1\r\nHost: ok.test\r\n\r\nGET http://ok.test/b HTTP/1.1\r\nHost: ok.test\r\nConnection: close\r\n\r\n",
		"POST http://ok.test/ HTTP/1.1\r\nHost: ok.test\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\nhello",
		"POST http://ok.test/ HTTP/1.1\r\nHost: ok.test\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
		"GET http://ok.test/?t=" + fuzzValue + " HTTP/1.1\r\nHost: ok.test\r\n\r\n",
		"GET http://ok.test/ HTTP/1.1\r\nHost: ok.test\r\nAuthorization: Basic " + auth("u:"+fuzzValue) + "\r\n\r\n",
		"POST http://ok.test/ HTTP/1.1\r\nHost: ok.test\r\nContent-Length: 27\r\n\r\nx=" + fuzzValue + "xx",
		"CONNECT ok.test:443 HTTP/1.1\r\nHost: ok.test:443\r\n\r\nGET / HTTP/1.1\r\n\r\n",
		"CONNECT secret.test:443 HTTP/1.1\r\n\r\n\x16\x03\x01\x00\x05hello",
		"CONNECT " + fuzzValue + ".ok.test:443 HTTP/1.1\r\n\r\n",
		"CONNECT [::1]:80 HTTP/1.1\r\n\r\n",
		"CONNECT loop.test:80 HTTP/1.1\r\n\r\n",
		"GET http://198.51.100.7:8080/ HTTP/1.1\r\nProxy-Authorization: Basic " + auth("c1:nope") + "\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: ok.test\r\n\r\n",
		"GET https://ok.test/ HTTP/1.1\r\n\r\n",
		"GET http://ok.test:99999/ HTTP/1.1\r\n\r\n",
		"GET http://[::ffff:127.0.0.1]/ HTTP/1.1\r\n\r\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		out := fp.exchange(t, raw)
		if len(out) > 0 && !bytes.HasPrefix(out, []byte("HTTP/1.")) {
			t.Fatalf("the proxy answered with something other than HTTP: %.200q", out)
		}
		fp.mu.Lock()
		defer fp.mu.Unlock()
		if len(fp.bad) > 0 {
			t.Fatalf("the proxy dialled addresses its rules refuse: %v", fp.bad)
		}
		if bytes.Contains(fp.seen.Bytes(), []byte(fuzzValue)) {
			t.Fatalf("the secret's real value reached an upstream over plain HTTP, for the input %.300q", raw)
		}
		fp.seen.Reset()
	})
}

// FuzzConnectTarget: whatever a CONNECT names, a target the proxy allows is a name an entry admits, on a port it
// opens, resolving to addresses the address rules let through, or an IP literal in a CIDR entry.
func FuzzConnectTarget(f *testing.F) {
	a, _ := ParseAllowList("ok.test,*.wild.test:8443,198.51.100.0/24,10.0.0.0/8")
	dir := f.TempDir()
	if err := os.WriteFile(dir+"/hosts", []byte("198.51.100.7 ok.test a.wild.test\n127.0.0.1 loop.wild.test\n10.1.2.3 ten.wild.test\n"), 0o644); err != nil {
		f.Fatal(err)
	}
	p, err := New(Config{Allow: a, Resolver: HostsFile(dir + "/hosts")})
	if err != nil {
		f.Fatal(err)
	}
	for _, seed := range []string{"ok.test:443", "OK.TEST.:80", "a.wild.test:8443", "loop.wild.test:8443", "[::1]:80", "198.51.100.9:22",
		"10.1.2.3:5432", "ok.test", "ok.test:", ":443", "[fe80::1%25eth0]:80", "0x7f.1:80", "ok.test:0443", "ok.test:+443", "[::ffff:198.51.100.7]:80"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, target string) {
		req, err := http.ReadRequest(bufio.NewReader(strings.NewReader("CONNECT " + target + " HTTP/1.1\r\nHost: " + target + "\r\n\r\n")))
		if err != nil {
			return
		}
		host, port := targetOf(req)
		addrs, r := p.decide(context.Background(), host, port)
		if r != nil {
			if len(addrs) > 0 {
				t.Fatalf("%q: refused (%s) with addresses %v", target, r.reason, addrs)
			}
			return
		}
		name := strings.ToLower(strings.TrimSuffix(strings.Trim(host, "[]"), "."))
		if ip, err := netip.ParseAddr(name); err == nil {
			if _, ok := a.matchAddr(ip.Unmap()); !ok {
				t.Fatalf("%q: the address %s allowed without a CIDR entry", target, ip)
			}
		} else if _, ok, _ := a.matchName(name, port); !ok {
			t.Fatalf("%q: the name %q allowed on port %d without an entry", target, name, port)
		}
		for _, ap := range addrs {
			if int(ap.Port()) != port || p.checkAddr(ap.Addr(), hostAddrs()) != nil {
				t.Fatalf("%q: allowed at %v, which the address rules refuse (port %d)", target, ap, port)
			}
		}
	})
}

// FuzzBinding: a request in a tunnel to secret.test:443 passes only when its Host names secret.test (port 443 or
// none) and its TLS server name is secret.test or none; a request without Host gets the tunnel's.
func FuzzBinding(f *testing.F) {
	for _, seed := range [][2]string{{"secret.test", "secret.test"}, {"Secret.Test.:443", ""}, {"tenant.test", "secret.test"},
		{"secret.test", "tenant.test"}, {"secret.test:8443", ""}, {"", ""}, {"[::1]", ""}, {"secret.test:", "SECRET.TEST."}, {"secret.test:443:443", ""}} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, hostHeader, sni string) {
		req := &http.Request{Host: hostHeader}
		why := bindingMismatch("secret.test", 443, sni, req)
		if why != "" {
			return
		}
		if sni != "" && canonicalHost(sni) != "secret.test" {
			t.Fatalf("SNI %q passed for secret.test", sni)
		}
		h, port, ok := splitHostHeader(req.Host)
		if !ok || h != "secret.test" || port != 0 && port != 443 {
			t.Fatalf("Host %q (now %q) passed for secret.test:443", hostHeader, req.Host)
		}
		// What the upstream gets: net/http writes req.Host as the Host header; it must name the same host.
		var buf bytes.Buffer
		req.Method, req.URL, req.Header = "GET", &url.URL{Path: "/"}, http.Header{}
		if err := req.Write(&buf); err == nil {
			got, err := http.ReadRequest(bufio.NewReader(&buf))
			if err != nil {
				t.Fatalf("Host %q: the request written upstream does not parse: %v", req.Host, err)
			}
			if h, _, ok := splitHostHeader(got.Host); !ok || h != "secret.test" {
				t.Fatalf("Host %q passed, but the upstream reads Host %q", hostHeader, got.Host)
			}
		}
	})
}

// FuzzLeakScanner: whatever the body and however it arrives in pieces, the scanner hands on the body unchanged when
// it does not hold the value, and when it does, stops before handing on any byte of the value.
func FuzzLeakScanner(f *testing.F) {
	sec := &Secret{Name: "TOKEN", value: fuzzValue}
	f.Add([]byte("no secret here"), uint8(3))
	f.Add([]byte("xx"+fuzzValue+"yy"), uint8(1))
	f.Add([]byte(fuzzValue[:10]+"|"+fuzzValue), uint8(7))
	f.Add(bytes.Repeat([]byte("a"), 10000), uint8(200))
	f.Fuzz(func(t *testing.T, body []byte, piece uint8) {
		cut := false
		l := newLeakScanner(&chunkReader{b: body, n: int(piece%64) + 1}, []*Secret{sec}, func(*Secret) { cut = true }, nil)
		l.chunk = make([]byte, int(piece%32)+1) // small reads exercise every split of the value
		got, err := io.ReadAll(l)
		i := bytes.Index(body, []byte(fuzzValue))
		if i < 0 {
			if err != nil || cut || !bytes.Equal(got, body) {
				t.Fatalf("a body without the value: err %v, cut %v, %d of %d bytes handed on", err, cut, len(got), len(body))
			}
			return
		}
		if err != errLeak || !cut || len(got) > i {
			t.Fatalf("the value at %d: err %v, cut %v, %d bytes handed on", i, err, cut, len(got))
		}
	})
}

// FuzzValueHider: whatever the body and however it arrives in pieces, what the command reads is the body with every
// real value replaced by the placeholder, and no value.
func FuzzValueHider(f *testing.F) {
	sec := Secret{Name: "TOKEN", value: fuzzValue, placeholder: "goalbox_secret_0123456789abcdef0123456789abcdef"}
	f.Add([]byte("no secret here"), uint8(3))
	f.Add([]byte("xx"+fuzzValue+"yy"+fuzzValue), uint8(1))
	f.Add([]byte(fuzzValue[:10]+"|"+fuzzValue+fuzzValue[:5]), uint8(7))
	f.Add(bytes.Repeat([]byte("a"), 10000), uint8(200))
	f.Fuzz(func(t *testing.T, body []byte, piece uint8) {
		h := newValueHider(&chunkReader{b: body, n: int(piece%64) + 1}, []Secret{sec})
		h.chunk = make([]byte, int(piece%32)+1) // small reads exercise every split of the value
		got, err := io.ReadAll(h)
		if want := bytes.ReplaceAll(body, []byte(fuzzValue), []byte(sec.placeholder)); err != nil || !bytes.Equal(got, want) {
			t.Fatalf("err %v; read %d bytes, want %d with the value replaced", err, len(got), len(want))
		}
	})
}

// chunkReader reads b at most n bytes at a time.
type chunkReader struct {
	b []byte
	n int
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if len(c.b) == 0 {
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), c.n)], c.b)
	c.b = c.b[n:]
	return n, nil
}
