package idempotency

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/doclib/libs/config"
	"github.com/doclib/libs/httpx"
	"github.com/doclib/libs/identity"
	"github.com/doclib/libs/mongox"
	"github.com/doclib/libs/problem"
)

// KeysCollection holds the keys, in the database every service shares for
// them (IDEMPOTENCY_DATABASE), so that a key used on one service's route
// and then on another's is told apart (422) like a key reused on one path.
const KeysCollection = "idempotency_keys"

// LoadDatabase reads IDEMPOTENCY_DATABASE, the database of the keys of
// every service (on the services' MongoDB replica set: a key's outcome
// commits in the transaction of the change it answers, which may span
// databases).
func LoadDatabase(env *config.Env) string {
	return env.String("IDEMPOTENCY_DATABASE", "idempotency")
}

// Keys keeps the outcomes of requests sent with an Idempotency-Key: one
// record per caller and key, removed by a TTL index once its retention has
// passed. A key's outcome is written in the transaction of the request's
// change (mongox.Hold), so the change and the answer a retry gets commit
// together or not at all.
type Keys struct {
	client    *mongo.Client
	coll      *mongo.Collection
	retention time.Duration
	streamed  func(*http.Request) bool
	log       *slog.Logger
	now       func() time.Time
	recheck   func(context.Context, Answer) *problem.Problem
	sealer    Sealer
}

// Answer is a stored answer, as a Recheck sees it.
type Answer struct {
	Status int
	Header http.Header
	Body   []byte
}

// KeysConfig configures Keys. Zero values take the defaults.
type KeysConfig struct {
	// Retention is how long a key and its outcome are kept (default
	// DefaultRetention).
	Retention time.Duration
	// Streamed reports a request whose body the handler streams (an
	// upload): its fingerprint is computed as the handler reads it.
	Streamed func(*http.Request) bool
	Log      *slog.Logger
	// Now is the clock (tests).
	Now func() time.Time
	// Recheck, if set, runs before replaying an answer whose first attempt
	// never saw its commit confirmed (it answered 503 outcome_unknown, or
	// stopped): a non-nil problem is answered instead, and not kept. A
	// create says so when what it made was deleted since.
	Recheck func(ctx context.Context, first Answer) *problem.Problem
	// Sealer, if set, seals the body of every answer kept and opens it to
	// replay it: a service whose answers show a secret (a webhook's
	// signing secret) keeps them no more readable than the secret.
	Sealer Sealer
}

// Sealer seals a kept answer's body, bound to the key's record, and opens
// it again.
type Sealer interface {
	Seal(plain, where string) string
	Open(sealed, where string) (string, error)
}

// keyRecord is a key as stored.
type keyRecord struct {
	ID          string              `bson:"_id"` // ScopedID
	Fingerprint string              `bson:"fingerprint"`
	Status      int                 `bson:"status"`
	Header      map[string][]string `bson:"header,omitempty"`
	Body        []byte              `bson:"body,omitempty"`
	SealedBody  string              `bson:"sealedBody,omitempty"` // Body, sealed (KeysConfig.Sealer)
	ExpiresAt   time.Time           `bson:"expiresAt"`
	// Confirmed is set once the first attempt saw its commit succeed.
	Confirmed bool `bson:"confirmed"`
}

// NewKeys returns the keys kept in the database named database, reached,
// like the transactions their answers commit in, through client.
func NewKeys(client *mongo.Client, database string, cfg KeysConfig) *Keys {
	if cfg.Retention <= 0 {
		cfg.Retention = DefaultRetention
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Keys{client: client, coll: client.Database(database).Collection(KeysCollection), retention: cfg.Retention,
		streamed: cfg.Streamed, log: cfg.Log, now: cfg.Now, recheck: cfg.Recheck, sealer: cfg.Sealer}
}

// EnsureIndexes creates the TTL index that forgets expired keys.
func (k *Keys) EnsureIndexes(ctx context.Context) error {
	return mongox.EnsureIndexes(ctx, k.coll, mongo.IndexModel{
		Keys:    bson.D{{Key: "expiresAt", Value: 1}},
		Options: options.Index().SetExpireAfterSeconds(0).SetName("expiresAt_ttl"),
	})
}

// Middleware honours the Idempotency-Key of every POST under /bo/: the
// first request with a key runs inside a held transaction (mongox.Hold)
// and its answer is stored in it; a later one with the same key and
// request gets that answer again, with another request 422. An answer of
// 500 or more is not kept and its writes are undone, so a retry runs anew.
func (k *Keys) Middleware() gin.HandlerFunc {
	return func(c *gin.Context) {
		raw := c.GetHeader(Header)
		if raw == "" || c.Request.Method != http.MethodPost || !strings.HasPrefix(c.Request.URL.Path, "/bo/") {
			c.Next()
			return
		}
		key, err := ParseKey(raw)
		if err != nil {
			httpx.Fail(c, problem.New(http.StatusBadRequest, CodeBadKey, err.Error()))
			return
		}
		caller, _ := identity.From(c.Request.Context())
		(&keyed{k: k, c: c, id: ScopedID(caller.Name, key)}).run()
	}
}

// keyed is one request sent with a key.
type keyed struct {
	k        *Keys
	c        *gin.Context
	id       string
	fp       *Fingerprinter
	streamed bool
	body     *digestBody
}

func (q *keyed) run() {
	r := q.c.Request
	q.streamed = q.k.streamed != nil && q.k.streamed(r)
	q.fp = NewFingerprinter(r.Method, r.URL.Path)
	if q.streamed {
		_, params, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
		q.fp = NewMultipartFingerprinter(r.Method, r.URL.Path, params["boundary"])
	} else {
		body, err := io.ReadAll(io.LimitReader(r.Body, httpx.MaxJSONBody+1))
		if err != nil {
			q.c.AbortWithStatus(httpx.StatusClientClosedRequest)
			return
		}
		_, _ = q.fp.Write(body)
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	ctx, cancel := httpx.WithBudget(r.Context())
	rec, found, err := q.k.find(ctx, q.id)
	cancel()
	switch {
	case err != nil:
		q.k.log.WarnContext(r.Context(), "idempotency key not checked", "error", err.Error())
		httpx.Fail(q.c, problem.Unavailable("the idempotency keys could not be checked, so the request was not run; try again shortly").
			With("Retry-After", "5"))
	case found:
		q.answer(rec)
	default:
		q.runFirst()
	}
}

// find returns the live record of id.
func (k *Keys) find(ctx context.Context, id string) (keyRecord, bool, error) {
	var rec keyRecord
	err := k.coll.FindOne(ctx, bson.M{"_id": id, "expiresAt": bson.M{"$gt": k.now()}}).Decode(&rec)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return rec, false, nil
	}
	return rec, err == nil, err
}

// answer replays rec, or refuses a request that is not the one rec
// answered.
func (q *keyed) answer(rec keyRecord) {
	if q.streamed { // read this body too, to compare it
		if _, err := io.Copy(q.fp, q.c.Request.Body); err != nil {
			q.c.AbortWithStatus(httpx.StatusClientClosedRequest)
			return
		}
	}
	if rec.Fingerprint != q.fp.Sum() {
		httpx.Fail(q.c, Reused())
		return
	}
	rec, err := q.k.open(rec)
	if err != nil {
		q.k.log.WarnContext(q.c.Request.Context(), "idempotency key's answer does not open", "error", err.Error())
		httpx.Fail(q.c, problem.Unavailable("the answer kept for this Idempotency-Key cannot be read here; try again shortly").
			With("Retry-After", "5"))
		return
	}
	if !rec.Confirmed && q.k.recheck != nil {
		if p := q.k.recheck(q.c.Request.Context(), Answer{Status: rec.Status, Header: rec.Header, Body: rec.Body}); p != nil {
			httpx.Fail(q.c, p)
			return
		}
	}
	h := q.c.Writer.Header()
	for name, vs := range rec.Header {
		h[name] = vs
	}
	q.c.Status(rec.Status)
	_, _ = q.c.Writer.Write(rec.Body)
	q.c.Abort()
}

// runFirst runs the handler in a held transaction and commits its writes
// with its answer.
func (q *keyed) runFirst() {
	real := q.c.Writer
	buf := &bufferedWriter{ResponseWriter: real}
	q.c.Writer = buf
	if q.streamed {
		q.body = &digestBody{ReadCloser: q.c.Request.Body, fp: q.fp}
		q.c.Request.Body = q.body
	}
	ctx, held := mongox.Hold(q.c.Request.Context(), q.k.client)
	q.c.Request = q.c.Request.WithContext(ctx)
	q.c.Next()
	q.c.Writer = real

	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), finishTimeout)
	defer cancel()
	status := buf.Status()
	if status >= 500 || status == httpx.StatusClientClosedRequest || (q.streamed && !q.body.eof) {
		held.Abort(fctx)
		buf.flushTo(real)
		return
	}
	rec := keyRecord{ID: q.id, Fingerprint: q.fp.Sum(), Status: status, Header: map[string][]string{},
		Body: bytes.Clone(buf.body.Bytes()), ExpiresAt: q.k.now().Add(q.k.retention)}
	for _, name := range keptHeaders {
		if v := buf.Header().Values(name); len(v) > 0 {
			rec.Header[name] = v
		}
	}
	err := held.Commit(fctx, func(ctx context.Context) error { return q.k.store(ctx, q.k.seal(rec)) })
	if err == nil {
		if _, cerr := q.k.coll.UpdateOne(fctx, bson.M{"_id": rec.ID}, bson.M{"$set": bson.M{"confirmed": true}}); cerr != nil {
			q.k.log.WarnContext(fctx, "idempotency key's commit not marked confirmed", "error", cerr.Error())
		}
		buf.flushTo(real)
		return
	}
	q.afterFailedCommit(fctx, buf, err)
}

// seal returns rec with its body sealed, when the keys have a Sealer.
func (k *Keys) seal(rec keyRecord) keyRecord {
	if k.sealer != nil && len(rec.Body) > 0 {
		rec.SealedBody, rec.Body = k.sealer.Seal(string(rec.Body), rec.ID), nil
	}
	return rec
}

// open returns rec with its sealed body opened.
func (k *Keys) open(rec keyRecord) (keyRecord, error) {
	if rec.SealedBody == "" {
		return rec, nil
	}
	if k.sealer == nil {
		return rec, errors.New("the answer is sealed and these keys have no Sealer")
	}
	body, err := k.sealer.Open(rec.SealedBody, rec.ID)
	if err != nil {
		return rec, err
	}
	rec.Body, rec.SealedBody = []byte(body), ""
	return rec, nil
}

// store inserts rec; an expired record of the same key that the TTL
// monitor has not removed yet is replaced.
func (k *Keys) store(ctx context.Context, rec keyRecord) error {
	if _, err := k.coll.DeleteOne(ctx, bson.M{"_id": rec.ID, "expiresAt": bson.M{"$lte": k.now()}}); err != nil {
		return err
	}
	_, err := k.coll.InsertOne(ctx, rec)
	return err
}

// afterFailedCommit answers a request whose writes and outcome could not
// be committed: another request with the key committed first (its answer,
// or 422, or 409 while it is not readable yet), the outcome is unknown, or
// nothing was committed.
func (q *keyed) afterFailedCommit(ctx context.Context, buf *bufferedWriter, err error) {
	for name := range buf.Header() {
		q.c.Writer.Header().Del(name)
	}
	switch {
	case errors.Is(err, mongox.ErrCommitUnknown):
		q.k.log.WarnContext(ctx, "idempotency key's commit outcome unknown", "error", err.Error())
		problem.Write(q.c.Writer, httpx.OutcomeUnknown("the database"))
		return
	case mongo.IsDuplicateKeyError(err) || hasLabel(err, "TransientTransactionError"):
		if rec, found, ferr := q.k.find(ctx, q.id); ferr == nil && found {
			q.answer(rec)
			return
		}
		httpx.Fail(q.c, problem.Conflict(CodeInFlight,
			"a request with this Idempotency-Key is being processed; retry it once that one has been answered").
			With("Retry-After", "1"))
	default:
		q.k.log.WarnContext(ctx, "idempotency key's outcome not committed; nothing was applied", "error", err.Error())
		httpx.Fail(q.c, problem.Unavailable("the change and its Idempotency-Key could not be committed, so nothing was applied; try again shortly").With("Retry-After", "5"))
	}
}

func hasLabel(err error, label string) bool {
	var le mongo.LabeledError
	return errors.As(err, &le) && le.HasErrorLabel(label)
}
