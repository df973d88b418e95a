package egress

// Secrets (-secret NAME=SOURCE@HOST): credentials that never enter the sandbox. A command sees NAME set to a
// placeholder, useless anywhere else; the proxy puts the real value in its place only in HTTPS requests to the
// secret's hosts. To see inside those requests it terminates TLS for those hosts alone, with a certificate made by a
// CA of this proxy (made at start, kept in memory, trusted inside the sandbox through the usual variables), and
// speaks TLS again to the real upstream, verified against the host's roots and -upstream-ca. Every other host stays
// a plain tunnel.
//
// Where the placeholder is replaced: every request header's value, and inside Basic credentials (git and pip put a
// URL's user-info there, base64-encoded). A request that carries a secret's placeholder anywhere the proxy can see it
// — plain HTTP, or an intercepted host the secret is not for — is refused with a 403 naming the secret. The real
// value is never logged, never in a result, never in /healthz.

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
)

// Secret is one validated -secret.
type Secret struct {
	Name        string   // the variable commands see
	Source      string   // env:VAR or file:PATH, for /healthz (never the value)
	Hosts       []string // exact host names, lower case
	value       string
	placeholder string
}

// secretName is a portable environment variable name.
var secretName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// ParseSecret parses NAME=SOURCE@HOST[,HOST...] and reads the value from SOURCE: env:VAR (the server's environment)
// or file:PATH (trailing newlines dropped). A literal value is refused: it would sit in the server's command line,
// which every user of the machine can read.
func ParseSecret(spec string) (Secret, error) {
	bad := func(format string, a ...any) (Secret, error) {
		return Secret{}, fmt.Errorf("-secret %q: %s; the form is NAME=SOURCE@HOST[,HOST...] with SOURCE env:VAR or file:PATH", spec, fmt.Sprintf(format, a...))
	}
	name, rest, ok := strings.Cut(spec, "=")
	if !ok || !secretName.MatchString(name) {
		return bad("NAME must be a variable name (letters, digits, _)")
	}
	i := strings.LastIndexByte(rest, '@')
	if i < 0 {
		return bad("no @HOST: a secret is only ever sent to the hosts it names")
	}
	source, hostList := rest[:i], rest[i+1:]
	var hosts []string
	for _, h := range strings.Split(hostList, ",") {
		h = strings.ToLower(strings.TrimSuffix(strings.TrimSpace(h), "."))
		if err := checkName(h); err != nil {
			return bad("host %q: %v (exact host names only, no wildcards or ports)", h, err)
		}
		hosts = append(hosts, h)
	}
	var value string
	switch {
	case strings.HasPrefix(source, "env:"):
		v, ok := os.LookupEnv(source[4:])
		if !ok || v == "" {
			return bad("the server's environment has no %s", source[4:])
		}
		value = v
	case strings.HasPrefix(source, "file:"):
		b, err := os.ReadFile(source[5:])
		if err != nil {
			return bad("%v", err)
		}
		value = strings.TrimRight(string(b), "\r\n")
		if value == "" {
			return bad("%s is empty", source[5:])
		}
	default:
		return bad("SOURCE must be env:VAR or file:PATH; a literal value is refused (it would show in the server's command line)")
	}
	if strings.ContainsAny(value, "\r\n") {
		return bad("the value holds a line break, which no header can carry")
	}
	var r [16]byte
	_, _ = rand.Read(r[:])
	// Letters, digits and '_' only: safe unquoted in a URL's user-info, a header, a shell word.
	return Secret{Name: name, Source: source, Hosts: hosts, value: value, placeholder: "goalbox_secret_" + hex.EncodeToString(r[:])}, nil
}

// Placeholder is what NAME holds inside the sandbox.
func (s Secret) Placeholder() string { return s.placeholder }

// for reports whether the secret may be sent to host.
func (s Secret) isFor(host string) bool { return slices.Contains(s.Hosts, host) }

// interceptor terminates TLS for the hosts that have secrets.
type interceptor struct {
	secrets []Secret
	roots   *x509.CertPool // for upstreams: the host's and -upstream-ca
	caCert  *x509.Certificate
	caKey   *ecdsa.PrivateKey
	caPEM   []byte
	mu      sync.Mutex
	leaves  map[string]*tls.Certificate
}

func newInterceptor(secrets []Secret, extraPEM []byte) (*interceptor, error) {
	roots, err := x509.SystemCertPool()
	if err != nil || roots == nil {
		roots = x509.NewCertPool()
	}
	if len(extraPEM) > 0 && !roots.AppendCertsFromPEM(extraPEM) {
		return nil, errors.New("-upstream-ca: no certificate in it")
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	var serial [16]byte
	_, _ = rand.Read(serial[:])
	tmpl := &x509.Certificate{
		SerialNumber: new(big.Int).SetBytes(serial[:]),
		Subject:      pkix.Name{CommonName: "goalbox egress proxy CA (this executor only)"},
		NotBefore:    time.Now().Add(-time.Hour), NotAfter: time.Now().Add(90 * 24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, MaxPathLenZero: true,
		KeyUsage: x509.KeyUsageCertSign,
		// Name constraints: the CA can vouch for the secrets' hosts and nothing else, so a command that trusts it
		// trusts no other site because of it.
		PermittedDNSDomainsCritical: true,
	}
	for _, s := range secrets {
		for _, h := range s.Hosts {
			if !slices.Contains(tmpl.PermittedDNSDomains, h) {
				tmpl.PermittedDNSDomains = append(tmpl.PermittedDNSDomains, h)
			}
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, _ := x509.ParseCertificate(der)
	return &interceptor{secrets: secrets, roots: roots, caCert: cert, caKey: key,
		caPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), leaves: map[string]*tls.Certificate{}}, nil
}

// intercepts says whether host's CONNECT tunnels are terminated: some secret is for it.
func (in *interceptor) intercepts(host string) bool {
	return in != nil && slices.ContainsFunc(in.secrets, func(s Secret) bool { return s.isFor(host) })
}

// leaf is the certificate the proxy shows for host.
func (in *interceptor) leaf(host string) (*tls.Certificate, error) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if c := in.leaves[host]; c != nil {
		return c, nil
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	var serial [16]byte
	_, _ = rand.Read(serial[:])
	tmpl := &x509.Certificate{SerialNumber: new(big.Int).SetBytes(serial[:]), Subject: pkix.Name{CommonName: host}, DNSNames: []string{host},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(30 * 24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, in.caCert, &key.PublicKey, in.caKey)
	if err != nil {
		return nil, err
	}
	c := &tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
	in.leaves[host] = c
	return c, nil
}

// misplaced says which secret's placeholder a request carries that may not go to host (plain: over plain HTTP).
func (in *interceptor) misplaced(req *http.Request, host string, plain bool) *Secret {
	if in == nil {
		return nil
	}
	seen := headerText(req)
	for i, s := range in.secrets {
		if strings.Contains(seen, s.placeholder) && (plain || !s.isFor(host)) {
			return &in.secrets[i]
		}
	}
	return nil
}

// headerText is everything of a request's head the placeholder or a value could hide in, names aside: its method,
// its URL and its headers' values, Basic credentials decoded.
func headerText(req *http.Request) string {
	return req.Method + "\n" + req.URL.String() + fieldValues(req.Header)
}

// fieldValues is each value of h on a line of its own, Basic credentials also decoded.
func fieldValues(h http.Header) string {
	var b strings.Builder
	for _, vs := range h {
		for _, v := range vs {
			b.WriteString("\n" + v)
			if user, pass, ok := basic(v); ok {
				b.WriteString("\n" + user + ":" + pass)
			}
		}
	}
	return b.String()
}

func basic(v string) (string, string, bool) {
	scheme, enc, ok := strings.Cut(v, " ")
	if !ok || !strings.EqualFold(scheme, "Basic") {
		return "", "", false
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(enc))
	if err != nil {
		return "", "", false
	}
	u, p, ok := strings.Cut(string(raw), ":")
	return u, p, ok
}

// substitute puts the real values of host's secrets in place of their placeholders in req's headers.
func (in *interceptor) substitute(req *http.Request, host string) {
	for k, vs := range req.Header {
		for i, v := range vs {
			for _, s := range in.secrets {
				if !s.isFor(host) {
					continue
				}
				if user, pass, ok := basic(v); ok && strings.Contains(user+":"+pass, s.placeholder) {
					raw := strings.ReplaceAll(user, s.placeholder, s.value) + ":" + strings.ReplaceAll(pass, s.placeholder, s.value)
					v = "Basic " + base64.StdEncoding.EncodeToString([]byte(raw))
				}
				v = strings.ReplaceAll(v, s.placeholder, s.value)
			}
			req.Header[k][i] = v
		}
	}
}

// intercept serves a CONNECT to host, an intercepted host, once the upstream is dialled: TLS to the client with
// the proxy's certificate, TLS to the upstream verified, and HTTP/1.1 requests between them with the secrets put
// in. Requests carrying another host's placeholder are refused.
func (p *Proxy) intercept(c net.Conn, br *bufio.Reader, up *upConn, s *Session, host string, port int) {
	in := p.secrets
	client := tls.Server(&prefixConn{Conn: c, r: br}, &tls.Config{
		// A hello naming another secret's host gets that host's certificate, so that a client which verifies
		// reaches the request and reads the 403 below rather than a certificate error.
		GetCertificate: func(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
			if sni := canonicalHost(hello.ServerName); sni != host && in.intercepts(sni) {
				return in.leaf(sni)
			}
			return in.leaf(host)
		},
		NextProtos: []string{"http/1.1"},
		MinVersion: tls.VersionTLS12,
	})
	defer client.Close()
	if err := client.Handshake(); err != nil {
		p.cfg.Logger.Warn("egress: TLS with the client failed (does it trust the proxy's CA? SSL_CERT_FILE)", "command", s.id, "host", host, "err", err)
		return
	}
	server := tls.Client(up, &tls.Config{ServerName: host, RootCAs: in.roots, NextProtos: []string{"http/1.1"}, MinVersion: tls.VersionTLS12})
	defer server.Close()
	if err := server.Handshake(); err != nil {
		body := fmt.Sprintf("goalbox egress proxy: the upstream %s:%d failed TLS verification: %v\n", host, port, err)
		fmt.Fprintf(client, "HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/plain\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", len(body), body)
		return
	}
	cr, sr := bufio.NewReader(client), bufio.NewReader(server)
	for {
		req, err := http.ReadRequest(cr)
		if err != nil {
			return
		}
		if why := bindingMismatch(host, port, client.ConnectionState().ServerName, req); why != "" {
			p.refuse(client, s, &refusal{status: http.StatusForbidden, host: host, port: port, rule: "host-mismatch", denied: true, detailed: true,
				reason: why + ": a tunnel to a secret's host carries requests for that host only, so that no other name served at its address receives the secret"})
			return
		}
		if sec := in.misplaced(req, host, false); sec != nil {
			p.refuse(client, s, &refusal{status: http.StatusForbidden, host: host, port: port, rule: "secret", denied: true, detailed: true,
				reason: fmt.Sprintf("the request carries the placeholder of the secret %s, which is only ever sent to %s", sec.Name, strings.Join(sec.Hosts, ", "))})
			return
		}
		if p.refuseLeak(client, s, req, host, port, false) {
			return
		}
		in.substitute(req, host)
		stripHop(req.Header)
		hide := !p.hideOff.Load()
		if hide {
			askUncompressed(req)
		}
		continueEarly(client, req)
		closeAfter := req.Close
		req.Close = false
		if err := req.Write(server); err != nil {
			return
		}
		resp, err := http.ReadResponse(sr, req)
		if err != nil {
			return
		}
		stripHop(resp.Header)
		if hide && !in.hideValues(req, resp) {
			p.cfg.Logger.Warn("egress: a compressed response from a secret's host withheld", "command", s.id, "host", host)
			io.WriteString(client, compressedRefusal(host, port, resp.Header.Get("Content-Encoding")))
			resp.Body.Close()
			return
		}
		resp.Close = closeAfter || resp.Close
		err = resp.Write(client)
		resp.Body.Close()
		if err != nil || resp.Close {
			return
		}
	}
}

// prefixConn reads first what a bufio.Reader holds of a connection.
type prefixConn struct {
	net.Conn
	r io.Reader
}

func (c *prefixConn) Read(b []byte) (int, error) { return c.r.Read(b) }
