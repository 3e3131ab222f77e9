package devserver

import (
	"bufio"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"net"
	"os"
	"strconv"
	"strings"
)

// ErrAddrTaken: another process holds the address the started one was to
// serve on. FreeAddr's port was taken (by another test binary's server, an
// outgoing connection) between the check and the bind; start again on a
// new address.
var ErrAddrTaken = errors.New("its address was taken by another process")

// ErrExited: the process exited before it was ready (the caller may find
// why, e.g. another of its addresses taken).
var ErrExited = errors.New("exited before it was ready")

// holder says whose the sockets listening on an address are.
type holder int

const (
	nobody  holder = iota // no socket listens there (yet)
	started               // only the started process's
	another               // another process's (perhaps beside the started one's: SO_REUSEPORT)
	unknown               // /proc cannot tell (not Linux, or not a loopback IP:port)
)

// whoListens tells whether the sockets listening on addr (an IP:port),
// at its IP or a wildcard, in /proc/net/tcp and tcp6, are process pid's.
// A server another test process started on the same port answers health
// checks too, and must not be taken for the one started here; MinIO sets
// SO_REUSEPORT, so two of them can even listen on one port together.
func whoListens(pid int, addr string) holder {
	host, port, err := net.SplitHostPort(addr)
	ip, n := net.ParseIP(host), 0
	if err == nil {
		n, err = strconv.Atoi(port)
	}
	if err != nil || ip == nil {
		return unknown
	}
	inodes, ok := listening(ip, n)
	if !ok {
		return unknown
	}
	if len(inodes) == 0 {
		return nobody
	}
	mine := socketsOf(pid)
	for _, in := range inodes {
		if !mine[in] {
			return another
		}
	}
	return started
}

// listening lists the inodes of the sockets listening on port at ip or a
// wildcard; false when /proc/net/tcp cannot be read.
func listening(ip net.IP, port int) ([]string, bool) {
	var inodes []string
	for i, file := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		f, err := os.Open(file)
		if err != nil {
			if i == 0 {
				return nil, false
			}
			continue
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			if len(fields) <= 9 || fields[3] != "0A" { // 0A: LISTEN
				continue
			}
			if lip, lport, ok := procAddr(fields[1]); ok && lport == port && (lip.Equal(ip) || lip.IsUnspecified()) {
				inodes = append(inodes, fields[9])
			}
		}
		f.Close()
	}
	return inodes, true
}

// procAddr reads a /proc/net/tcp address: the IP as 32-bit words in host
// byte order, in hex, then the port ("0100007F:9601" is 127.0.0.1:38401
// on a little-endian machine).
func procAddr(s string) (net.IP, int, bool) {
	h, p, ok := strings.Cut(s, ":")
	raw, err := hex.DecodeString(h)
	port, perr := strconv.ParseUint(p, 16, 16)
	if !ok || err != nil || perr != nil || (len(raw) != 4 && len(raw) != 16) {
		return nil, 0, false
	}
	ip := make(net.IP, len(raw))
	for i := 0; i < len(raw); i += 4 {
		// The word was printed as a number; its bytes in memory, in the
		// host's order, are the address's bytes in network order.
		binary.NativeEndian.PutUint32(ip[i:], binary.BigEndian.Uint32(raw[i:i+4]))
	}
	return ip, int(port), true
}

// socketsOf is the set of socket inodes process pid holds.
func socketsOf(pid int) map[string]bool {
	dir := "/proc/" + strconv.Itoa(pid) + "/fd"
	fds, _ := os.ReadDir(dir)
	out := map[string]bool{}
	for _, fd := range fds {
		if link, err := os.Readlink(dir + "/" + fd.Name()); err == nil && strings.HasPrefix(link, "socket:[") {
			out[strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")] = true
		}
	}
	return out
}
