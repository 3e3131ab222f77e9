package changes

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/doclib/libs/events"
	"github.com/doclib/libs/problem"
)

// serve runs one stream until its client leaves, the gateway shuts down,
// the client stops reading or NATS fails it; the consumer goes with it.
func (s *Server) serve(w http.ResponseWriter, r *http.Request, a Audience, after *uint64) error {
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	start, reset, err := s.startAt(ctx, after)
	if err != nil {
		problem.Write(w, unavailable())
		return err
	}
	cons, err := s.js.OrderedConsumer(ctx, events.Stream, jetstream.OrderedConsumerConfig{
		FilterSubjects: a.Subjects(), DeliverPolicy: jetstream.DeliverByStartSequencePolicy, OptStartSeq: start,
		// Removed by the server should this replica die without removing it.
		InactiveThreshold: time.Minute,
	})
	if err != nil {
		problem.Write(w, unavailable())
		return fmt.Errorf("%w: %w", errUnavailable, err)
	}
	it, err := cons.Messages(jetstream.PullMaxMessages(pullBatch))
	if err != nil {
		problem.Write(w, unavailable())
		return fmt.Errorf("%w: %w", errUnavailable, err)
	}
	s.wg.Add(1)
	msgs, failed, exited := receive(ctx, it)
	defer func() {
		cancel()
		it.Stop()
		<-exited
		s.removeConsumer(cons)
		s.wg.Done()
	}()

	out := newWriter(w, s.cfg.WriteTimeout)
	writeHeaders(w)
	w.WriteHeader(http.StatusOK)
	if err := out.write(fmt.Appendf(nil, ": changes of the library\nretry: %d\n\n", retryMillis)); err != nil {
		return err
	}
	if reset {
		if err := out.message(resetMessage(start - 1)); err != nil {
			return err
		}
	}
	return s.follow(ctx, out, a, msgs, failed)
}

// follow sends what msgs brings, and a heartbeat comment between.
func (s *Server) follow(ctx context.Context, out *writer, a Audience, msgs <-chan jetstream.Msg, failed <-chan error) error {
	beat := time.NewTicker(s.cfg.Heartbeat)
	defer beat.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-s.done:
			return nil
		case err := <-failed:
			return err
		case <-beat.C:
			if err := out.write([]byte(": heartbeat\n\n")); err != nil {
				return err
			}
		case m := <-msgs:
			md, err := m.Metadata()
			if err != nil {
				return err
			}
			var e events.Envelope
			if err := json.Unmarshal(m.Data(), &e); err != nil {
				s.log.WarnContext(ctx, "an event that is not an envelope, left out", "seq", md.Sequence.Stream, "error", err)
				continue
			}
			if msg, ok := a.Of(md.Sequence.Stream, e); ok {
				if err := out.message(msg); err != nil {
					return err
				}
			}
		}
	}
}

// receive hands it's messages over one at a time until ctx ends or it
// fails (failed); exited is closed once it no longer reads.
func receive(ctx context.Context, it jetstream.MessagesContext) (msgs <-chan jetstream.Msg, failed <-chan error, exited <-chan struct{}) {
	m, f, x := make(chan jetstream.Msg), make(chan error, 1), make(chan struct{})
	go func() {
		defer close(x)
		for {
			msg, err := it.Next()
			if err != nil {
				f <- err
				return
			}
			select {
			case m <- msg:
			case <-ctx.Done():
				return
			}
		}
	}()
	return m, f, x
}

// startAt is the stream sequence a stream starts at: after the client's
// last id, or after the newest message without one; reset when the
// client's id is not one the stream can resume from (from before its
// oldest message kept, or beyond its newest: a stream made anew).
func (s *Server) startAt(ctx context.Context, after *uint64) (start uint64, reset bool, err error) {
	ictx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	st, err := s.js.Stream(ictx, events.Stream)
	if err != nil {
		return 0, false, fmt.Errorf("%w: %w", errUnavailable, err)
	}
	state := st.CachedInfo().State
	if after == nil {
		return state.LastSeq + 1, false, nil
	}
	if n := *after; n <= state.LastSeq && n+1 >= state.FirstSeq {
		return n + 1, false, nil
	}
	return state.LastSeq + 1, true, nil
}

// removeConsumer deletes a stream's consumer at once rather than leave
// it to the server's inactivity threshold: thousands of clients that
// come and go must not leave thousands of consumers behind.
func (s *Server) removeConsumer(cons jetstream.Consumer) {
	info := cons.CachedInfo()
	if info == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.js.DeleteConsumer(ctx, events.Stream, info.Name); err != nil {
		s.log.Debug("could not remove a stream's consumer; the server will", "consumer", info.Name, "error", err)
	}
}

// writer writes a stream's frames, each flushed at once and within the
// write timeout.
type writer struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
}

func newWriter(w http.ResponseWriter, timeout time.Duration) *writer {
	rc := http.NewResponseController(w)
	// The server's read timeout would end a long stream: nothing more is
	// read from the client; its leaving still ends the request.
	_ = rc.SetReadDeadline(time.Time{})
	return &writer{w: w, rc: rc, timeout: timeout}
}

func (o *writer) write(b []byte) error {
	_ = o.rc.SetWriteDeadline(time.Now().Add(o.timeout)) // not every writer has deadlines (tests)
	if _, err := o.w.Write(b); err != nil {
		return err
	}
	return o.rc.Flush()
}

func (o *writer) message(m Message) error {
	b, err := m.frame()
	if err != nil {
		return err
	}
	return o.write(b)
}
