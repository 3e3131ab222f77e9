package document

import (
	"bytes"
	"context"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/renderer/html"

	"github.com/doclib/libs/validation"
)

// previewRenderer turns Markdown into HTML for a preview: GitHub Flavored
// Markdown, the richer of the two readings SanitizeMarkdown checks, read
// by the parser that stops with its context. Raw HTML is passed through
// because it was sanitised before and the result is sanitised again.
var previewRenderer = goldmark.New(
	goldmark.WithParser(newMarkdownParser()),
	goldmark.WithExtensions(extension.Table, extension.Strikethrough, extension.TaskList),
	goldmark.WithRendererOptions(html.WithUnsafe()),
)

// Preview is what a text would be once stored: Content as the API would
// keep it, HTML as a client shows it.
type Preview struct {
	Content string
	HTML    string
}

// RenderPreview sanitises content of type t (MARKDOWN or HTML) exactly as
// a create or update would, and renders it as HTML, sanitised again with
// the policy of HTML documents. Nothing is stored. An empty text is an
// empty preview, not an error: a person may not have typed anything yet.
// A large Markdown text takes a while (about 1.6 s for 1 MiB): once ctx
// ends (the person typed on or left, the budget passed) every step stops
// with ctx's error, within a paragraph's reading.
func RenderPreview(ctx context.Context, t, content string) (Preview, error) {
	if err := CheckPreview(t, content); err != nil {
		return Preview{}, err
	}
	clean, err := sanitize(ctx, Type(t), content)
	if err != nil {
		return Preview{}, err
	}
	if Type(t) == HTML {
		return Preview{Content: clean, HTML: clean}, nil
	}
	out, err := render(ctx, clean)
	if err != nil {
		return Preview{}, err
	}
	shown, err := SanitizeHTML(ctx, out)
	if err != nil {
		return Preview{}, err
	}
	return Preview{Content: clean, HTML: shown}, nil
}

// render turns sanitised Markdown into HTML, stopping once ctx ends.
func render(ctx context.Context, md string) (_ string, err error) {
	defer recoverStop(&err)
	var out bytes.Buffer
	if err := previewRenderer.Convert([]byte(md), &out, parser.WithContext(withStop(ctx))); err != nil {
		return "", err
	}
	return out.String(), ctx.Err()
}

// CheckPreview says what is wrong with a preview's type and content, nil
// when it can be rendered: checked before a preview waits for its turn,
// so a request refused anyway takes no one's.
func CheckPreview(t, content string) error {
	var errs validation.Errors
	switch Type(t) {
	case Markdown, HTML:
	default:
		errs.Add("type", "must be MARKDOWN or HTML (the types with a text to preview)")
	}
	if len(content) > MaxContent {
		errs.Add("content", "must be at most %d bytes (got %d)", MaxContent, len(content))
	} else if Type(t) == Markdown {
		if msg := MarkupProblem(content); msg != "" {
			errs.Add("content", "%s", msg)
		}
	}
	return errs.Err()
}
