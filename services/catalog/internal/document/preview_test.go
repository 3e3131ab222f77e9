package document

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/doclib/libs/validation"
)

func TestRenderPreview(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, typ, content string
		want, notWant      []string
	}{
		{"markdown is rendered", "MARKDOWN", "# Title\n\n*em* and [a](https://example.org)",
			[]string{"<h1>Title</h1>", "<em>em</em>", `href="https://example.org"`}, nil},
		{"markdown javascript link loses its destination", "MARKDOWN", "[click](javascript:alert(1)) <script>alert(2)</script>",
			[]string{"click"}, []string{"javascript:", "<script", "href"}},
		{"markdown table (GFM)", "MARKDOWN", "| a | b |\n|---|---|\n| 1 | 2 |", []string{"<table>", "<td>1</td>"}, nil},
		{"html is sanitised", "HTML", `<p onclick="x()">hi</p><script>alert(1)</script><a href="javascript:alert(1)">l</a><iframe src="https://x"></iframe>`,
			[]string{"<p>hi</p>"}, []string{"onclick", "<script", "javascript:", "<iframe", "<a"}},
		{"empty text is an empty preview", "HTML", "", nil, []string{"<"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p, err := RenderPreview(context.Background(), tc.typ, tc.content)
			if err != nil {
				t.Fatalf("RenderPreview: %v", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(p.HTML, w) {
					t.Errorf("preview %q lacks %q", p.HTML, w)
				}
			}
			for _, w := range tc.notWant {
				if strings.Contains(p.HTML, w) {
					t.Errorf("preview %q holds %q", p.HTML, w)
				}
			}
		})
	}
}

func TestRenderPreviewMatchesWhatIsStored(t *testing.T) {
	t.Parallel()
	in := "[x](javascript:alert(1)) <b onclick=y>b</b>"
	p, err := RenderPreview(context.Background(), "MARKDOWN", in)
	if err != nil {
		t.Fatal(err)
	}
	if p.Content != mustMarkdown(t, in) {
		t.Errorf("preview content %q, stored would be %q", p.Content, mustMarkdown(t, in))
	}
}

func TestRenderPreviewRefusesBadInput(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ typ, content, field string }{
		{"LINK", "x", "type"},
		{"", "x", "type"},
		{"HTML", strings.Repeat("a", MaxContent+1), "content"},
	} {
		_, err := RenderPreview(context.Background(), tc.typ, tc.content)
		var errs validation.Errors
		if !errors.As(err, &errs) || len(errs) != 1 || errs[0].Field != tc.field {
			t.Errorf("RenderPreview(%q, %d bytes) = %v, want one error on %s", tc.typ, len(tc.content), err, tc.field)
		}
	}
}

func TestRenderPreviewStopsWhenAsked(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := RenderPreview(ctx, "MARKDOWN", "# a"); err != context.Canceled {
		t.Errorf("RenderPreview with an ended context = %v, want context.Canceled", err)
	}
}
