package document

import (
	"bytes"
	"context"
	"html"
	"net/url"
	"sort"
	"strings"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"

	"github.com/doclib/libs/validation"
)

// SanitizeMarkdown returns md with what could run script in a client that
// renders it made safe with htmlPolicy, the policy of HTML documents: raw
// HTML (blocks and inline tags) is replaced by its sanitised form, and a
// link, image, autolink or link reference definition whose destination the
// policy would drop (javascript:, vbscript:, data: other than raster images
// as an image...) gets an empty one instead. Everything else, code blocks and code
// spans included, is kept byte for byte: text that is safe comes back as it
// was sent.
//
// The Markdown is read by github.com/yuin/goldmark, as CommonMark and as
// GitHub Flavored Markdown (whose table cells split code spans at pipes, so
// a link hidden in a code span for one can be live for the other), until
// neither finds anything left to change.
//
// Text with more inline markers than can be read in bounded time
// (MarkupProblem) is refused with a validation error on "content" before
// any parsing, and the parse stops with ctx's error once ctx ends.
func SanitizeMarkdown(ctx context.Context, md string) (string, error) {
	if msg := MarkupProblem(md); msg != "" {
		var errs validation.Errors
		errs.Add("content", "%s", msg)
		return "", errs.Err()
	}
	for range maxMarkdownPasses {
		out := md
		for _, p := range markdownParsers {
			var err error
			if out, err = sanitizeMarkdownOnce(ctx, p, out); err != nil {
				return "", err
			}
		}
		if out == md {
			return md, nil
		}
		md = out
	}
	// Not settled after several passes (not seen in practice): keep nothing
	// a renderer could take for markup.
	return html.EscapeString(md), nil
}

const maxMarkdownPasses = 4

// markdownParsers read Markdown as CommonMark and as GFM (tables,
// strikethrough, task lists; bare-URL autolinks are plain text to us, and
// their schemes are http, https, ftp and mailto anyway).
var markdownParsers = []parser.Parser{
	newMarkdownParser(),
	goldmark.New(goldmark.WithParser(newMarkdownParser()),
		goldmark.WithExtensions(extension.Table, extension.Strikethrough, extension.TaskList)).Parser(),
}

// newMarkdownParser is goldmark's CommonMark parser with every inline parser
// wrapped so that the source span of what it parses is recorded: goldmark
// keeps no offsets for a link's destination or an autolink.
func newMarkdownParser() parser.Parser {
	inlines := parser.DefaultInlineParsers()
	for i, v := range inlines {
		inlines[i] = util.Prioritized(spanRecorder{v.Value.(parser.InlineParser)}, v.Priority)
	}
	transformers := append(parser.DefaultParagraphTransformers(), util.Prioritized(stopChecker{}, 1000), util.Prioritized(stopChecker{}, 10))
	return parser.NewParser(
		parser.WithBlockParsers(parser.DefaultBlockParsers()...),
		parser.WithInlineParsers(inlines...),
		parser.WithParagraphTransformers(transformers...),
	)
}

var spansKey = parser.NewContextKey()

// span is a node's source range: for a link or an image, from its closing
// ']' to the end of its destination; for an autolink, from '<' to '>'.
type span struct{ start, stop int }

type spanRecorder struct{ parser.InlineParser }

func (r spanRecorder) Parse(parent ast.Node, block text.Reader, pc parser.Context) ast.Node {
	checkStop(pc)
	_, seg := block.PeekLine()
	n := r.InlineParser.Parse(parent, block, pc)
	switch n.(type) {
	case *ast.Link, *ast.Image, *ast.AutoLink:
		_, after := block.Position()
		spans, _ := pc.Get(spansKey).(map[ast.Node]span)
		if spans == nil {
			spans = map[ast.Node]span{}
			pc.Set(spansKey, spans)
		}
		spans[n] = span{seg.Start, after.Start}
	}
	return n
}

func (r spanRecorder) CloseBlock(parent ast.Node, block text.Reader, pc parser.Context) {
	if c, ok := r.InlineParser.(parser.CloseBlocker); ok {
		c.CloseBlock(parent, block, pc)
	}
}

// edit replaces src[start:stop] with with.
type edit struct {
	start, stop int
	with        string
}

func sanitizeMarkdownOnce(ctx context.Context, p parser.Parser, md string) (_ string, err error) {
	defer recoverStop(&err)
	src := []byte(md)
	pc := withStop(ctx)
	doc := p.Parse(text.NewReader(src), parser.WithContext(pc))
	spans, _ := pc.Get(spansKey).(map[ast.Node]span)
	safe := destinationCache{}
	var edits []edit
	_ = ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch n := n.(type) {
		case *ast.HTMLBlock:
			segs := n.Lines().Sliced(0, n.Lines().Len())
			if n.HasClosure() {
				segs = append(segs, n.ClosureLine)
			}
			edits = append(edits, rawHTMLEdits(src, segs, true)...)
		case *ast.RawHTML:
			edits = append(edits, rawHTMLEdits(src, n.Segments.Sliced(0, n.Segments.Len()), false)...)
		case *ast.Link:
			if s, ok := spans[n]; ok && n.Reference == nil && !safe.check(n.Destination, false) {
				edits = append(edits, edit{s.start, s.stop, "]()"})
			}
		case *ast.Image:
			if s, ok := spans[n]; ok && n.Reference == nil && !safe.check(n.Destination, true) {
				edits = append(edits, edit{s.start, s.stop, "]()"})
			}
		case *ast.AutoLink:
			if s, ok := spans[n]; ok && src[s.start] == '<' && !safe.check(n.URL(src), false) {
				edits = append(edits, edit{s.start, s.start, `\`}) // \<...> is text
			}
		case *ast.LinkReferenceDefinition:
			// A reference link takes the definition's destination: check
			// it here, as both a link and an image may use it.
			if l := n.Lines(); l.Len() > 0 && (!safe.check(n.Destination, false) || !safe.check(n.Destination, true)) {
				edits = append(edits, edit{l.At(0).Start, l.At(l.Len() - 1).Stop, "[" + string(n.Label) + "]: <>"})
			}
		}
		return ast.WalkContinue, nil
	})
	return apply(md, edits), nil
}

// rawHTMLEdits sanitises raw HTML found in segs (one per source line) and
// returns the edits that put the result in place, none when it is already
// safe. Contiguous lines are replaced as one; lines separated by a
// container's markers ("> ", list indentation) keep their line structure:
// the sanitised HTML goes on the first line, the others keep only their
// line break. block keeps line breaks of contiguous HTML blocks (a pre).
func rawHTMLEdits(src []byte, segs []text.Segment, block bool) []edit {
	if len(segs) == 0 {
		return nil
	}
	var joined bytes.Buffer
	contiguous := true
	for i, s := range segs {
		joined.Write(s.Value(src))
		if i > 0 && s.Start != segs[i-1].Stop {
			contiguous = false
		}
	}
	clean := htmlPolicy.Sanitize(joined.String())
	if clean == joined.String() {
		return nil
	}
	if contiguous && block {
		return []edit{{segs[0].Start, segs[len(segs)-1].Stop, clean}}
	}
	if lines := strings.SplitAfter(clean, "\n"); len(lines) >= len(segs) {
		// Line for line when sanitising kept the line count (a tag
		// spanning lines is rewritten on one, so then it did not).
		if lines[len(lines)-1] == "" {
			lines = lines[:len(lines)-1]
		}
		if e, ok := lineEdits(src, segs, lines); ok {
			return e
		}
	}
	oneLine := strings.ReplaceAll(strings.ReplaceAll(clean, "\r", " "), "\n", " ")
	out := make([]edit, 0, len(segs))
	for i, s := range segs {
		with := ""
		if i == 0 {
			with = oneLine
		}
		if v := s.Value(src); bytes.HasSuffix(v, []byte("\n")) {
			with = strings.TrimRight(with, " ") + "\n"
		}
		out = append(out, edit{s.Start, s.Stop, with})
	}
	return out
}

// lineEdits replaces each segment by the line of the same rank, when both
// have the same count and end their lines alike.
func lineEdits(src []byte, segs []text.Segment, lines []string) ([]edit, bool) {
	if len(lines) != len(segs) {
		return nil, false
	}
	out := make([]edit, len(segs))
	for i, s := range segs {
		if bytes.HasSuffix(s.Value(src), []byte("\n")) != strings.HasSuffix(lines[i], "\n") {
			return nil, false
		}
		out[i] = edit{s.Start, s.Stop, lines[i]}
	}
	return out, true
}

// destinationCache remembers safeDestination's answers within one document,
// which often links the same places many times.
type destinationCache map[string]bool

func (c destinationCache) check(dest []byte, image bool) bool {
	key := string(dest)
	if image {
		key = "\x00" + key
	}
	ok, seen := c[key]
	if !seen {
		ok = safeDestination(dest, image)
		c[key] = ok
	}
	return ok
}

// safeDestination reports whether htmlPolicy keeps dest as a link's href
// (or an image's src), read both as written and as a renderer resolves it
// (backslash escapes, entities, percent-encoding), so that no spelling of
// javascript: gets through. A link to data: is never safe, even to an image.
func safeDestination(dest []byte, image bool) bool {
	resolved := string(util.URLEscape(dest, true))
	forms := []string{string(dest)}
	if resolved != forms[0] {
		forms = append(forms, resolved)
	}
	if u, err := url.PathUnescape(resolved); err == nil && u != resolved {
		forms = append(forms, u)
	}
	for _, f := range forms {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		if !image && strings.HasPrefix(strings.ToLower(f), "data:") {
			return false
		}
		if !policyKeepsURL(f, image) {
			return false
		}
	}
	return true
}

func policyKeepsURL(u string, image bool) bool {
	if image {
		return strings.Contains(htmlPolicy.Sanitize(`<img src="`+html.EscapeString(u)+`">`), " src=")
	}
	return strings.Contains(htmlPolicy.Sanitize(`<a href="`+html.EscapeString(u)+`">x</a>`), " href=")
}

// apply makes the edits to s. Edits never overlap (they come from distinct
// nodes); should two, the later one is dropped.
func apply(s string, edits []edit) string {
	if len(edits) == 0 {
		return s
	}
	sort.SliceStable(edits, func(i, j int) bool { return edits[i].start < edits[j].start })
	var b strings.Builder
	at := 0
	for _, e := range edits {
		if e.start < at {
			continue
		}
		b.WriteString(s[at:e.start])
		b.WriteString(e.with)
		at = e.stop
	}
	b.WriteString(s[at:])
	return b.String()
}
