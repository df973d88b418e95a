package egress

import (
	"net"
	"net/netip"
	"slices"
)

// metadataAddrs are the cloud metadata services' addresses. 169.254.169.254 is link-local (refused as such);
// AWS's IPv6 one is a unique-local address a CIDR entry like fd00::/8 could otherwise name, so it is listed.
var metadataAddrs = []netip.Addr{netip.MustParseAddr("169.254.169.254"), netip.MustParseAddr("fd00:ec2::254")}

// nonPublic are the ranges, besides Go's IsPrivate (10/8, 172.16/12, 192.168/16, fc00::/7), that are not the public
// Internet: carrier-grade NAT, benchmarking, IETF protocol assignments, documentation, reserved, and "this network".
// They are reachable only where a CIDR entry names them, like the private ranges.
var nonPublic = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("100.64.0.0/10"),
	netip.MustParsePrefix("192.0.0.0/24"),
	netip.MustParsePrefix("192.0.2.0/24"),
	netip.MustParsePrefix("198.18.0.0/15"),
	netip.MustParsePrefix("198.51.100.0/24"),
	netip.MustParsePrefix("203.0.113.0/24"),
	netip.MustParsePrefix("240.0.0.0/4"),
	netip.MustParsePrefix("2001:db8::/32"),
}

// nat64 embeds an IPv4 address in its last 32 bits: it is judged as that address.
var nat64 = netip.MustParsePrefix("64:ff9b::/96")

// neverReason says why ip may never be reached from a sandbox, whatever the allow-list says ("" when it may be):
// the machine itself, its link, cloud metadata, or no single host at all.
func neverReason(ip netip.Addr, own []netip.Addr) string {
	ip = ip.Unmap()
	if nat64.Contains(ip) {
		b := ip.As16()
		ip = netip.AddrFrom4([4]byte(b[12:]))
	}
	switch {
	case slices.Contains(metadataAddrs, ip):
		return "a cloud metadata address"
	case ip.IsLoopback():
		return "a loopback address"
	case ip.IsLinkLocalUnicast():
		return "a link-local address"
	case ip.IsMulticast() || ip.IsLinkLocalMulticast() || ip.IsInterfaceLocalMulticast():
		return "a multicast address"
	case ip.IsUnspecified():
		return "the unspecified address"
	case ip == netip.AddrFrom4([4]byte{255, 255, 255, 255}):
		return "the broadcast address"
	case slices.ContainsFunc(own, func(o netip.Addr) bool { return ip == o.Unmap() }):
		return "an address of the executor's own host"
	}
	return ""
}

// isNonPublic says whether ip is in a private or reserved range, reachable only where a CIDR entry names it.
func isNonPublic(ip netip.Addr) bool {
	ip = ip.Unmap()
	if nat64.Contains(ip) {
		b := ip.As16()
		ip = netip.AddrFrom4([4]byte(b[12:]))
	}
	return ip.IsPrivate() || slices.ContainsFunc(nonPublic, func(p netip.Prefix) bool { return p.Contains(ip) })
}

// hostAddrs are the addresses of this machine's interfaces, read at every decision: an address added while the
// executor runs (a new bridge, a VPN) is the host's own from then on. Reading them is one netlink dump, small
// beside the connect it guards.
func hostAddrs() []netip.Addr {
	ifas, err := net.InterfaceAddrs()
	if err != nil {
		return nil
	}
	out := make([]netip.Addr, 0, len(ifas))
	for _, a := range ifas {
		if n, ok := a.(*net.IPNet); ok {
			if ip, ok := netip.AddrFromSlice(n.IP); ok {
				out = append(out, ip.Unmap())
			}
		}
	}
	return out
}
