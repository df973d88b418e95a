package egress

// Binding a secret to its host: the real value goes only into a request that names the secret's host three times
// over, the same each time. The proxy picks the secrets by the CONNECT target; a server behind that address may
// route by the TLS server name (SNI) or by the request's Host (a CDN, a hosting platform, any virtual host), so a
// request whose SNI or Host names another host would carry the value to whoever answers for that other name.

import (
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
)

// canonicalHost is a host name as the proxy compares them: lower case, no trailing dot, no brackets.
func canonicalHost(h string) string {
	return strings.ToLower(strings.TrimSuffix(strings.Trim(h, "[]"), "."))
}

// splitHostHeader splits a Host header's value into its host and port; port is 0 when the value has none. ok is
// false for a value that is not host[:port] (an empty port, a port that is not a number from 1 to 65535).
func splitHostHeader(v string) (host string, port int, ok bool) {
	if v == "" {
		return "", 0, false
	}
	h, ps, err := net.SplitHostPort(v)
	if err != nil {
		bracketed := strings.HasPrefix(v, "[") && strings.HasSuffix(v, "]") && !strings.ContainsAny(v[1:len(v)-1], "[]")
		if !bracketed && strings.ContainsAny(v, ":[]") {
			return "", 0, false // an IPv6 address without brackets, or brackets cut short
		}
		return canonicalHost(v), 0, true
	}
	n, err := strconv.Atoi(ps)
	if err != nil || n < 1 || n > 65535 {
		return "", 0, false
	}
	return canonicalHost(h), n, true
}

// bindingMismatch says how a request inside an intercepted tunnel to host:port names another host ("" when it
// does not): sni is the server name the client sent in its TLS hello ("" when it sent none, as for an address),
// req the decrypted request. A request without Host gets the tunnel's, so an upstream's default virtual host
// never receives it.
func bindingMismatch(host string, port int, sni string, req *http.Request) string {
	if sni != "" && canonicalHost(sni) != host {
		return fmt.Sprintf("the TLS server name (SNI) %q is not the CONNECT target %s", sni, host)
	}
	if req.Host == "" {
		req.Host = host
		return ""
	}
	h, p, ok := splitHostHeader(req.Host)
	switch {
	case !ok:
		return fmt.Sprintf("the request's Host %q is not host[:port]", req.Host)
	case h != host:
		return fmt.Sprintf("the request's Host %q is not the CONNECT target %s", req.Host, host)
	case p != 0 && p != port:
		return fmt.Sprintf("the request's Host %q names port %d, the CONNECT target port %d", req.Host, p, port)
	}
	return ""
}
