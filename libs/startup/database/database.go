// Package database opens a service's MongoDB client at start-up and
// creates its stores' indexes. It is apart from package startup so that
// the services without a database (the gateway, the console) link no
// MongoDB driver.
package database

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/doclib/libs/mongox"
	"github.com/doclib/libs/startup"
)

// Open opens the MongoDB client for uri, has p disconnect it when it
// stops (before telemetry flushes), and checks that the server runs
// transactions: every write is one, and a standalone MongoDB fails here,
// clearly.
func Open(ctx context.Context, p *startup.Process, uri string) (*mongo.Client, error) {
	db, err := mongox.Connect(uri)
	if err != nil {
		return nil, err
	}
	p.OnStop("mongodb", db.Disconnect)
	if err := mongox.CheckTransactions(ctx, db); err != nil {
		return nil, err
	}
	return db, nil
}

// Indexed is a store that creates its indexes at start-up.
type Indexed interface {
	EnsureIndexes(ctx context.Context) error
}

// EnsureIndexes creates the indexes of every store, in order, wording a
// failure as the database being out of reach (it is the first call).
func EnsureIndexes(ctx context.Context, stores ...Indexed) error {
	for _, s := range stores {
		if err := s.EnsureIndexes(ctx); err != nil {
			return mongox.IndexError(err)
		}
	}
	return nil
}
