package httpapi_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/doclib/services/gateway/internal/bodyread"
)

// A route that takes no body answers at once and closes the connection
// instead of draining the declared body for HTTP_READ_TIMEOUT (issue 21 item 8).
func TestARefusedBodysConnectionIsClosed(t *testing.T) {
	h := start(t, options{bodyRead: bodyread.Config{Timeout: time.Minute, UploadMinRate: 1 << 10, Max: 30 * time.Minute}})
	conn, err := net.Dial("tcp", strings.TrimPrefix(h.publicURL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	io.WriteString(conn, "GET /public/config HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n")
	br := bufio.NewReader(conn)
	res, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, res.Body)
	begun := time.Now()
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err = br.ReadByte()
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Errorf("answered %d (Connection: close=%v) but the server still held the connection %v later", res.StatusCode, res.Close, time.Since(begun))
	}
}
