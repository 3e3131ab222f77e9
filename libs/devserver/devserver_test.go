package devserver_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/doclib/libs/devserver"
)

func TestFreeAddrNeverRepeats(t *testing.T) {
	seen := map[string]bool{}
	for range 300 {
		addr, err := devserver.FreeAddr()
		if err != nil {
			t.Fatal(err)
		}
		if seen[addr] {
			t.Fatalf("FreeAddr returned %s twice", addr)
		}
		seen[addr] = true
	}
}

// TestAnotherProcessOnTheAddressIsNotReady: a server that is not the
// started process's answers 200 on the address, as one of another test
// binary does when it took the port first; the wait must not end on it,
// but stop the started process and say the address was taken.
func TestAnotherProcessOnTheAddressIsNotReady(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	defer srv.Close()
	p, err := devserver.Start("sleep", "/bin/sleep", []string{"30"}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	if err := devserver.WaitHTTP(ctx, p, srv.URL+"/readyz"); !errors.Is(err, devserver.ErrAddrTaken) {
		t.Errorf("waiting on an address another process serves: %v, want ErrAddrTaken", err)
	}
	select {
	case <-p.Done():
	default:
		t.Error("the started process still runs after its address was found taken")
	}
}

// TestAProcessThatCouldNotBindSaysItsAddressWasTaken: the process exits
// while another holds its address: ErrAddrTaken, so the caller can move it.
func TestAProcessThatCouldNotBindSaysItsAddressWasTaken(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	defer srv.Close()
	p, err := devserver.Start("false", "/bin/false", nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := devserver.WaitHTTP(ctx, p, srv.URL+"/readyz"); !errors.Is(err, devserver.ErrAddrTaken) {
		t.Errorf("a process that exited with its address taken: %v, want ErrAddrTaken", err)
	}
}
