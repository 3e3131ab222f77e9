// Package destination owns which network addresses a webhook may be sent
// to. By default only public unicast addresses: loopback, private,
// link-local, multicast, shared, reserved and the clouds' metadata
// addresses are refused, unless an allowlisted network holds them (an
// in-cluster receiver, a developer's own machine). The check runs on the
// address being connected to (net.Dialer.Control), after DNS resolution,
// so a name that resolves to a public address when the URL is saved and to
// a private one when the webhook is sent (DNS rebinding) is still refused.
package destination

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"syscall"
	"time"
)

// ErrRefused is a destination the guard does not connect to.
var ErrRefused = errors.New("destination address refused")

// metadata are the cloud providers' instance metadata addresses outside
// the link-local range (Alibaba, Azure's wire server) or worth naming
// (AWS, GCP, Azure's IMDS on 169.254.169.254, AWS's IPv6 one).
var metadata = []netip.Addr{
	netip.MustParseAddr("169.254.169.254"),
	netip.MustParseAddr("169.254.170.2"),
	netip.MustParseAddr("100.100.100.200"),
	netip.MustParseAddr("168.63.129.16"),
	netip.MustParseAddr("fd00:ec2::254"),
}

// special are ranges no webhook receiver lives at, beyond those net/netip
// names (RFC 6890 and its updates).
var special = []struct {
	prefix netip.Prefix
	kind   string
}{
	{netip.MustParsePrefix("0.0.0.0/8"), "unspecified"},
	{netip.MustParsePrefix("100.64.0.0/10"), "shared (carrier-grade NAT)"},
	{netip.MustParsePrefix("192.0.0.0/24"), "reserved"},
	{netip.MustParsePrefix("198.18.0.0/15"), "reserved"},
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved"},
	// Local-use NAT64 (RFC 8215): the network chooses where the IPv4
	// address sits, so it cannot be checked.
	{netip.MustParsePrefix("64:ff9b:1::/48"), "NAT64"},
	// The documentation ranges (RFC 5737, 3849, 9637): no receiver is
	// there, yet some hosts and labs number their own networks from them.
	{netip.MustParsePrefix("192.0.2.0/24"), "reserved (documentation)"},
	{netip.MustParsePrefix("198.51.100.0/24"), "reserved (documentation)"},
	{netip.MustParsePrefix("203.0.113.0/24"), "reserved (documentation)"},
	{netip.MustParsePrefix("2001:db8::/32"), "reserved (documentation)"},
	{netip.MustParsePrefix("3fff::/20"), "reserved (documentation)"},
}

// embedding are the IPv6 forms that carry an IPv4 address, which a host
// or the network may reach in its stead (RFC 3056, 4380, 4291, 6052):
// such an address is refused when an IPv4 address it carries is.
// IPv4-mapped addresses are plain IPv4 (Unmap).
var embedding = []struct {
	prefix netip.Prefix
	kind   string
	ipv4   func(b [16]byte) [][4]byte
}{
	{netip.MustParsePrefix("2002::/16"), "6to4", func(b [16]byte) [][4]byte { return [][4]byte{[4]byte(b[2:6])} }},
	{netip.MustParsePrefix("2001::/32"), "Teredo", func(b [16]byte) [][4]byte {
		client := [4]byte(b[12:16]) // stored with every bit flipped
		for i := range client {
			client[i] ^= 0xff
		}
		return [][4]byte{[4]byte(b[4:8]), client}
	}},
	{netip.MustParsePrefix("64:ff9b::/96"), "NAT64", func(b [16]byte) [][4]byte { return [][4]byte{[4]byte(b[12:16])} }},
	{netip.MustParsePrefix("::/96"), "IPv4-compatible", func(b [16]byte) [][4]byte { return [][4]byte{[4]byte(b[12:16])} }},
}

// Kind names why ip is not a public unicast address, or returns "".
func Kind(ip netip.Addr) string {
	ip = ip.Unmap()
	if ip.Is6() && !ip.IsLoopback() && !ip.IsUnspecified() {
		for _, e := range embedding {
			if !e.prefix.Contains(ip) {
				continue
			}
			for _, v4 := range e.ipv4(ip.As16()) {
				if k := Kind(netip.AddrFrom4(v4)); k != "" {
					return k + " (" + e.kind + ")"
				}
			}
		}
	}
	for _, m := range metadata {
		if ip == m {
			return "cloud metadata"
		}
	}
	switch {
	case ip.IsLoopback():
		return "loopback"
	case ip.IsPrivate():
		return "private"
	case ip.IsLinkLocalUnicast():
		return "link-local"
	case ip.IsMulticast(), ip.IsLinkLocalMulticast(), ip.IsInterfaceLocalMulticast(), ip == netip.AddrFrom4([4]byte{255, 255, 255, 255}):
		return "multicast"
	case ip.IsUnspecified():
		return "unspecified"
	}
	for _, s := range special {
		if s.prefix.Contains(ip) {
			return s.kind
		}
	}
	return ""
}

// Guard refuses the addresses Kind names, except in its allowed networks.
type Guard struct {
	allowed []netip.Prefix
}

// NewGuard returns a guard allowing the networks in allowed as well as
// every public address.
func NewGuard(allowed []netip.Prefix) *Guard { return &Guard{allowed: allowed} }

// ParseNetworks reads a list of CIDR prefixes or single addresses.
func ParseNetworks(list []string) ([]netip.Prefix, error) {
	out := make([]netip.Prefix, 0, len(list))
	for _, s := range list {
		if p, err := netip.ParsePrefix(s); err == nil {
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(s)
		if err != nil {
			return nil, fmt.Errorf("%q is neither a CIDR prefix nor an IP address", s)
		}
		out = append(out, netip.PrefixFrom(a, a.BitLen()))
	}
	return out, nil
}

// Check returns nil when ip may be connected to, or an ErrRefused naming
// its kind.
func (g *Guard) Check(ip netip.Addr) error {
	kind := Kind(ip)
	if kind == "" {
		return nil
	}
	for _, p := range g.allowed {
		if p.Contains(ip.Unmap()) || p.Contains(ip) {
			return nil
		}
	}
	return fmt.Errorf("%w: %s is a %s address", ErrRefused, ip.Unmap(), kind)
}

// Control is a net.Dialer Control function: it runs on every address the
// dialer is about to connect to, once DNS has answered.
func (g *Guard) Control(_, address string, _ syscall.RawConn) error {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrRefused, err)
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return fmt.Errorf("%w: %q is not an IP address", ErrRefused, host)
	}
	return g.Check(ip)
}

// DialContext connects as a net.Dialer with Control set to the guard.
func (g *Guard) DialContext(timeout time.Duration) func(ctx context.Context, network, addr string) (net.Conn, error) {
	d := &net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second, Control: g.Control}
	return d.DialContext
}
