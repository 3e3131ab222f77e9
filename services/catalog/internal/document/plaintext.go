package document

// The words of a MARKDOWN or HTML document, for an app's own search: what
// a reader sees of it, without markup. Read-only: it reads the content as
// the write path stored it (sanitised), with the same Markdown parser and
// bounds (markup.go, markdown.go).

import (
	"context"
	"strings"

	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/text"
	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// PlainText returns the words of a MARKDOWN or HTML document's content:
// its text with the markup taken out, one line per block, runs of spaces
// made one, link and image destinations left out (their text and alt
// kept), code kept as written. Other types have no such text ("").
// Markdown with more markers than can be read in bounded time
// (MarkupProblem; the write path refuses it) is read as plain text. The
// reading stops with ctx's error once ctx ends.
func PlainText(ctx context.Context, t Type, content string) (string, error) {
	switch t {
	case Markdown:
		if MarkupProblem(content) != "" {
			return tidy(content), nil
		}
		return markdownText(ctx, content)
	case HTML:
		var b strings.Builder
		if err := htmlText(ctx, &b, content); err != nil {
			return "", err
		}
		return tidy(b.String()), nil
	}
	return "", nil
}

// markdownText walks the GFM reading of md (tables are text too).
func markdownText(ctx context.Context, md string) (_ string, err error) {
	defer recoverStop(&err)
	src := []byte(md)
	doc := markdownParsers[len(markdownParsers)-1].Parse(text.NewReader(src), parser.WithContext(withStop(ctx)))
	var b strings.Builder
	werr := ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			if n.Type() == ast.TypeBlock || isCell(n) {
				b.WriteByte('\n')
			}
			return ast.WalkContinue, nil
		}
		return markdownNode(ctx, &b, n, src)
	})
	if werr != nil {
		return "", werr
	}
	return tidy(b.String()), nil
}

// isCell reports whether n is a table cell (a GFM extension node), which
// is an inline node that ends a phrase.
func isCell(n ast.Node) bool { return n.Kind().String() == "TableCell" }

// markdownNode writes what n shows of itself to b.
func markdownNode(ctx context.Context, b *strings.Builder, n ast.Node, src []byte) (ast.WalkStatus, error) {
	switch n := n.(type) {
	case *ast.Text:
		b.Write(n.Segment.Value(src))
		if n.SoftLineBreak() || n.HardLineBreak() {
			b.WriteByte('\n')
		}
	case *ast.String:
		b.Write(n.Value)
	case *ast.AutoLink:
		b.Write(n.Label(src))
	case *ast.CodeBlock, *ast.FencedCodeBlock:
		lines := n.Lines()
		for i := 0; i < lines.Len(); i++ {
			seg := lines.At(i)
			b.Write(seg.Value(src))
		}
		return ast.WalkSkipChildren, nil
	case *ast.HTMLBlock:
		var raw strings.Builder
		lines := n.Lines()
		for i := 0; i < lines.Len(); i++ {
			seg := lines.At(i)
			raw.Write(seg.Value(src))
		}
		return ast.WalkSkipChildren, htmlText(ctx, b, raw.String())
	case *ast.RawHTML:
		return ast.WalkSkipChildren, nil // an inline tag: markup only
	}
	return ast.WalkContinue, nil
}

// htmlText writes the text of the HTML fragment s to b: text nodes, a line
// for every block element, nothing of script, style or template elements.
func htmlText(ctx context.Context, b *strings.Builder, s string) error {
	z := html.NewTokenizer(ctxReader{ctx, strings.NewReader(s)})
	hidden := 0
	for {
		switch z.Next() {
		case html.ErrorToken:
			if err := ctx.Err(); err != nil {
				return err
			}
			return nil // io.EOF, or text that ends inside a tag
		case html.TextToken:
			if hidden == 0 { // a line break in HTML text is a space
				b.WriteString(strings.Map(func(r rune) rune {
					if r == '\n' || r == '\r' {
						return ' '
					}
					return r
				}, string(z.Text())))
			}
		case html.StartTagToken, html.EndTagToken, html.SelfClosingTagToken:
			name, _ := z.TagName()
			a := atom.Lookup(name)
			switch {
			case a == atom.Script || a == atom.Style || a == atom.Template:
				hidden = max(0, hidden+hiddenStep(z.Token().Type))
			case blockElements[a]:
				b.WriteByte('\n')
			case a == atom.Td || a == atom.Th:
				b.WriteByte(' ')
			}
		}
	}
}

func hiddenStep(t html.TokenType) int {
	switch t {
	case html.StartTagToken:
		return 1
	case html.EndTagToken:
		return -1
	}
	return 0
}

// blockElements end a line of text.
var blockElements = map[atom.Atom]bool{
	atom.P: true, atom.Div: true, atom.Br: true, atom.Li: true, atom.Tr: true, atom.H1: true, atom.H2: true,
	atom.H3: true, atom.H4: true, atom.H5: true, atom.H6: true, atom.Pre: true, atom.Blockquote: true,
	atom.Ul: true, atom.Ol: true, atom.Table: true, atom.Hr: true, atom.Section: true, atom.Article: true,
	atom.Header: true, atom.Footer: true, atom.Dt: true, atom.Dd: true, atom.Figcaption: true,
}

// tidy makes every run of spaces one space, trims every line and drops
// empty ones.
func tidy(s string) string {
	var out []string
	for line := range strings.Lines(s) {
		if f := strings.Fields(line); len(f) > 0 {
			out = append(out, strings.Join(f, " "))
		}
	}
	return strings.Join(out, "\n")
}
