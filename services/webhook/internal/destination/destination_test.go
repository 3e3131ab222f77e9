package destination

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"
)

// One case per kind of address the guard refuses, and the public ones it
// lets through.
func TestControlRefusesEveryKindOfNonPublicAddress(t *testing.T) {
	t.Parallel()
	g := NewGuard(nil)
	cases := []struct {
		addr, kind string
	}{
		{"127.0.0.1:80", "loopback"},
		{"[::1]:443", "loopback"},
		{"10.1.2.3:443", "private"},
		{"172.16.0.1:443", "private"},
		{"192.168.1.1:443", "private"},
		{"[fd12::1]:443", "private"},
		{"169.254.10.10:80", "link-local"},
		{"[fe80::1]:80", "link-local"},
		{"224.0.0.1:80", "multicast"},
		{"[ff02::1]:80", "multicast"},
		{"169.254.169.254:80", "cloud metadata"},
		{"[fd00:ec2::254]:80", "cloud metadata"},
		{"100.100.100.200:80", "cloud metadata"},
		{"0.0.0.0:80", "unspecified"},
		{"[::]:80", "unspecified"},
		{"100.64.1.1:80", "shared (carrier-grade NAT)"},
		{"[::ffff:127.0.0.1]:80", "loopback"}, // IPv4-mapped IPv6
		{"[::ffff:169.254.169.254]:80", "cloud metadata"},
		{"[64:ff9b::a00:1]:80", "NAT64"},
		{"192.0.2.10:80", "reserved (documentation)"},
		{"198.51.100.7:443", "reserved (documentation)"},
		{"203.0.113.9:443", "reserved (documentation)"},
		{"[2001:db8::1]:443", "reserved (documentation)"},
		{"[3fff::1]:443", "reserved (documentation)"},
		{"[2002:cb00:7109::1]:443", "reserved (documentation) (6to4)"}, // 6to4 of 203.0.113.9
	}
	for _, c := range cases {
		err := g.Control("tcp", c.addr, nil)
		if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), c.kind) {
			t.Errorf("Control(%s) = %v, want refused as %s", c.addr, err, c.kind)
		}
	}
	for _, ok := range []string{"93.184.215.14:443", "[2606:2800:21f:cb07:6820:80da:af6b:8b2c]:443", "1.1.1.1:443"} {
		if err := g.Control("tcp", ok, nil); err != nil {
			t.Errorf("Control(%s) = %v, want allowed", ok, err)
		}
	}
}

func TestAllowlistLetsItsNetworksThrough(t *testing.T) {
	t.Parallel()
	nets, err := ParseNetworks([]string{"10.0.0.0/8", "127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	g := NewGuard(nets)
	for _, ok := range []string{"10.4.5.6:80", "127.0.0.1:8080"} {
		if err := g.Control("tcp", ok, nil); err != nil {
			t.Errorf("Control(%s) = %v, want allowed by the allowlist", ok, err)
		}
	}
	for _, no := range []string{"127.0.0.2:80", "192.168.0.1:80", "169.254.169.254:80"} {
		if err := g.Control("tcp", no, nil); err == nil {
			t.Errorf("Control(%s) allowed, want refused", no)
		}
	}
	if _, err := ParseNetworks([]string{"not-a-network"}); err == nil {
		t.Error("a malformed network was accepted")
	}
}

// The guard runs when connecting: a dial to a loopback listener fails
// before any byte is sent, whatever name led there.
func TestDialerRefusesBeforeConnecting(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan struct{}, 1)
	go func() {
		if c, err := ln.Accept(); err == nil {
			accepted <- struct{}{}
			c.Close()
		}
	}()
	dial := NewGuard(nil).DialContext(time.Second)
	_, err = dial(context.Background(), "tcp", "localhost:"+portOf(ln.Addr()))
	if !errors.Is(err, ErrRefused) {
		t.Fatalf("dial to localhost = %v, want refused", err)
	}
	select {
	case <-accepted:
		t.Fatal("the listener accepted a connection")
	case <-time.After(100 * time.Millisecond):
	}
}

func portOf(a net.Addr) string {
	return strings.TrimPrefix(netip.MustParseAddrPort(a.String()).String(), "127.0.0.1:")
}

// Issue 26: IPv6 addresses that carry an IPv4 address (6to4, Teredo, the
// IPv4-compatible form, NAT64) are refused when the IPv4 address they
// carry is; one case per kind, and the same kinds carrying a public IPv4
// address go through.
func TestControlRefusesIPv4InsideIPv6(t *testing.T) {
	t.Parallel()
	g := NewGuard(nil)
	refused := []struct {
		name, addr, kind string
	}{
		{"6to4 of 127.0.0.1", "[2002:7f00:1::1]:80", "loopback (6to4)"},
		{"6to4 of 10.0.0.1", "[2002:a00:1::]:80", "private (6to4)"},
		{"6to4 of the metadata address", "[2002:a9fe:a9fe::1]:80", "cloud metadata (6to4)"},
		{"Teredo, server 192.168.0.1", "[2001:0:c0a8:1::1]:80", "private (Teredo)"},
		// The client address is stored with its bits flipped: 127.0.0.1 is 80ff:fffe.
		{"Teredo, client 127.0.0.1", "[2001:0:5db8:d822::80ff:fffe]:80", "loopback (Teredo)"},
		{"IPv4-compatible 127.0.0.1", "[::127.0.0.1]:80", "loopback (IPv4-compatible)"},
		{"IPv4-compatible 169.254.169.254", "[::a9fe:a9fe]:80", "cloud metadata (IPv4-compatible)"},
		{"IPv4-mapped 10.1.1.1", "[::ffff:10.1.1.1]:80", "private"},
		{"NAT64 of 10.0.0.1", "[64:ff9b::a00:1]:80", "private (NAT64)"},
		{"NAT64 of 169.254.169.254", "[64:ff9b::169.254.169.254]:80", "cloud metadata (NAT64)"},
		{"local-use NAT64", "[64:ff9b:1::5db8:d822]:80", "NAT64"},
	}
	for _, c := range refused {
		err := g.Control("tcp", c.addr, nil)
		if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), c.kind) {
			t.Errorf("%s: Control(%s) = %v, want refused as %s", c.name, c.addr, err, c.kind)
		}
	}
	for _, ok := range []string{
		"[2002:5db8:d822::1]:443",           // 6to4 of 93.184.216.34
		"[2001:0:5db8:d822::a247:27dd]:443", // Teredo, server and client (bits flipped) 93.184.216.34
		"[64:ff9b::93.184.216.34]:443",      // NAT64 of a public address
		"[::ffff:93.184.216.34]:443",        // IPv4-mapped
	} {
		if err := g.Control("tcp", ok, nil); err != nil {
			t.Errorf("Control(%s) = %v, want allowed (it carries a public IPv4 address)", ok, err)
		}
	}
}
