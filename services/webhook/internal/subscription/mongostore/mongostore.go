// Package mongostore keeps webhook subscriptions in MongoDB, one document
// per subscription in the webhook_subscriptions collection. Updates are
// optimistic: a version field guards each replacement. Signing secrets are
// stored sealed (package keyring); SealSecrets seals those stored before
// in plain text, or with a key being rotated out. A deletion takes what
// belongs to the subscription with it, in one transaction.
package mongostore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/doclib/libs/mongox"
	"github.com/doclib/services/webhook/internal/keyring"
	"github.com/doclib/services/webhook/internal/subscription"
)

// Store implements subscription.Store.
type Store struct {
	coll    *mongo.Collection
	keys    *keyring.Keyring
	cascade []func(ctx context.Context, id string) error
}

var _ subscription.Store = (*Store)(nil)

// New returns a store on db sealing secrets with keys; with nil keys,
// secrets are stored in plain text (a deployment that sets no key). Each
// of cascade runs in the transaction of every Delete, with the
// subscription's id, and removes what belongs to it (its deliveries): all
// of it goes, or none.
func New(db *mongo.Database, keys *keyring.Keyring, cascade ...func(ctx context.Context, id string) error) *Store {
	return &Store{coll: db.Collection("webhook_subscriptions"), keys: keys, cascade: cascade}
}

type doc struct {
	ID             string   `bson:"_id"`
	Version        int64    `bson:"version"`
	URL            string   `bson:"url"`
	EventTypes     []string `bson:"eventTypes"`
	Description    string   `bson:"description"`
	Status         string   `bson:"status"`
	DisabledReason string   `bson:"disabledReason,omitempty"`
	// Secret and PreviousSecret are plain text, as stored before secrets
	// were sealed: read, never written.
	Secret               string    `bson:"secret,omitempty"`
	PreviousSecret       string    `bson:"previousSecret,omitempty"`
	SealedSecret         string    `bson:"sealedSecret,omitempty"`
	SealedPreviousSecret string    `bson:"sealedPreviousSecret,omitempty"`
	PreviousUntil        time.Time `bson:"previousUntil,omitempty"`
	CreatedAt            time.Time `bson:"createdAt"`
	UpdatedAt            time.Time `bson:"updatedAt"`
	CreatedBy            string    `bson:"createdBy,omitempty"`
	UpdatedBy            string    `bson:"updatedBy,omitempty"`
}

func (st *Store) toDoc(s subscription.Subscription, version int64) doc {
	d := doc{ID: s.ID, Version: version, URL: s.URL, EventTypes: s.EventTypes, Description: s.Description,
		Status: string(s.Status), DisabledReason: s.DisabledReason, PreviousUntil: s.PreviousUntil,
		CreatedAt: s.CreatedAt, UpdatedAt: s.UpdatedAt, CreatedBy: s.CreatedBy, UpdatedBy: s.UpdatedBy}
	if st.keys == nil { // no key given: plain text, as before sealing
		d.Secret, d.PreviousSecret = s.Secret, s.PreviousSecret
		return d
	}
	d.SealedSecret, d.SealedPreviousSecret = st.seal(s.Secret, s.ID, "secret"), st.seal(s.PreviousSecret, s.ID, "previousSecret")
	return d
}

// subscription returns the subscription d stores. A secret that does not
// open leaves it marked (SecretError), its secrets empty: one such
// subscription must not hide the others, nor itself.
func (st *Store) subscription(d doc) subscription.Subscription {
	s := subscription.Subscription{ID: d.ID, URL: d.URL, EventTypes: d.EventTypes, Description: d.Description,
		Status: subscription.Status(d.Status), DisabledReason: d.DisabledReason, PreviousUntil: d.PreviousUntil.UTC(),
		CreatedAt: d.CreatedAt.UTC(), UpdatedAt: d.UpdatedAt.UTC(), CreatedBy: d.CreatedBy, UpdatedBy: d.UpdatedBy}
	secret, previous, err := st.secrets(d)
	if err != nil {
		s.SecretError = err.Error()
		return s
	}
	s.Secret, s.PreviousSecret = secret, previous
	return s
}

// secrets opens the secrets d stores.
func (st *Store) secrets(d doc) (secret, previous string, err error) {
	if secret, err = st.open(d.SealedSecret, d.Secret, d.ID, "secret"); err != nil {
		return "", "", err
	}
	if previous, err = st.open(d.SealedPreviousSecret, d.PreviousSecret, d.ID, "previousSecret"); err != nil {
		return "", "", err
	}
	return secret, previous, nil
}

// replacement is the document that stores s, changed from d: a secret
// that did not open and was not rotated stays as stored.
func (st *Store) replacement(d doc, s subscription.Subscription, version int64) doc {
	out := st.toDoc(s, version)
	if s.SecretError != "" {
		out.Secret, out.PreviousSecret = d.Secret, d.PreviousSecret
		out.SealedSecret, out.SealedPreviousSecret = d.SealedSecret, d.SealedPreviousSecret
		out.PreviousUntil = d.PreviousUntil
	}
	return out
}

// seal seals a secret of subscription id, bound to it and to field; ""
// stays "" (no previous secret).
func (st *Store) seal(secret, id, field string) string {
	if secret == "" {
		return ""
	}
	return st.keys.Seal(secret, id+"/"+field)
}

var fieldNames = map[string]string{"secret": "signing secret", "previousSecret": "previous signing secret"}

// open returns the secret a document holds, sealed or, stored before
// secrets were sealed, plain.
func (st *Store) open(sealed, plain, id, field string) (string, error) {
	switch {
	case sealed == "":
		return plain, nil
	case st.keys == nil:
		return "", fmt.Errorf("the %s: %w (no WEBHOOK_SECRET_KEY is set)", fieldNames[field], keyring.ErrUnknownKey)
	}
	secret, err := st.keys.Open(sealed, id+"/"+field)
	if err != nil {
		return "", fmt.Errorf("the %s: %w", fieldNames[field], err)
	}
	return secret, nil
}

// Create inserts s, in a transaction: the request's, when it holds one
// (an Idempotency-Key's answer commits with it).
func (st *Store) Create(ctx context.Context, s subscription.Subscription) error {
	return mongox.InTx(ctx, st.coll.Database().Client(), func(ctx context.Context) error {
		if _, err := st.coll.InsertOne(ctx, st.toDoc(s, 1)); err != nil {
			return fmt.Errorf("insert subscription: %w", err)
		}
		return nil
	})
}

func (st *Store) get(ctx context.Context, id string) (doc, error) {
	var d doc
	err := st.coll.FindOne(ctx, bson.M{"_id": id}).Decode(&d)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return doc{}, subscription.ErrNotFound
	}
	if err != nil {
		return doc{}, fmt.Errorf("find subscription: %w", err)
	}
	return d, nil
}

// Get returns the subscription id.
func (st *Store) Get(ctx context.Context, id string) (subscription.Subscription, error) {
	d, err := st.get(ctx, id)
	if err != nil {
		return subscription.Subscription{}, err
	}
	return st.subscription(d), nil
}

// List returns every subscription, oldest first.
func (st *Store) List(ctx context.Context) ([]subscription.Subscription, error) {
	cur, err := st.coll.Find(ctx, bson.M{}, options.Find().SetSort(bson.D{{Key: "createdAt", Value: 1}, {Key: "_id", Value: 1}}))
	if err != nil {
		return nil, fmt.Errorf("list subscriptions: %w", err)
	}
	var docs []doc
	if err := cur.All(ctx, &docs); err != nil {
		return nil, fmt.Errorf("list subscriptions: %w", err)
	}
	out := make([]subscription.Subscription, len(docs))
	for i, d := range docs {
		out[i] = st.subscription(d)
	}
	return out, nil
}

// Update reads, changes and replaces the subscription, retrying a few
// times when another writer got there first.
func (st *Store) Update(ctx context.Context, id string, change func(*subscription.Subscription) error) (subscription.Subscription, error) {
	for range 5 {
		d, err := st.get(ctx, id)
		if err != nil {
			return subscription.Subscription{}, err
		}
		s := st.subscription(d)
		if err := change(&s); err != nil {
			return subscription.Subscription{}, err
		}
		res, err := st.coll.ReplaceOne(ctx, bson.M{"_id": id, "version": d.Version}, st.replacement(d, s, d.Version+1))
		if err != nil {
			return subscription.Subscription{}, fmt.Errorf("update subscription: %w", err)
		}
		if res.MatchedCount == 1 {
			return s, nil
		}
	}
	return subscription.Subscription{}, subscription.ErrConflict
}

// Delete removes the subscription id and, in the same transaction, what
// belongs to it (New's cascade).
func (st *Store) Delete(ctx context.Context, id string) error {
	return mongox.InTx(ctx, st.coll.Database().Client(), func(ctx context.Context) error {
		res, err := st.coll.DeleteOne(ctx, bson.M{"_id": id})
		if err != nil {
			return fmt.Errorf("delete subscription: %w", err)
		}
		if res.DeletedCount == 0 {
			return subscription.ErrNotFound
		}
		for _, drop := range st.cascade {
			if err := drop(ctx, id); err != nil {
				return err
			}
		}
		return nil
	})
}
