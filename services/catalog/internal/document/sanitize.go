package document

import (
	"context"
	"encoding/base64"
	"net/url"
	"regexp"
	"strings"

	"github.com/microcosm-cc/bluemonday"
)

// htmlPolicy is built once (policies are safe for concurrent use once
// built). It keeps what an article needs (headings, paragraphs, lists,
// tables, links with safe schemes, images, emphasis, code, quotes) and drops
// scripts, event-handler attributes, javascript: URLs, iframes, forms and
// style attributes and elements. HTML documents and the raw HTML and
// destinations of Markdown documents (SanitizeMarkdown) share it.
var htmlPolicy = func() *bluemonday.Policy {
	p := bluemonday.UGCPolicy()
	p.AllowURLSchemes("http", "https", "mailto")
	// Inline raster images (data:image/png;base64,...), never SVG, which
	// can carry script.
	p.AllowURLSchemeWithCustomPolicy("data", func(u *url.URL) bool {
		m := dataImage.FindString(u.Opaque)
		if m == "" || u.RawQuery != "" || u.Fragment != "" {
			return false
		}
		_, err := base64.StdEncoding.DecodeString(u.Opaque[len(m):])
		return err == nil
	})
	p.RequireNoFollowOnLinks(true)
	p.AddTargetBlankToFullyQualifiedLinks(true)
	p.RequireNoReferrerOnLinks(true)
	return p
}()

var dataImage = regexp.MustCompile(`^image/(gif|jpeg|png|webp);base64,`)

// SanitizeHTML returns html with everything that can run script removed.
// The sanitiser reads the text as it goes, and stops with ctx's error once
// ctx ends.
func SanitizeHTML(ctx context.Context, html string) (string, error) {
	if strings.TrimSpace(html) == "" {
		return html, nil
	}
	var out strings.Builder
	out.Grow(len(html))
	if err := htmlPolicy.SanitizeReaderToWriter(ctxReader{ctx, strings.NewReader(html)}, &out); err != nil {
		return "", err
	}
	return out.String(), nil
}
