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
	{netip.MustParsePrefix("64:ff9b::/96"), "NAT64"}, // may reach any IPv4 address, private ones too
	{netip.MustParsePrefix("2001:db8::/32"), "reserved"},
}

// Kind names why ip is not a public unicast address, or returns "".
func Kind(ip netip.Addr) string {
	ip = ip.Unmap()
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
