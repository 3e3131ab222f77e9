package devserver

import (
	"net"
	"os"
	"testing"
)

func TestProcAddr(t *testing.T) {
	for _, tc := range []struct {
		in   string
		ip   string
		port int
	}{
		{"0100007F:9601", "127.0.0.1", 38401},
		{"00000000:1F90", "0.0.0.0", 8080},
		{"00000000000000000000000000000000:1F90", "::", 8080},
		{"0000000000000000FFFF00000100007F:1F90", "127.0.0.1", 8080}, // ::ffff:127.0.0.1
		{"00000000000000000000000001000000:0050", "::1", 80},
	} {
		ip, port, ok := procAddr(tc.in)
		if !ok || !ip.Equal(net.ParseIP(tc.ip)) || port != tc.port {
			t.Errorf("procAddr(%s) = %v %d %v, want %s %d", tc.in, ip, port, ok, tc.ip, tc.port)
		}
	}
	if _, _, ok := procAddr("zz:1"); ok {
		t.Error("procAddr read a malformed address")
	}
}

// TestWhoListens: this process's own listener is the started process's;
// for another process it is another's; a free port is nobody's; a host
// name cannot be told.
func TestWhoListens(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	if h := whoListens(os.Getpid(), addr); h != started {
		t.Errorf("own listener: %v, want started", h)
	}
	if h := whoListens(os.Getppid(), addr); h != another {
		t.Errorf("the parent's view of our listener: %v, want another", h)
	}
	l.Close()
	if h := whoListens(os.Getpid(), addr); h != nobody {
		t.Errorf("a closed listener: %v, want nobody", h)
	}
	if h := whoListens(os.Getpid(), "localhost:1"); h != unknown {
		t.Errorf("a host name: %v, want unknown", h)
	}
}
