package egress

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strings"
)

// Resolver turns a host name into addresses. net.DefaultResolver is one (the system's: /etc/hosts, then DNS).
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// HostsFile resolves names from a hosts(5) file alone, read at every lookup (so a test may change it while the
// proxy runs): tests point the proxy at names they control without touching the machine's /etc/hosts or DNS.
type HostsFile string

// LookupNetIP implements Resolver.
func (h HostsFile) LookupNetIP(_ context.Context, network, host string) ([]netip.Addr, error) {
	f, err := os.Open(string(h))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	var out []netip.Addr
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line, _, _ := strings.Cut(sc.Text(), "#")
		fields := strings.Fields(line)
		if len(fields) < 2 {
			continue
		}
		ip, err := netip.ParseAddr(fields[0])
		if err != nil {
			continue
		}
		for _, name := range fields[1:] {
			if strings.ToLower(name) == host && (network == "ip" || network == "ip4" && ip.Is4() || network == "ip6" && ip.Is6()) {
				out = append(out, ip)
			}
		}
	}
	if len(out) == 0 {
		return nil, &net.DNSError{Err: fmt.Sprintf("not in the hosts file %s", string(h)), Name: host, IsNotFound: true}
	}
	return out, sc.Err()
}
