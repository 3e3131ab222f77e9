package mongostore

import (
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/doclib/libs/idempotency"
)

// KeyField is the field of a record's Stamp holding its key; the others
// hold the request's fingerprint and the key's expiry.
const (
	KeyField         = "idemKey"
	fingerprintField = "idemFingerprint"
	expiresAtField   = "idemExpiresAt"
)

// KeyIndex is the index of a collection whose records no two may hold
// one key: unique, and sparse so that the many records without a key
// (all null) do not collide. MongoDB refuses to build it without sparse
// on a collection holding two of those; FerretDB 1.x ignores sparse (its
// unique indexes allow repeated nulls), so no test on it sees sparse go:
// TestKeyIndexIsUniqueAndSparse does. (No partial index: FerretDB 1.x
// refuses partialFilterExpression.)
func KeyIndex() mongo.IndexModel {
	return mongo.IndexModel{Keys: bson.D{{Key: KeyField, Value: 1}},
		Options: options.Index().SetName(KeyField).SetUnique(true).SetSparse(true)}
}

// ExpiryIndex serves the periodic removal of expired keys (Expired):
// sparse, the records without a key stay out of it.
func ExpiryIndex() mongo.IndexModel {
	return mongo.IndexModel{Keys: bson.D{{Key: expiresAtField, Value: 1}},
		Options: options.Index().SetName(expiresAtField).SetSparse(true)}
}

// Stamp is the Idempotency-Key a record was created under, stored inline
// in the record from its first write on: a retry whose first attempt the
// database applied, though its answer never reached the service, finds
// what that attempt made by it instead of making it again.
type Stamp struct {
	Key         string    `bson:"idemKey,omitempty"`
	Fingerprint string    `bson:"idemFingerprint,omitempty"`
	ExpiresAt   time.Time `bson:"idemExpiresAt,omitempty"`
}

// StampOf is the stamp of a record created under c; none for nil.
func StampOf(c *idempotency.Claim) Stamp {
	if c == nil {
		return Stamp{}
	}
	return Stamp{Key: c.ID, Fingerprint: c.Fingerprint, ExpiresAt: c.ExpiresAt}
}

// Made reports whether the record was made by c's request (same key, same
// fingerprint) under a key not expired at now.
func (s Stamp) Made(c *idempotency.Claim, now time.Time) bool {
	return c != nil && s.Key == c.ID && s.Fingerprint == c.Fingerprint && now.Before(s.ExpiresAt)
}

// Into sets the stamp's fields in a record written as a bson.M.
func (s Stamp) Into(m bson.M) {
	m[KeyField], m[fingerprintField], m[expiresAtField] = s.Key, s.Fingerprint, s.ExpiresAt
}

// Expired matches the records whose stamp expired at or before now.
func Expired(now time.Time) bson.M { return bson.M{expiresAtField: bson.M{"$lte": now}} }

// Unstamped matches the records with no stamp, or one expired at now.
func Unstamped(now time.Time) bson.M {
	return bson.M{"$or": bson.A{bson.M{expiresAtField: bson.M{"$exists": false}}, Expired(now)}}
}

// Unstamp is the update that takes a record's stamp off.
func Unstamp() bson.M {
	return bson.M{"$unset": bson.M{KeyField: "", fingerprintField: "", expiresAtField: ""}}
}
