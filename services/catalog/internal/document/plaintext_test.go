package document

import (
	"context"
	"errors"
	"strings"
	"testing"
)

func TestPlainText(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		typ     Type
		content string
		want    string
	}{
		{"markdown headings, emphasis and lists", Markdown,
			"# Title\n\nSome *emphasised* and **strong** words.\n\n- one\n- two\n", "Title\nSome emphasised and strong words.\none\ntwo"},
		{"markdown links keep their text, not their destination", Markdown,
			"See [the guide](https://example.org/guide) and <https://example.org>.", "See the guide and https://example.org."},
		{"markdown image keeps its alt text", Markdown, "![a cat](cat.png)", "a cat"},
		{"markdown code is kept as written", Markdown, "Run `make dev`:\n\n```sh\nmake   dev\n```\n", "Run make dev:\nmake dev"},
		{"markdown raw HTML gives its text", Markdown, "<div>\n<p>inside <b>html</b></p>\n</div>\n\nafter <span>x</span>", "inside html\nafter x"},
		{"markdown GFM table", Markdown, "| a | b |\n|---|---|\n| 1 | 2 |\n", "a\nb\n1\n2"},
		{"html blocks are lines", HTML, "<h1>Title</h1><p>one <em>two</em></p><ul><li>x</li><li>y</li></ul>", "Title\none two\nx\ny"},
		{"html entities are decoded", HTML, "<p>Fish &amp; chips &lt;3</p>", "Fish & chips <3"},
		{"html script and style have no words", HTML, "<style>p{}</style><p>seen</p><script>alert(1)</script>", "seen"},
		{"html spaces are tidied", HTML, "<p>  a\n\n   b  </p>\n\n<p></p>", "a b"},
		{"a link has no words", Link, "https://example.org", ""},
		{"a PDF has no words here", PDF, "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got, err := PlainText(context.Background(), c.typ, c.content)
			if err != nil || got != c.want {
				t.Errorf("PlainText(%s, %q) = %q, %v; want %q", c.typ, c.content, got, err, c.want)
			}
		})
	}
}

// TestPlainTextBounded: Markdown the write path would refuse as too costly
// to read is read as plain text, and an ended context stops the reading.
func TestPlainTextBounded(t *testing.T) {
	t.Parallel()
	heavy := strings.Repeat("*a", 200000)
	if MarkupProblem(heavy) == "" {
		t.Fatal("the test's heavy Markdown is within the bounds; make it heavier")
	}
	got, err := PlainText(context.Background(), Markdown, heavy)
	if err != nil || got != heavy {
		t.Errorf("heavy Markdown: %d bytes, %v; want the text as it is", len(got), err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	big := strings.Repeat("<p>word</p>", 100000)
	if _, err := PlainText(ctx, HTML, big); !errors.Is(err, context.Canceled) {
		t.Errorf("HTML with an ended context: %v, want context.Canceled", err)
	}
	if _, err := PlainText(ctx, Markdown, strings.Repeat("para\n\n", 10000)); !errors.Is(err, context.Canceled) {
		t.Errorf("Markdown with an ended context: %v, want context.Canceled", err)
	}
}
