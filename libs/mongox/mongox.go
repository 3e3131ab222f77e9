// Package mongox connects a service to MongoDB with bounded timeouts and
// OpenTelemetry client spans, and classifies driver errors.
package mongox

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/event"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/readpref"
	"go.mongodb.org/mongo-driver/v2/x/mongo/driver"
	"go.mongodb.org/mongo-driver/v2/x/mongo/driver/topology"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// Connect opens a client for uri. A dependency that is down makes calls fail
// within a few seconds (server selection 5s, each operation 10s at most)
// instead of hanging. The connection itself is lazy: use Ping for readiness.
func Connect(uri string) (*mongo.Client, error) {
	opts := options.Client().ApplyURI(uri).
		SetAppName("doclib").
		SetConnectTimeout(5 * time.Second).
		SetServerSelectionTimeout(5 * time.Second).
		SetTimeout(10 * time.Second).
		SetMonitor(newTracer())
	c, err := mongo.Connect(opts)
	if err != nil && strings.Contains(err.Error(), "password") {
		// The driver quotes the offending part of the password.
		return nil, errors.New("mongodb client: error parsing uri: the password is not valid (escape '%', '@', ':' and '/' as %XX); not shown")
	}
	if err != nil {
		return nil, fmt.Errorf("mongodb client: %w", err)
	}
	return c, nil
}

// IndexError words a failure to ensure a store's indexes, the first
// operation that reaches MongoDB (Connect does not).
func IndexError(err error) error {
	return fmt.Errorf("mongodb indexes (is MONGODB_URI reachable?): %w", err)
}

// Ping is a readiness check for c.
func Ping(c *mongo.Client) func(context.Context) error {
	return func(ctx context.Context) error { return c.Ping(ctx, readpref.Primary()) }
}

// IsUnavailable reports whether err means the database could not be reached
// in time or is changing primaries, as opposed to a bug or a refused
// command: such errors are answered 503, and events wait for the database.
func IsUnavailable(err error) bool {
	var sel topology.ServerSelectionError
	// A pool cleared after another operation's network error fails the
	// operations waiting on it at once, without the network label.
	var cleared driver.RetryablePoolError
	if mongo.IsNetworkError(err) || mongo.IsTimeout(err) || errors.As(err, &sel) ||
		(errors.As(err, &cleared) && cleared.Retryable()) ||
		errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, mongo.ErrClientDisconnected) {
		return true
	}
	var se mongo.ServerError
	if !errors.As(err, &se) {
		return false
	}
	if se.HasErrorLabel("RetryableWriteError") {
		return true
	}
	for _, code := range stepdownCodes {
		if se.HasErrorCode(code) {
			return true
		}
	}
	return false
}

// stepdownCodes are the server errors of a replica set changing primaries
// or shutting down, which the driver retries on retryable writes only (an
// UpdateMany is not one): HostUnreachable, HostNotFound, NetworkTimeout,
// ShutdownInProgress, PrimarySteppedDown, ExceededTimeLimit,
// SocketException, NotWritablePrimary, InterruptedAtShutdown,
// InterruptedDueToReplStateChange, NotPrimaryNoSecondaryOk,
// NotPrimaryOrSecondary.
var stepdownCodes = []int{6, 7, 89, 91, 189, 262, 9001, 10107, 11600, 11602, 13435, 13436}

// tracer turns command events into client spans. The command body is never
// recorded: it holds user data.
type tracer struct {
	t     trace.Tracer
	spans sync.Map // request id -> trace.Span
}

func newTracer() *event.CommandMonitor {
	tr := &tracer{t: otel.Tracer("github.com/doclib/libs/mongox")}
	return &event.CommandMonitor{Started: tr.started, Succeeded: tr.succeeded, Failed: tr.failed}
}

func (tr *tracer) started(ctx context.Context, e *event.CommandStartedEvent) {
	if !trace.SpanFromContext(ctx).SpanContext().IsValid() {
		return // only commands made on behalf of a traced request
	}
	attrs := []attribute.KeyValue{
		attribute.String("db.system.name", "mongodb"),
		attribute.String("db.namespace", e.DatabaseName),
		attribute.String("db.operation.name", e.CommandName),
		attribute.String("server.address", strings.Split(e.ConnectionID, "[")[0]),
	}
	name := e.CommandName
	if coll, ok := e.Command.Lookup(e.CommandName).StringValueOK(); ok {
		attrs = append(attrs, attribute.String("db.collection.name", coll))
		name += " " + coll
	}
	_, span := tr.t.Start(ctx, name, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	tr.spans.Store(e.RequestID, span)
}

func (tr *tracer) succeeded(_ context.Context, e *event.CommandSucceededEvent) {
	if s, ok := tr.spans.LoadAndDelete(e.RequestID); ok {
		s.(trace.Span).End()
	}
}

func (tr *tracer) failed(_ context.Context, e *event.CommandFailedEvent) {
	if s, ok := tr.spans.LoadAndDelete(e.RequestID); ok {
		span := s.(trace.Span)
		span.SetStatus(codes.Error, e.Failure.Error())
		span.End()
	}
}

// Index returns an index model with an explicit name. Each model gets its
// own options: the v2 driver writes the generated name into a shared
// options builder, so reusing one across models makes their names collide.
func Index(name string, unique bool, keys ...string) mongo.IndexModel {
	d := bson.D{}
	for _, k := range keys {
		d = append(d, bson.E{Key: k, Value: 1})
	}
	return mongo.IndexModel{Keys: d, Options: options.Index().SetName(name).SetUnique(unique)}
}

// EnsureIndexes creates the indexes of coll that do not exist yet. It is
// idempotent and safe when several replicas start together: MongoDB skips
// an index identical to an existing one, and refuses one whose name or key
// an existing index has with other keys or options.
func EnsureIndexes(ctx context.Context, coll *mongo.Collection, models ...mongo.IndexModel) error {
	if len(models) == 0 {
		return nil
	}
	if _, err := coll.Indexes().CreateMany(ctx, models); err != nil {
		return fmt.Errorf("create indexes on %s: %w", coll.Name(), err)
	}
	return nil
}
