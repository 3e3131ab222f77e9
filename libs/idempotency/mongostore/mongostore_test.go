package mongostore_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/doclib/libs/httpx"
	"github.com/doclib/libs/idempotency"
	"github.com/doclib/libs/idempotency/mongostore"
	"github.com/doclib/libs/identity"
	"github.com/doclib/libs/problem"
	"github.com/doclib/libs/testkit"
)

func TestMain(m *testing.M) { testkit.Main(m) }

// server is a service whose POST /bo/things creates a thing per run, with
// the middleware on a real store; the caller is the X-Caller header.
type server struct {
	url     string
	runs    atomic.Int64
	release chan struct{} // when set, a run waits for it
	fail    atomic.Bool   // a run answers 503
	claims  chan string   // what each run found of its key (claimOf)
}

// claimOf describes the claim a handler found, for a test to compare.
func claimOf(c *idempotency.Claim, ok bool) string {
	if !ok {
		return "none"
	}
	return fmt.Sprintf("id=%t fingerprint=%t expires=%t", c.ID != "", c.Fingerprint != "", time.Until(c.ExpiresAt) > time.Hour)
}

func newServer(t *testing.T) *server {
	t.Helper()
	store, err := mongostore.New(context.Background(), testkit.Mongo(t))
	testkit.Must(t, err, "store")
	s := &server{claims: make(chan string, 100)}
	e := httpx.NewEngine("test", testkit.Logger(t))
	e.Use(func(c *gin.Context) {
		c.Request = c.Request.WithContext(identity.With(c.Request.Context(), identity.Caller{Name: c.GetHeader("X-Caller"), Role: identity.Editor}))
	}, idempotency.Middleware(idempotency.Config{Store: store, Log: testkit.Logger(t),
		Streamed: func(r *http.Request) bool { return strings.HasPrefix(r.Header.Get("Content-Type"), "multipart/") }}))
	e.POST("/bo/things", func(c *gin.Context) {
		body, _ := io.ReadAll(c.Request.Body)
		claim, claimed := idempotency.ClaimFrom(c.Request.Context())
		s.claims <- claimOf(claim, claimed)
		if claimed && string(body) == "forget" {
			claim.Forget()
			httpx.Fail(c, idempotency.Reused())
			return
		}
		n := s.runs.Add(1)
		if s.release != nil {
			<-s.release
		}
		if s.fail.Load() {
			httpx.Fail(c, problem.Unavailable("down"))
			return
		}
		c.Header("Location", "/bo/things/"+string(rune('0'+n)))
		c.Header("X-Other", "not kept")
		c.Data(http.StatusCreated, "application/json", []byte(`{"run":`+string(rune('0'+n))+`,"body":"`+string(body)+`"}`))
	})
	srv := httptest.NewServer(e)
	t.Cleanup(srv.Close)
	s.url = srv.URL
	return s
}

type answer struct {
	status int
	header http.Header
	body   string
}

func (s *server) post(t *testing.T, caller, key, contentType, body string) answer {
	t.Helper()
	req, _ := http.NewRequest("POST", s.url+"/bo/things", strings.NewReader(body))
	req.Header.Set("X-Caller", caller)
	req.Header.Set("Content-Type", contentType)
	if key != "" {
		req.Header.Set(idempotency.Header, key)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	return answer{res.StatusCode, res.Header, string(raw)}
}

func TestAKeyRunsARequestOnce(t *testing.T) {
	t.Parallel()
	for _, ct := range []string{"application/json", "multipart/form-data; boundary=b"} {
		t.Run(ct, func(t *testing.T) {
			s := newServer(t)
			first := s.post(t, "alice", `"k1"`, ct, "one")
			again := s.post(t, "alice", `"k1"`, ct, "one")
			if first.status != 201 || again.status != 201 || again.body != first.body ||
				again.header.Get("Location") != first.header.Get("Location") || again.header.Get("X-Other") != "" {
				t.Errorf("retry: %d %q Location %q, want the first answer again (201 %q Location %q, only kept headers)",
					again.status, again.body, again.header.Get("Location"), first.body, first.header.Get("Location"))
			}
			if other := s.post(t, "alice", `"k1"`, ct, "two"); other.status != 422 || !strings.Contains(other.body, idempotency.CodeReused) {
				t.Errorf("the key with another body: %d %s, want 422 %s", other.status, other.body, idempotency.CodeReused)
			}
			if bob := s.post(t, "bob", `"k1"`, ct, "one"); bob.status != 201 {
				t.Errorf("another caller's same key: %d, want 201 (keys are per caller)", bob.status)
			}
			if none := s.post(t, "alice", "", ct, "one"); none.status != 201 {
				t.Errorf("no key: %d, want 201", none.status)
			}
			if bad := s.post(t, "alice", `"a b"`, ct, "one"); bad.status != 400 || !strings.Contains(bad.body, idempotency.CodeBadKey) {
				t.Errorf("a malformed key: %d %s, want 400 %s", bad.status, bad.body, idempotency.CodeBadKey)
			}
			if got := s.runs.Load(); got != 3 {
				t.Errorf("%d runs, want 3 (alice's key once, bob's, the one without a key)", got)
			}
		})
	}
}

func TestAKeyInFlightIs409AndAFailureLetsARetryRun(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	s.release = make(chan struct{})
	var wg sync.WaitGroup
	var first answer
	wg.Go(func() { first = s.post(t, "alice", `"k"`, "application/json", "x") })
	testkitEventually(t, func() bool { return s.runs.Load() == 1 })
	if in := s.post(t, "alice", `"k"`, "application/json", "x"); in.status != 409 || in.header.Get("Retry-After") == "" ||
		!strings.Contains(in.body, idempotency.CodeInFlight) {
		t.Errorf("the key while its first request runs: %d %s, want 409 %s with Retry-After", in.status, in.body, idempotency.CodeInFlight)
	}
	close(s.release)
	wg.Wait()
	if first.status != 201 {
		t.Fatalf("first: %d", first.status)
	}
	s.release = nil

	s.fail.Store(true)
	if f := s.post(t, "alice", `"k2"`, "application/json", "x"); f.status != 503 {
		t.Fatalf("failing run: %d", f.status)
	}
	s.fail.Store(false)
	if r := s.post(t, "alice", `"k2"`, "application/json", "x"); r.status != 201 {
		t.Errorf("a retry after a 503: %d %s, want 201 (a failed attempt lets its key go)", r.status, r.body)
	}
}

func testkitEventually(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatal("condition not met within 10 s")
}

// A handler that ran holding its key finds the claim (scoped id, the
// request's fingerprint, the key's expiry) unless its body streams; one
// that calls Forget has its answer not kept: the key is let go, and the
// next request with it runs (here, the first request's own retry).
func TestAHandlerFindsItsClaimAndCanLetTheKeyGo(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	for i, ct := range []string{"application/json", "multipart/form-data; boundary=b"} {
		want := []string{"id=true fingerprint=true expires=true", "none"}[i]
		if a := s.post(t, "alice", fmt.Sprintf(`"c-%d"`, i), ct, "one"); a.status != 201 {
			t.Fatalf("%s: %d %s", ct, a.status, a.body)
		}
		if got := <-s.claims; got != want {
			t.Errorf("%s: the handler found %q, want %q", ct, got, want)
		}
	}
	if a := s.post(t, "alice", `"f"`, "application/json", "forget"); a.status != 422 {
		t.Fatalf("a forgotten answer: %d %s, want the handler's 422", a.status, a.body)
	}
	<-s.claims
	if a := s.post(t, "alice", `"f"`, "application/json", "one"); a.status != 201 {
		t.Errorf("another body after a forgotten answer: %d %s, want 201 (the key was let go, not kept with the 422)", a.status, a.body)
	}
}
