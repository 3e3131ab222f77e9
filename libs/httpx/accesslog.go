package httpx

import (
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gin-gonic/gin"
)

// The access log at the default level (info) logs every request that
// matters one by one: every error (4xx and 5xx), every back-office
// request, every write, every request slower than slowRequest. Successful
// public reads, nearly all of the traffic and the same few routes over and
// over, are sampled: at most readsPerSecond lines a second per listener,
// each saying how many were left out before it (reads_unlogged); the
// request metrics count every one of them, and traces are not sampled
// here. At debug every request is logged.
//
// Why sampling rather than a buffered, asynchronous writer: profiled, a
// line's write(2) was about 60 % of its cost and its encoding (slog's JSON
// and caller lookup) the rest, and the line was half of the middleware's
// time; a buffer saves only the write, loses the last lines when the
// process dies and holds back the lines of an incident. zap's production
// configuration samples the same way.
const (
	readsPerSecond = 10
	slowRequest    = 500 * time.Millisecond
)

func accessLog(log *slog.Logger) gin.HandlerFunc {
	reads := &readSampler{}
	return func(c *gin.Context) {
		start := time.Now()
		c.Next()
		if !notProbe(c) {
			return
		}
		status := c.Writer.Status()
		level := slog.LevelInfo
		switch {
		case status >= 500:
			level = slog.LevelError
		case status == http.StatusNotModified:
			// A revalidation sent nothing: the catalog's every 10 s, the
			// gateway cache's, an app's. At info an idle system would log.
			level = slog.LevelDebug
		}
		if !log.Enabled(c, level) {
			return
		}
		took := time.Since(start)
		var unlogged int64
		if quietRead(c, status, took) && !log.Enabled(c, slog.LevelDebug) {
			var ok bool
			if ok, unlogged = reads.take(start); !ok {
				return
			}
		}
		writeAccessLine(log, c, level, status, took, unlogged)
	}
}

func writeAccessLine(log *slog.Logger, c *gin.Context, level slog.Level, status int, took time.Duration, unlogged int64) {
	attrs := []any{
		"method", c.Request.Method, "route", c.FullPath(), "path", c.Request.URL.Path,
		"status", status, "bytes", c.Writer.Size(), "duration_ms", took.Milliseconds(),
		"request_id", c.Writer.Header().Get(RequestIDHeader),
	}
	if unlogged > 0 {
		attrs = append(attrs, "reads_unlogged", unlogged)
	}
	if len(c.Errors) > 0 {
		attrs = append(attrs, "error", strings.Join(c.Errors.Errors(), "; "))
	}
	log.Log(c, level, "request", attrs...)
}

// quietRead reports whether the request is a successful, prompt public
// read: the kind the access log samples.
func quietRead(c *gin.Context, status int, took time.Duration) bool {
	m, p := c.Request.Method, c.Request.URL.Path
	return (m == http.MethodGet || m == http.MethodHead) && status < 400 && took < slowRequest &&
		p != "/bo" && !strings.HasPrefix(p, "/bo/")
}

// readSampler lets through the first readsPerSecond reads of each second
// and counts the others. At the turn of a second a few more may pass: it
// is a log, not a limit.
type readSampler struct {
	second   atomic.Int64 // Unix time of the current second
	taken    atomic.Int64 // reads seen in it
	unlogged atomic.Int64 // reads left out since the last one logged
}

// take reports whether a read at now is logged and, if it is, how many
// were left out before it.
func (s *readSampler) take(now time.Time) (ok bool, unlogged int64) {
	sec := now.Unix()
	if cur := s.second.Load(); cur != sec && s.second.CompareAndSwap(cur, sec) {
		s.taken.Store(0)
	}
	if s.taken.Add(1) > readsPerSecond {
		s.unlogged.Add(1)
		return false, 0
	}
	return true, s.unlogged.Swap(0)
}
