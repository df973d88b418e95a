// Package egress is the executor's way out to the network: an HTTP proxy that forwards plain HTTP and tunnels
// CONNECT only to the hosts an allow-list names (-net-allow), and only to addresses that are safe to reach from a
// sandbox. It is the only route out of a sandbox's network namespace: a backend gives it a listener the sandbox can
// reach (the local backend one on the sandbox's own loopback), and commands find it through HTTP_PROXY and friends.
//
// The proxy decides twice. First on the name the client asked for (a host entry, a *.domain entry, or a CIDR for
// an IP literal); then on the address it actually connects to, in the dialer's Control hook, after resolution: an
// address in a range that is never reachable (loopback, link-local and cloud metadata, multicast, unspecified, the
// host's own addresses) is refused whatever the list says, and a private range only when a CIDR entry names it. A
// name whose answer changes between the check and the connect gains nothing: the check is on the connect.
package egress

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
)

// DefaultPorts are the ports a host or *.domain entry without ":port" opens: the web's two. A registry or a git
// server on another port is named with it (host:8443).
var DefaultPorts = []int{80, 443}

// ruleKind is what an entry names.
type ruleKind int

const (
	ruleHost   ruleKind = iota // one host name, exactly
	ruleSuffix                 // *.domain: any name below domain (not domain itself)
	ruleCIDR                   // a range of addresses (an IP address alone is its /32 or /128)
)

// Rule is one validated entry of an allow-list.
type Rule struct {
	kind   ruleKind
	name   string       // host or domain, lower case, no trailing dot
	port   int          // 0: DefaultPorts (names) or any port (CIDR)
	prefix netip.Prefix // ruleCIDR
	text   string       // the entry as written, canonical: what refusals and /healthz show
}

// String is the entry as /healthz and refusals show it.
func (r Rule) String() string { return r.text }

// AllowList is a validated -net-allow. The zero value and nil allow nothing.
type AllowList struct {
	rules []Rule
}

// ParseAllowList parses a comma-separated -net-allow value (spaces around entries are ignored; an empty value is
// an empty list). Every entry is validated here, once: an error names the entry and says what is accepted.
func ParseAllowList(s string) (*AllowList, error) {
	var entries []string
	for _, e := range strings.Split(s, ",") {
		if e = strings.TrimSpace(e); e != "" {
			entries = append(entries, e)
		}
	}
	return NewAllowList(entries)
}

// NewAllowList validates entries, each a host name, *.domain, either with :port, an IP address or a CIDR.
func NewAllowList(entries []string) (*AllowList, error) {
	a := &AllowList{}
	var errs []error
	for _, e := range entries {
		r, err := parseRule(strings.TrimSpace(e))
		if err != nil {
			errs = append(errs, fmt.Errorf("-net-allow entry %q: %w", e, err))
			continue
		}
		a.rules = append(a.rules, r)
	}
	if len(errs) > 0 {
		return nil, errors.Join(append(errs, errors.New("an entry is a host name (registry.npmjs.org), *.domain (any name below it), "+
			"either with :port (default ports 80 and 443), an IP address or a CIDR (10.0.0.0/8, any port)"))...)
	}
	return a, nil
}

func parseRule(e string) (Rule, error) {
	if e == "" {
		return Rule{}, errors.New("empty")
	}
	if strings.Contains(e, "/") {
		p, err := netip.ParsePrefix(e)
		if err != nil {
			return Rule{}, fmt.Errorf("not a CIDR: %v", err)
		}
		if p != p.Masked() {
			return Rule{}, fmt.Errorf("the CIDR has bits set past its prefix length; did you mean %s?", p.Masked())
		}
		return Rule{kind: ruleCIDR, prefix: p, text: p.String()}, nil
	}
	if a, err := netip.ParseAddr(strings.Trim(e, "[]")); err == nil {
		p := netip.PrefixFrom(a, a.BitLen())
		return Rule{kind: ruleCIDR, prefix: p, text: a.String()}, nil
	}
	host, port := e, 0
	if i := strings.LastIndexByte(e, ':'); i >= 0 {
		host = e[:i]
		n, err := strconv.Atoi(e[i+1:])
		if err != nil || n < 1 || n > 65535 {
			return Rule{}, fmt.Errorf("port %q: must be a number from 1 to 65535", e[i+1:])
		}
		port = n
		if _, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
			return Rule{}, errors.New("an IP address with a port: name addresses by CIDR, which opens every port (10.1.2.3 or 10.1.2.0/24)")
		}
	}
	kind := ruleHost
	if rest, ok := strings.CutPrefix(host, "*."); ok {
		kind, host = ruleSuffix, rest
	}
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	if err := checkName(host); err != nil {
		return Rule{}, err
	}
	text := host
	if kind == ruleSuffix {
		text = "*." + host
	}
	if port != 0 {
		text += ":" + strconv.Itoa(port)
	}
	return Rule{kind: kind, name: host, port: port, text: text}, nil
}

// checkName accepts DNS names: labels of letters, digits, '-' and '_' (some registries' CNAMEs have it), at most
// 63 bytes each and 253 in all. Wildcards are only a leading "*.".
func checkName(h string) error {
	if h == "" {
		return errors.New("no host name")
	}
	if len(h) > 253 {
		return errors.New("host name longer than 253 bytes")
	}
	for _, l := range strings.Split(h, ".") {
		if l == "" || len(l) > 63 {
			return errors.New("host name has an empty label or one longer than 63 bytes")
		}
		for _, c := range l {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				if c == '*' {
					return errors.New("a wildcard is only allowed as a leading \"*.\" (*.example.com)")
				}
				return fmt.Errorf("host name has the character %q (letters, digits, '-', '_' and '.' only)", c)
			}
		}
	}
	return nil
}

// Entries are the list's entries, canonical, in order.
func (a *AllowList) Entries() []string {
	if a == nil {
		return nil
	}
	out := make([]string, len(a.rules))
	for i, r := range a.rules {
		out[i] = r.text
	}
	return out
}

// Empty says the list allows nothing.
func (a *AllowList) Empty() bool { return a == nil || len(a.rules) == 0 }

// String is the list as -net-allow takes it.
func (a *AllowList) String() string { return strings.Join(a.Entries(), ",") }

// matchName finds the name entry that admits host:port (host lower case, no trailing dot). It returns the rule,
// and when no rule admits, a name entry that matched the host on another port (to say so in the refusal).
func (a *AllowList) matchName(host string, port int) (ok Rule, found bool, otherPort *Rule) {
	if a == nil {
		return Rule{}, false, nil
	}
	for i, r := range a.rules {
		var nameOK bool
		switch r.kind {
		case ruleHost:
			nameOK = host == r.name
		case ruleSuffix:
			nameOK = strings.HasSuffix(host, "."+r.name)
		}
		if !nameOK {
			continue
		}
		if portAllowed(r.port, port) {
			return r, true, nil
		}
		if otherPort == nil {
			otherPort = &a.rules[i]
		}
	}
	return Rule{}, false, otherPort
}

func portAllowed(rulePort, port int) bool {
	if rulePort != 0 {
		return rulePort == port
	}
	return slices.Contains(DefaultPorts, port)
}

// matchAddr finds the CIDR entry holding ip.
func (a *AllowList) matchAddr(ip netip.Addr) (Rule, bool) {
	if a == nil {
		return Rule{}, false
	}
	ip = ip.Unmap()
	for _, r := range a.rules {
		if r.kind == ruleCIDR && r.prefix.Contains(ip) {
			return r, true
		}
	}
	return Rule{}, false
}
