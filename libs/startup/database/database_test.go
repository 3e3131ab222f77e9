package database

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/doclib/libs/config"
	"github.com/doclib/libs/startup"
)

type failing struct{ err error }

func (f failing) EnsureIndexes(context.Context) error { return f.err }

func TestEnsureIndexesNamesTheDatabase(t *testing.T) {
	ctx := context.Background()
	if err := EnsureIndexes(ctx, failing{}, failing{}); err != nil {
		t.Fatalf("no failure: %v", err)
	}
	cause := errors.New("server selection timeout")
	err := EnsureIndexes(ctx, failing{}, failing{cause})
	if !errors.Is(err, cause) || !strings.Contains(err.Error(), "MONGODB_URI") {
		t.Fatalf("error %v: want the cause, worded as the database out of reach", err)
	}
}

func TestOpenRefusesABadURI(t *testing.T) {
	p, err := startup.Begin(context.Background(), "test", config.FromEnviron(), "error")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	if _, err := Open(context.Background(), p, "mongodb://%zz"); err == nil {
		t.Fatal("a URI that does not parse opened")
	}
}
