package httpapi_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/doclib/libs/httpx"
	"github.com/doclib/libs/idempotency"
	"github.com/doclib/libs/testkit"
	"github.com/doclib/services/webhook/internal/httpapi"
	"github.com/doclib/services/webhook/internal/keyring"
	"github.com/doclib/services/webhook/internal/subscription"
	"github.com/doclib/services/webhook/internal/subscription/mongostore"
)

func TestMain(m *testing.M) { testkit.Main(m) }

// lossy is a store whose create fails once it has written (lost false):
// the service sees the write time out after the subscription was inserted
// in the request's transaction.
type lossy struct {
	subscription.Store
	lost atomic.Bool
}

func (s *lossy) Create(ctx context.Context, sub subscription.Subscription) error {
	err := s.Store.Create(ctx, sub)
	if err == nil && s.lost.CompareAndSwap(false, true) {
		return context.DeadlineExceeded
	}
	return err
}

type api struct {
	t    *testing.T
	h    http.Handler
	keys *mongo.Collection
}

type response struct {
	status int
	body   string
}

func (a *api) do(method, path, body, key string) response {
	a.t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set(idempotency.Header, key)
	}
	rec := httptest.NewRecorder()
	a.h.ServeHTTP(rec, req)
	return response{rec.Code, rec.Body.String()}
}

// keyedAPI is the webhook API behind the Idempotency-Key middleware, its
// secrets sealed, on a store that loses its first create's answer once
// lost is set to false.
func keyedAPI(t *testing.T) (*api, *lossy) {
	t.Helper()
	t.Parallel()
	db, log := testkit.Mongo(t), slog.New(slog.DiscardHandler)
	ring, err := keyring.New("the-webhook-secret-key-of-the-test-32b")
	testkit.Must(t, err, "keyring")
	ls := &lossy{Store: mongostore.New(db, ring)}
	ls.lost.Store(true)
	e := httpx.NewEngine("webhook", log)
	keys := idempotency.NewKeys(db.Client(), db.Name(), httpapi.KeysConfig(time.Hour, ring, log))
	e.Use(keys.Middleware())
	subs := subscription.NewService(ls, subscription.Rules{AllowHTTP: true}, time.Hour, log)
	httpapi.New(subs, nil, nil, func(...string) {}).Register(e)
	return &api{t: t, h: e, keys: db.Collection(idempotency.KeysCollection)}, ls
}

// A keyed webhook create commits the subscription with its answer: one
// whose store failed after the insert (503) leaves neither; its retry
// creates it (201), and a replay answers the same subscription and secret
// without making another. The key with another body, or on another route,
// is 422. The kept answer's secret is sealed as the subscription's is.
func TestAKeyedWebhookCreateCommitsWithItsAnswer(t *testing.T) {
	a, ls := keyedAPI(t)
	const body = `{"url":"http://example.org/hook","eventTypes":["*"]}`
	ls.lost.Store(false)
	if r := a.do("POST", "/bo/webhooks", body, "k1"); r.status != 503 {
		t.Fatalf("a create whose store failed after the insert: %d %s, want 503", r.status, r.body)
	}
	if r := a.do("GET", "/bo/webhooks", "", ""); r.status != 200 || r.body != `{"items":[]}` {
		t.Fatalf("after the failed create: %d %s, want no subscription", r.status, r.body)
	}
	first := a.do("POST", "/bo/webhooks", body, "k1")
	var created struct{ ID, Secret string }
	if first.status != 201 || json.Unmarshal([]byte(first.body), &created) != nil || created.Secret == "" {
		t.Fatalf("the retry: %d %s, want 201 with the secret", first.status, first.body)
	}
	if r := a.do("POST", "/bo/webhooks", body, "k1"); r.status != 201 || r.body != first.body {
		t.Errorf("a replay: %d %s, want the first answer %s", r.status, r.body, first.body)
	}
	if r := a.do("GET", "/bo/webhooks", "", ""); strings.Count(r.body, `"id":`) != 1 {
		t.Errorf("after a create and its replay: %s, want one subscription", r.body)
	}
	other := `{"url":"http://example.org/other","eventTypes":["*"]}`
	for _, c := range []struct{ path, body string }{{"/bo/webhooks", other}, {"/bo/webhooks/" + created.ID + "/rotate-secret", ""}} {
		if r := a.do("POST", c.path, c.body, "k1"); r.status != 422 || !strings.Contains(r.body, idempotency.CodeReused) {
			t.Errorf("the key reused on POST %s %s: %d %s, want 422 %s", c.path, c.body, r.status, r.body, idempotency.CodeReused)
		}
	}
	var kept struct {
		Body       []byte `bson:"body"`
		SealedBody string `bson:"sealedBody"`
	}
	testkit.Must(t, a.keys.FindOne(t.Context(), bson.M{"_id": idempotency.ScopedID("", "k1")}).Decode(&kept), "the kept key")
	if strings.Contains(string(kept.Body), created.Secret) || kept.SealedBody == "" || strings.Contains(kept.SealedBody, created.Secret) {
		t.Errorf("the kept answer: body %q, sealed %q: want it sealed, the signing secret not in clear", kept.Body, kept.SealedBody)
	}
}
