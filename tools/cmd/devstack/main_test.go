package main

import "testing"

// MinIO's console port (9001) can be moved off a port another program
// holds, like every other part of the stack that can be pointed elsewhere.
func TestConsoleAddr(t *testing.T) {
	for _, c := range []struct{ in, want string }{{"", "127.0.0.1:9001"}, {"127.0.0.1:9011", "127.0.0.1:9011"}} {
		if got, err := minioConsoleAddr(c.in); err != nil || got != c.want {
			t.Errorf("minioConsoleAddr(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{"9011", "127.0.0.1:", "localhost"} {
		if _, err := minioConsoleAddr(bad); err == nil {
			t.Errorf("minioConsoleAddr(%q) accepted", bad)
		}
	}
}
