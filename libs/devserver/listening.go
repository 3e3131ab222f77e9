package devserver

import (
	"bufio"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
)

// ErrAddrTaken: the process exited before it was ready, and something else
// listens on its address. FreeAddr's port was taken by another process
// (another test binary's server, an outgoing connection) between the check
// and the bind; start again on a new address.
var ErrAddrTaken = errors.New("its address was taken by another process")

// listensOn reports whether process pid holds a TCP socket listening on
// addr (an IPv4 host:port), read from /proc. A server of another test
// process that took the port answers health checks too, and must not be
// taken for the one started here. Where /proc cannot tell, it says true.
func listensOn(pid int, addr string) bool {
	inode, ok := listeningInode(addr)
	if !ok {
		return !procReadable()
	}
	fds, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/fd")
	if err != nil {
		return !procReadable()
	}
	want := "socket:[" + inode + "]"
	for _, fd := range fds {
		if link, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/fd/" + fd.Name()); err == nil && link == want {
			return true
		}
	}
	return false
}

func procReadable() bool {
	_, err := os.Stat("/proc/net/tcp")
	return err == nil
}

// listeningInode finds the socket listening on addr in /proc/net/tcp,
// where an address is written as the IPv4 in host byte order and the port,
// in hex ("0100007F:9601" for 127.0.0.1:38401), and LISTEN is state 0A.
func listeningInode(addr string) (string, bool) {
	local, err := procAddr(addr)
	if err != nil {
		return "", false
	}
	f, err := os.Open("/proc/net/tcp")
	if err != nil {
		return "", false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) > 9 && fields[1] == local && fields[3] == "0A" {
			return fields[9], true
		}
	}
	return "", false
}

func procAddr(addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", err
	}
	ip := net.ParseIP(host).To4()
	n, err := strconv.Atoi(port)
	if ip == nil || err != nil {
		return "", fmt.Errorf("not an IPv4 host:port: %q", addr)
	}
	le := make([]byte, 4)
	binary.NativeEndian.PutUint32(le, binary.BigEndian.Uint32(ip))
	return strings.ToUpper(hex.EncodeToString(le)) + fmt.Sprintf(":%04X", n), nil
}
