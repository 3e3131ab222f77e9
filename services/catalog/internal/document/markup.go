package document

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/text"
)

// The Markdown reader's delimiter handling (emphasis, links) costs the
// square of the markers one paragraph holds when they do not pair up:
// "*a_" or "[](" repeated over 96 KB takes seconds. Its cost is bounded
// before any parsing, by counting the markers of each paragraph (a run of
// lines up to a blank one, which always ends a paragraph, in a quote or a
// list too): one paragraph holds at most maxParagraphMarkers, and the
// squares of every paragraph's count add up to at most maxMarkupWeight.
// Measured on two loaded cores, the worst arrangement within both bounds
// takes about a second, a paragraph at the bound about 0.1 s; ordinary
// text, even 1 MiB of it, stays far below (a paragraph with twenty links
// holds about eighty markers).
const (
	maxParagraphMarkers = 3000
	maxMarkupWeight     = 40_000_000
	markupMarkers       = "*_~`[]<"
)

// MarkupProblem says why the Markdown text md holds too many inline markers
// to be read in bounded time, or "" when it does not. Markers escaped with
// a backslash are text and do not count.
func MarkupProblem(md string) string {
	var weight int64
	count, start, line := 0, 1, 1
	blank, escaped := true, false
	end := func() string {
		if count > maxParagraphMarkers {
			return fmt.Sprintf("has a paragraph (from line %d) with %d emphasis, link, code or HTML markers (%s), more than the %d one paragraph may hold: "+
				"separate paragraphs with a blank line, or escape markers meant as text with a backslash", start, count, markerList, maxParagraphMarkers)
		}
		weight += int64(count) * int64(count)
		count = 0
		return ""
	}
	for i := 0; i < len(md); i++ {
		c := md[i]
		switch {
		case c == '\n':
			if blank {
				if msg := end(); msg != "" {
					return msg
				}
				start = line + 1
			}
			line++
			blank, escaped = true, false
			continue
		case escaped:
			escaped = false
		case c == '\\':
			escaped = true
		case strings.IndexByte(markupMarkers, c) >= 0:
			count++
		}
		if c != ' ' && c != '\t' && c != '\r' && c != '>' {
			blank = false
		}
	}
	if msg := end(); msg != "" {
		return msg
	}
	if weight > maxMarkupWeight {
		return fmt.Sprintf("is too dense in emphasis, link, code and HTML markers (%s) to check in bounded time: its paragraphs' marker counts, squared and added up, make %d, at most %d; "+
			"separate long paragraphs with blank lines, or escape markers meant as text with a backslash", markerList, weight, maxMarkupWeight)
	}
	return ""
}

var markerList = strings.Join(strings.Split(markupMarkers, ""), " ")

// parseStop ends a parse whose context ended: the inline parsers, wrapped
// by spanRecorder, call check, which panics with stopped; sanitizeMarkdownOnce
// and render recover it. The markers bound keep the work between two checks
// short (the longest is one paragraph's delimiter pairing).
type parseStop struct {
	ctx   context.Context
	calls int
}

var stopKey = parser.NewContextKey()

type stopped struct{ err error }

const checkEvery = 256

func (s *parseStop) check() {
	s.calls++
	if s.calls%checkEvery == 0 {
		if err := s.ctx.Err(); err != nil {
			panic(stopped{err})
		}
	}
}

// stopChecker checks at the end of every paragraph's block reading, which
// precedes the inline reading of them all.
type stopChecker struct{}

func (stopChecker) Transform(_ *ast.Paragraph, _ text.Reader, pc parser.Context) { checkStop(pc) }

// withStop returns a parser context whose parse ends when ctx does.
func withStop(ctx context.Context) parser.Context {
	pc := parser.NewContext()
	pc.Set(stopKey, &parseStop{ctx: ctx})
	return pc
}

func checkStop(pc parser.Context) {
	if s, ok := pc.Get(stopKey).(*parseStop); ok {
		s.check()
	}
}

// recoverStop turns a stopped parse into its context's error in *err.
func recoverStop(err *error) {
	if r := recover(); r != nil {
		s, ok := r.(stopped)
		if !ok {
			panic(r)
		}
		*err = s.err
	}
}

// ctxReader reads r in small pieces and fails once ctx has ended, so that
// the HTML sanitiser, which reads as it goes, stops with its request.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

const htmlChunk = 16 << 10

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	if len(p) > htmlChunk {
		p = p[:htmlChunk]
	}
	return c.r.Read(p)
}
