package idempotency_test

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/doclib/libs/idempotency"
	"github.com/doclib/libs/mongox"
	"github.com/doclib/libs/problem"
	"github.com/doclib/libs/testkit"
)

// service is a stand-in for one service: its own database, the keys in the
// database every service shares. POST /bo/<route> inserts a record in a
// transaction and answers 201, or, with ?fail=1, answers 500 after it.
type service struct {
	engine *gin.Engine
	things *mongo.Collection
}

func newService(t *testing.T, keysDB *mongo.Database, route string, sealer ...idempotency.Sealer) *service {
	t.Helper()
	db := testkit.Mongo(t)
	testkit.NeedsTransactions(t, db)
	cfg := idempotency.KeysConfig{Log: testkit.Logger(t)}
	if len(sealer) > 0 {
		cfg.Sealer = sealer[0]
	}
	keys := idempotency.NewKeys(db.Client(), keysDB.Name(), cfg)
	testkit.Must(t, keys.EnsureIndexes(context.Background()), "indexes")
	s := &service{engine: gin.New(), things: db.Collection("things")}
	s.engine.Use(keys.Middleware())
	var n atomic.Int64
	s.engine.POST("/bo/"+route, func(c *gin.Context) {
		id := n.Add(1)
		err := mongox.InTx(c.Request.Context(), db.Client(), func(ctx context.Context) error {
			_, err := s.things.InsertOne(ctx, bson.M{"_id": id})
			return err
		})
		switch {
		case err != nil:
			c.String(http.StatusServiceUnavailable, err.Error())
		case c.Query("fail") != "":
			c.String(http.StatusInternalServerError, "failed after the write")
		default:
			c.Header("Location", "/bo/"+route+"/1")
			c.JSON(http.StatusCreated, gin.H{"id": id})
		}
	})
	return s
}

func (s *service) post(t *testing.T, path, key, body string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(idempotency.Header, key)
	w := httptest.NewRecorder()
	s.engine.ServeHTTP(w, req)
	return w
}

func (s *service) count(t *testing.T) int64 {
	t.Helper()
	n, err := s.things.CountDocuments(context.Background(), bson.M{})
	testkit.Must(t, err, "count")
	return n
}

// A retry gets the first answer and changes nothing; the key with another
// body, or on another service's route, is 422.
func TestAKeyIsAnsweredOnceAcrossServices(t *testing.T) {
	keysDB := testkit.Mongo(t)
	docs, tags := newService(t, keysDB, "documents"), newService(t, keysDB, "tags")
	first := docs.post(t, "/bo/documents", `"k1"`, `{"a":1}`)
	if first.Code != http.StatusCreated {
		t.Fatalf("first: %d %s", first.Code, first.Body)
	}
	again := docs.post(t, "/bo/documents", `"k1"`, `{"a":1}`)
	if again.Code != http.StatusCreated || again.Body.String() != first.Body.String() ||
		again.Header().Get("Location") != first.Header().Get("Location") {
		t.Errorf("retry: %d %s (Location %q), want the first answer %s", again.Code, again.Body, again.Header().Get("Location"), first.Body)
	}
	if w := docs.post(t, "/bo/documents", `"k1"`, `{"a":2}`); w.Code != http.StatusUnprocessableEntity {
		t.Errorf("another body: %d, want 422", w.Code)
	}
	if w := tags.post(t, "/bo/tags", `"k1"`, `{"a":1}`); w.Code != http.StatusUnprocessableEntity {
		t.Errorf("another service's route: %d %s, want 422", w.Code, w.Body)
	}
	if d, tg := docs.count(t), tags.count(t); d != 1 || tg != 0 {
		t.Errorf("records: %d and %d, want 1 and 0", d, tg)
	}
}

// An answer of 500 or more is not the key's outcome: what the request
// wrote is undone and a retry runs anew.
func TestAFailedAnswerUndoesItsWritesAndFreesTheKey(t *testing.T) {
	s := newService(t, testkit.Mongo(t), "documents")
	if w := s.post(t, "/bo/documents?fail=1", `"k2"`, `{}`); w.Code != http.StatusInternalServerError {
		t.Fatalf("failing request: %d", w.Code)
	}
	if n := s.count(t); n != 0 {
		t.Fatalf("a failed request's write was kept (%d records)", n)
	}
	if w := s.post(t, "/bo/documents", `"k2"`, `{}`); w.Code != http.StatusCreated {
		t.Errorf("retry after a failure: %d %s, want it run anew", w.Code, w.Body)
	}
	if n := s.count(t); n != 1 {
		t.Errorf("records: %d, want 1", n)
	}
}

// An answer whose commit its first attempt never saw confirmed is
// rechecked before it is replayed; a confirmed one is replayed as it is.
func TestAnUnconfirmedAnswerIsRechecked(t *testing.T) {
	keysDB := testkit.Mongo(t)
	testkit.NeedsTransactions(t, keysDB)
	gone := problem.Conflict("created_thing_deleted", "deleted since")
	keys := idempotency.NewKeys(keysDB.Client(), keysDB.Name(), idempotency.KeysConfig{
		Recheck: func(context.Context, idempotency.Answer) *problem.Problem { return gone }})
	testkit.Must(t, keys.EnsureIndexes(context.Background()), "indexes")
	s := &service{engine: gin.New()}
	s.engine.Use(keys.Middleware())
	s.engine.POST("/bo/things", func(c *gin.Context) { c.JSON(http.StatusCreated, gin.H{}) })

	fp := idempotency.NewFingerprinter(http.MethodPost, "/bo/things")
	_, _ = fp.Write([]byte(`{}`))
	_, err := keysDB.Collection(idempotency.KeysCollection).InsertOne(context.Background(), bson.M{
		"_id": idempotency.ScopedID("", "u1"), "fingerprint": fp.Sum(), "status": 201,
		"expiresAt": time.Now().Add(time.Hour), "confirmed": false})
	testkit.Must(t, err, "insert an unconfirmed answer")
	if w := s.post(t, "/bo/things", `"u1"`, `{}`); w.Code != http.StatusConflict {
		t.Errorf("unconfirmed answer: %d, want the recheck's 409", w.Code)
	}
	if w := s.post(t, "/bo/things", `"c1"`, `{}`); w.Code != http.StatusCreated {
		t.Fatalf("first: %d", w.Code)
	}
	if w := s.post(t, "/bo/things", `"c1"`, `{}`); w.Code != http.StatusCreated {
		t.Errorf("confirmed answer: %d, want it replayed", w.Code)
	}
}

// toySealer seals by encoding, bound to where: enough to see that what is
// kept is what it sealed.
type toySealer struct{}

func (toySealer) Seal(plain, where string) string {
	return "toy." + base64.StdEncoding.EncodeToString([]byte(where+"\x00"+plain))
}

func (toySealer) Open(sealed, where string) (string, error) {
	raw, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(sealed, "toy."))
	plain, ok := strings.CutPrefix(string(raw), where+"\x00")
	if err != nil || !ok {
		return "", errors.New("does not open")
	}
	return plain, nil
}

// With a Sealer, a kept answer is stored sealed and replayed opened; a
// replica without it cannot replay it and says so (503), running nothing.
func TestAKeptAnswerIsSealed(t *testing.T) {
	keysDB := testkit.Mongo(t)
	s := newService(t, keysDB, "webhooks", toySealer{})
	first := s.post(t, "/bo/webhooks", "k1", `{"a":1}`)
	if first.Code != http.StatusCreated {
		t.Fatalf("first: %d %s", first.Code, first.Body)
	}
	var kept bson.M
	testkit.Must(t, keysDB.Collection(idempotency.KeysCollection).FindOne(context.Background(), bson.M{}).Decode(&kept), "the kept key")
	if _, plain := kept["body"]; plain || !strings.HasPrefix(fmt.Sprint(kept["sealedBody"]), "toy.") {
		t.Errorf("kept %v, want the body sealed only", kept)
	}
	if again := s.post(t, "/bo/webhooks", "k1", `{"a":1}`); again.Code != first.Code || again.Body.String() != first.Body.String() {
		t.Errorf("replay: %d %s, want %d %s", again.Code, again.Body, first.Code, first.Body)
	}
	unsealed := newService(t, keysDB, "webhooks")
	if r := unsealed.post(t, "/bo/webhooks", "k1", `{"a":1}`); r.Code != http.StatusServiceUnavailable || unsealed.count(t) != 0 {
		t.Errorf("a replica without the sealer: %d %s, %d written; want 503, nothing run", r.Code, r.Body, unsealed.count(t))
	}
}
