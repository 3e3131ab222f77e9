// Package changes serves the live stream of the library's changes as
// Server-Sent Events: GET /public/changes for the app (what is public) and
// GET /bo/changes for the back-office (every change). Each stream follows
// the LIBRARY JetStream stream with an ordered consumer of its own, from
// the message after the client's Last-Event-ID (the stream sequence), so a
// resume misses nothing and no replica knows of another. A stream holds a
// few messages at most (the consumer's pull batch), whatever the client's
// pace: a client that does not take a message within the write timeout is
// closed, and resumes from its last id.
package changes

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/doclib/libs/problem"
)

// Config bounds the streams of one gateway replica.
type Config struct {
	// Heartbeat is how often an idle stream sends a comment, so that
	// proxies and mobile networks keep it open.
	Heartbeat time.Duration
	// MaxStreams is how many streams the replica serves at once; one more
	// is 503.
	MaxStreams int
	// MaxPerClient is how many streams one client address may have open
	// on the replica; one more is 429. 0: no limit.
	MaxPerClient int
	// WriteTimeout is how long a message may take to reach a client
	// before its stream is closed (a reader that stopped reading).
	WriteTimeout time.Duration
}

// pullBatch is how many messages a stream's consumer asks NATS for at a
// time: what a stream holds in memory at most.
const pullBatch = 16

// retryMillis is the reconnection delay the stream asks EventSource
// clients to wait.
const retryMillis = 3000

// Server serves the streams.
type Server struct {
	js  jetstream.JetStream
	cfg Config
	log *slog.Logger
	// done ends every stream: the gateway is shutting down, and its
	// clients reconnect to another replica.
	done <-chan struct{}

	open      atomic.Int64
	mu        sync.Mutex
	perClient map[string]int
	wg        sync.WaitGroup
}

// New returns a Server reading js; its streams end when ctx is done.
func New(ctx context.Context, js jetstream.JetStream, cfg Config, log *slog.Logger) *Server {
	return &Server{js: js, cfg: cfg, log: log.With("component", "changes"), done: ctx.Done(), perClient: map[string]int{}}
}

// Open returns how many streams are open.
func (s *Server) Open() int64 { return s.open.Load() }

// Wait waits until every stream has ended and released its consumer.
func (s *Server) Wait() { s.wg.Wait() }

// Handler serves the streams of audience a; clientIP finds the address a
// request comes from (behind trusted proxies).
func (s *Server) Handler(a Audience, clientIP func(*http.Request) string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		after, p := lastEventID(r)
		if p != nil {
			problem.Write(w, p)
			return
		}
		release, p := s.admit(clientIP(r))
		if p != nil {
			problem.Write(w, p)
			return
		}
		defer release()
		if r.Method == http.MethodHead {
			writeHeaders(w)
			w.WriteHeader(http.StatusOK)
			return
		}
		if err := s.serve(w, r, a, after); err != nil {
			s.log.DebugContext(r.Context(), "stream ended", "error", err)
		}
	})
}

// lastEventID is the stream sequence the client last received (the
// Last-Event-ID header); ok false without one.
func lastEventID(r *http.Request) (*uint64, *problem.Problem) {
	v := strings.TrimSpace(r.Header.Get("Last-Event-ID"))
	if v == "" {
		return nil, nil
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return nil, problem.BadRequest("Last-Event-ID must be the id of a message of this stream (a decimal number); leave it out to follow from now")
	}
	return &n, nil
}

// admit counts a new stream against the limits, or says why not.
func (s *Server) admit(client string) (release func(), p *problem.Problem) {
	if n := s.open.Add(1); n > int64(s.cfg.MaxStreams) {
		s.open.Add(-1)
		return nil, problem.New(http.StatusServiceUnavailable, "too_many_streams",
			"this gateway replica serves as many live streams as it may; reconnect in a moment (another replica may take it)").
			With("Retry-After", "5")
	}
	s.mu.Lock()
	if s.cfg.MaxPerClient > 0 && s.perClient[client] >= s.cfg.MaxPerClient {
		s.mu.Unlock()
		s.open.Add(-1)
		return nil, problem.New(http.StatusTooManyRequests, "too_many_streams",
			fmt.Sprintf("at most %d live streams per client address; close one first", s.cfg.MaxPerClient)).
			With("Retry-After", "5")
	}
	s.perClient[client]++
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		if s.perClient[client]--; s.perClient[client] <= 0 {
			delete(s.perClient, client)
		}
		s.mu.Unlock()
		s.open.Add(-1)
	}, nil
}

func writeHeaders(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no") // nginx and its kin: pass each message at once
}

// errUnavailable is NATS not answering when a stream starts.
var errUnavailable = errors.New("the event stream is unavailable")

func unavailable() *problem.Problem {
	return problem.New(http.StatusServiceUnavailable, "stream_unavailable",
		"the live stream is unavailable for a moment; reconnect with the same Last-Event-ID").With("Retry-After", "5")
}
