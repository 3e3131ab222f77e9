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
// lines up to a blank one or a bullet list item, either of which always
// ends a paragraph, in a quote or a list too): one paragraph holds at most
// maxParagraphMarkers, and the squares of every paragraph's count add up
// to at most maxMarkupWeight.
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
// (or containers nested on one line) to be read in bounded time, or ""
// when it does not. Markers escaped with a backslash are text and do not
// count.
func MarkupProblem(md string) string {
	if msg := markerProblem(md); msg != "" {
		return msg
	}
	if msg := linkProblem(md); msg != "" {
		return msg
	}
	return tableProblem(md)
}

func markerProblem(md string) string {
	var weight int64
	count, start := 0, 1
	end := func() string {
		if count > maxParagraphMarkers {
			return fmt.Sprintf("has a paragraph (from line %d) with %d emphasis, link, code or HTML markers (%s), more than the %d one paragraph may hold: "+
				"separate paragraphs with a blank line, or escape markers meant as text with a backslash", start, count, markerList, maxParagraphMarkers)
		}
		weight += int64(count) * int64(count)
		count = 0
		return ""
	}
	for n, line := 1, ""; md != ""; n++ {
		line, md, _ = strings.Cut(md, "\n")
		if d := nesting(line); d > maxNesting {
			return fmt.Sprintf("has a line (line %d) that opens %d quotes or list items one inside another, more than the %d a line may open", n, d, maxNesting)
		}
		markers, blank := lineMarkers(line)
		if blank || startsItem(line) {
			if msg := end(); msg != "" {
				return msg
			}
			start = n
			if blank {
				start = n + 1
			}
		}
		count += markers
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

// A link's destination is looked for from each "](" to the end of its
// line: unbalanced parentheses ("[a](((" or "[a](<b" repeated, then a long
// run of text) make that work the openers of a paragraph times its length.
// That product is bounded by maxLinkWork per paragraph: about half a second
// at the bound; a 10 KB paragraph with fifty links makes 500,000.
const maxLinkWork = 20_000_000

// linkProblem says why a paragraph of md has too many link openers ("](")
// for its length, or "" when none has.
func linkProblem(md string) string {
	var openers, size int64
	start := 1
	for n, line := 1, ""; md != ""; n++ {
		line, md, _ = strings.Cut(md, "\n")
		if _, blank := lineMarkers(line); blank || startsItem(line) {
			openers, size, start = 0, 0, n
		}
		openers += int64(linkOpeners(line))
		size += int64(len(line)) + 1
		if openers*size > maxLinkWork {
			return fmt.Sprintf("has a paragraph (from line %d) with %d link openers (\"](\") in %d bytes, more than can be checked in bounded time (openers times bytes at most %d): "+
				"close each link's parentheses, separate paragraphs with a blank line, or escape brackets meant as text with a backslash", start, openers, size, maxLinkWork)
		}
	}
	return ""
}

// linkOpeners counts the unescaped "](" of line.
func linkOpeners(line string) int {
	count, escaped := 0, false
	for i := 0; i < len(line); i++ {
		switch {
		case escaped:
			escaped = false
		case line[i] == '\\':
			escaped = true
		case line[i] == ']' && i+1 < len(line) && line[i+1] == '(':
			count++
		}
	}
	return count
}

// GFM tables: the reader gives every row as many cells as the header has,
// so a table's work and memory grow with its rows times its columns, even
// when the rows are short ("|a|a|...|" over "|-|-|...|", then lines of "a").
// A table has at most maxTableColumns columns and maxTableCells cells,
// counted as its rows (header included) times its columns.
const (
	maxTableColumns = 128
	maxTableCells   = 100_000
)

// tableProblem says why a table of md is too large, or "" when none is.
// A table starts at a delimiter row ("|---|:-:|") under a line with a pipe
// and ends at a blank line (or, counted generously, the end of the text).
func tableProblem(md string) string {
	cols, cells, start, prev := 0, 0, 0, ""
	for n, line := 1, ""; md != ""; n++ {
		line, md, _ = strings.Cut(md, "\n")
		row := strings.TrimLeft(line, " \t>")
		switch _, blank := lineMarkers(line); {
		case blank:
			cols = 0
		case isDelimiterRow(row) && (strings.Contains(row, "|") || strings.Contains(prev, "|")):
			cols, cells, start = strings.Count(strings.Trim(strings.TrimSpace(row), "|"), "|")+1, 0, n
			if cols > maxTableColumns {
				return fmt.Sprintf("has a table (line %d) with %d columns, more than the %d a table may have", n, cols, maxTableColumns)
			}
			cells = 2 * cols // its header and delimiter rows
		case cols > 0:
			cells += cols
		}
		if cols > 0 && cells > maxTableCells {
			return fmt.Sprintf("has a table (from line %d) with %d columns and more than %d cells (rows times columns, short rows counted as full), more than a table may hold: "+
				"split it into smaller tables separated by a blank line", start-1, cols, maxTableCells)
		}
		prev = row
	}
	return ""
}

// isDelimiterRow reports whether row (its container markers removed) can
// be a table's delimiter row: pipes, colons, spaces and at least one "-",
// not only hyphens.
func isDelimiterRow(row string) bool {
	return strings.Contains(row, "-") && strings.Trim(row, "-") != "" && strings.Trim(row, "|-: \t\r") == ""
}

// startsItem reports whether line starts a bullet list item wherever it
// comes ("- x" at most three spaces in, with some content): that always
// ends the paragraph before it, in a quote or a list too (it can be no
// lazy continuation line).
func startsItem(line string) bool {
	rest := strings.TrimLeft(line, " ")
	return len(line)-len(rest) <= 3 && len(rest) > 2 && strings.IndexByte("-+*", rest[0]) >= 0 &&
		(rest[1] == ' ' || rest[1] == '\t') && strings.TrimSpace(rest[2:]) != ""
}

// maxNesting bounds the block quotes and list items one line opens, one
// inside the other ("- - - a", "> > a"): the reader's work on a line grows
// with the square of that depth.
const maxNesting = 32

// lineMarkers counts the unescaped inline markers of a line, and says
// whether it is blank (spaces, tabs and quote markers only), which ends a
// paragraph.
func lineMarkers(line string) (markers int, blank bool) {
	blank, escaped := true, false
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case escaped:
			escaped = false
		case c == '\\':
			escaped = true
		case strings.IndexByte(markupMarkers, c) >= 0:
			markers++
		}
		if c != ' ' && c != '\t' && c != '\r' && c != '>' {
			blank = false
		}
	}
	return markers, blank
}

// nesting counts the container markers a line starts with: block quote
// markers, and list markers ("-", "+", "*", "1." or "1)" followed by a
// space or a tab), spaces between them skipped.
func nesting(line string) int {
	depth := 0
	for {
		line = strings.TrimLeft(line, " \t")
		switch {
		case strings.HasPrefix(line, ">"):
			line = line[1:]
		case len(line) > 1 && strings.IndexByte("-+*", line[0]) >= 0 && (line[1] == ' ' || line[1] == '\t'):
			line = line[2:]
		default:
			digits := len(line) - len(strings.TrimLeft(line, "0123456789"))
			if digits == 0 || digits > 9 || len(line) < digits+2 || (line[digits] != '.' && line[digits] != ')') ||
				(line[digits+1] != ' ' && line[digits+1] != '\t') {
				return depth
			}
			line = line[digits+2:]
		}
		depth++
	}
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

const checkEvery = 32

func (s *parseStop) check() {
	s.calls++
	if s.calls%checkEvery == 0 {
		if err := s.ctx.Err(); err != nil {
			panic(stopped{err})
		}
	}
}

// stopChecker checks at the end of every paragraph's block reading, which
// precedes the inline reading of them all, before the table transformer
// (priority 200) and after it.
type stopChecker struct{}

func (stopChecker) Transform(_ *ast.Paragraph, _ text.Reader, pc parser.Context) {
	if s, ok := pc.Get(stopKey).(*parseStop); ok {
		if err := s.ctx.Err(); err != nil {
			panic(stopped{err})
		}
	}
}

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
