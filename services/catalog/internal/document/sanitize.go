package document

import "github.com/microcosm-cc/bluemonday"

// htmlPolicy is built once (policies are safe for concurrent use once
// built). It keeps what an article needs (headings, paragraphs, lists,
// tables, links with safe schemes, images, emphasis, code, quotes) and drops
// scripts, event-handler attributes, javascript: URLs, iframes, forms and
// style attributes and elements.
var htmlPolicy = func() *bluemonday.Policy {
	p := bluemonday.UGCPolicy()
	p.AllowURLSchemes("http", "https", "mailto")
	p.RequireNoFollowOnLinks(true)
	p.AddTargetBlankToFullyQualifiedLinks(true)
	p.RequireNoReferrerOnLinks(true)
	return p
}()

// SanitizeHTML returns html with everything that can run script removed.
func SanitizeHTML(html string) string { return htmlPolicy.Sanitize(html) }
