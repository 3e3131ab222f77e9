package document

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"
	gmhtml "github.com/yuin/goldmark/renderer/html"
	"golang.org/x/net/html"

	"github.com/doclib/libs/validation"
)

func TestSanitizeMarkdown(t *testing.T) {
	kept := []string{
		"# Fiche\n\nTexte *gras* et [lien](https://example.org \"titre\").\n",
		"```html\n<script>alert(1)</script>\n[x](javascript:alert(1))\n```\n",
		"    <script>indented code</script>\n",
		"Code `<img src=x onerror=alert(1)>` and `[x](javascript:y)` inline.\n",
		"![image](https://i.org/a.png) and ![data](data:image/png;base64,iVBORw0KGgo=)\n",
		"<b>bold</b> and <em>em</em>\n",
		"Relative [link](/documents/1) and [mail](mailto:a@b.org) and <https://example.org>\n",
		"[ref]: https://example.org\n\nUse [ref].\n",
		"a < b > c & d\n",
		"| a | b |\n|---|---|\n| `x` | [y](https://ok.org) |\n",
	}
	for _, md := range kept {
		if got := mustMarkdown(t, md); got != md {
			t.Errorf("SanitizeMarkdown changed safe Markdown:\n%q\n->\n%q", md, got)
		}
	}
	changed := []struct{ in, want string }{
		{"<script>alert(1)</script>\n\nText\n", "\n\nText\n"},
		{"Hi <img src=x onerror=\"alert(1)\"> there\n", "Hi <img src=\"x\"> there\n"},
		{"[x](javascript:alert(1))\n", "[x]()\n"},
		{"[x](JaVaScRiPt:alert(1) \"t\")\n", "[x]()\n"},
		{"[x](javascript&#58;alert(1))\n", "[x]()\n"},
		{"[x](java\\script:alert(1))\n", "[x]()\n"},
		{"[x](<javascript:alert(1)>)\n", "[x]()\n"},
		{"[x](vbscript:msgbox(1))\n", "[x]()\n"},
		{"[x](data:text/html;base64,PHNjcmlwdD4=)\n", "[x]()\n"},
		{"[x](data:image/png;base64,iVBORw0KGgo=)\n", "[x]()\n"},
		{"![x](data:image/svg+xml;base64,PHN2Zz4=)\n", "![x]()\n"},
		{"![x](javascript:alert(1))\n", "![x]()\n"},
		{"<javascript:alert(1)>\n", "\\<javascript:alert(1)>\n"},
		{"[a]: javascript:alert(1)\n\n[a] and [b][a]\n", "[a]: <>\n\n[a] and [b][a]\n"},
		{"> quote [x](\n> javascript:alert(1))\n> more\n", "> quote [x]()\n> more\n"},
		{"- <div onclick=\"x\">\n  item\n", "- <div>\n  item\n"},
		{"<a href=\"javascript:x\">a</a>\n", "a</a>\n"}, // tag by tag: a lone </a> is harmless
	}
	for _, c := range changed {
		if got := mustMarkdown(t, c.in); got != c.want {
			t.Errorf("SanitizeMarkdown(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// FuzzSanitizeMarkdown checks the Markdown sanitiser against an oracle of
// its own: the result rendered to HTML by goldmark (raw HTML passed
// through, as CommonMark and as GFM) has no element, attribute or URL that
// can run script; sanitising again changes nothing; and Markdown that
// cannot hold markup or a scheme comes back as it was. Each input is
// answered within fuzzTimeLimit, refused or sanitised: the seeds hold the
// runs of emphasis and link openers, and the nestings, that make a
// Markdown reader's work grow faster than its input.
func FuzzSanitizeMarkdown(f *testing.F) {
	for _, s := range []string{"# T\n\n*x* [l](https://e.org)", "<script>alert(1)</script>", "[x](javascript:alert(1))",
		"![x](data:image/svg+xml;base64,PHN2Zz4=)", "<javascript:alert(1)>", "[a]: javascript:x\n\n[a]",
		"> [x](\n> javascript:y)", "```\n<script>\n```", "| a |\n|---|\n| `x | [y](javascript:z) ` |",
		"<div onclick=x>\n*a*\n</div>", "<!-- c --><?php ?><![CDATA[x]]>", "[x](java&#x73;cript:1)", "<img src=x onerror=y>"} {
		f.Add(s)
	}
	for _, s := range adversarialMarkdown {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, md string) {
		got, ok := timedMarkdown(t, md)
		if !ok {
			return // refused as too dense, in time
		}
		if again := mustMarkdown(t, got); again != got {
			t.Fatalf("SanitizeMarkdown(%q) = %q, then %q", md, got, again)
		}
		if !strings.ContainsAny(md, "<](") && got != md { // no HTML, no link
			t.Fatalf("SanitizeMarkdown(%q) = %q: changed Markdown with no markup", md, got)
		}
		if !strings.ContainsAny(md, "<:&\\%/#") && !hasControl(md) && got != md { // no scheme, nothing to decode
			t.Fatalf("SanitizeMarkdown(%q) = %q: changed Markdown with no markup", md, got)
		}
		for _, r := range renderers {
			var out bytes.Buffer
			if err := r.Convert([]byte(got), &out); err != nil {
				t.Fatal(err)
			}
			if bad := unsafeHTML(out.String()); bad != "" {
				t.Fatalf("SanitizeMarkdown(%q) = %q, which renders %s: %q", md, got, bad, out.String())
			}
		}
	})
}

// fuzzTimeLimit is the time one fuzz input may take to be sanitised or
// refused (the fuzzer's inputs are at most a few kilobytes; the seeds up to
// 64 KiB).
const fuzzTimeLimit = 2 * time.Second

// adversarialMarkdown repeats, up to 64 KiB, the openers and nestings whose
// pairing is quadratic or worse in a Markdown reader.
var adversarialMarkdown = func() []string {
	var out []string
	for _, unit := range []string{"*a_", "_a*", "**a__", "[](", "![](", "[a", "](", "<a ", "`a``", "~~a", "> *a_",
		"[*a_](", "- [", "<!--", "*[_", "\\*a_", "&#x2a;a_", "[x]: <", "*a_\n", "*a_\n\n"} {
		out = append(out, strings.Repeat(unit, 64<<10/len(unit)))
	}
	for _, nest := range [][2]string{{"[", "](x)"}, {"*", "*"}, {"> ", ""}, {"- ", ""}, {"<div>", "</div>"}, {"![", "](x)"}} {
		out = append(out, strings.Repeat(nest[0], 4096)+"a"+strings.Repeat(nest[1], 4096))
	}
	return out
}()

// timedMarkdown sanitises md, which must be done, or refused as too dense,
// within fuzzTimeLimit; ok is false when it was refused.
func timedMarkdown(t *testing.T, md string) (string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), fuzzTimeLimit)
	defer cancel()
	start := time.Now()
	got, err := SanitizeMarkdown(ctx, md)
	if took := time.Since(start); took > fuzzTimeLimit || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("SanitizeMarkdown(%d bytes, %.40q...) took %v, more than %v", len(md), md, took, fuzzTimeLimit)
	}
	var fields validation.Errors
	if errors.As(err, &fields) {
		return "", false
	}
	if err != nil {
		t.Fatalf("SanitizeMarkdown(%.40q...): %v", md, err)
	}
	return got, true
}

func mustMarkdown(t *testing.T, md string) string {
	t.Helper()
	got, err := SanitizeMarkdown(context.Background(), md)
	if err != nil {
		t.Fatalf("SanitizeMarkdown(%.60q...): %v", md, err)
	}
	return got
}

func mustHTML(t *testing.T, in string) string {
	t.Helper()
	got, err := SanitizeHTML(context.Background(), in)
	if err != nil {
		t.Fatalf("SanitizeHTML(%.60q...): %v", in, err)
	}
	return got
}

// hasControl: a destination with an ASCII control does not parse as a URL,
// so the policy drops it.
func hasControl(s string) bool {
	return strings.IndexFunc(s, func(r rune) bool { return r < 0x20 && r != '\n' && r != '\t' || r == 0x7f }) >= 0
}

// renderers are CommonMark and GFM. GFM renders a table column's
// alignment (`:-`) as the align attribute, not as goldmark's default
// style="text-align:left": that style is the renderer's own, a fixed value
// that runs nothing, and the oracle refuses every style attribute (found
// by the fuzzer: "0\n:-" is a one-column table).
var renderers = []goldmark.Markdown{
	goldmark.New(goldmark.WithRendererOptions(gmhtml.WithUnsafe())),
	goldmark.New(goldmark.WithRendererOptions(gmhtml.WithUnsafe()),
		goldmark.WithExtensions(extension.NewTable(extension.WithTableCellAlignMethod(extension.TableCellAlignAttribute)),
			extension.Strikethrough, extension.TaskList)),
}

// unsafeHTML names the first thing in doc a browser could run, or "".
func unsafeHTML(doc string) string {
	z := html.NewTokenizer(strings.NewReader(doc))
	for {
		switch z.Next() {
		case html.ErrorToken:
			return ""
		case html.StartTagToken, html.SelfClosingTagToken:
			tok := z.Token()
			switch tok.Data {
			case "script", "style", "iframe", "frame", "object", "embed", "form", "base", "meta", "link", "svg", "math":
				return "a <" + tok.Data + "> element"
			}
			for _, a := range tok.Attr {
				key := strings.ToLower(a.Key)
				if strings.HasPrefix(key, "on") || key == "style" || key == "formaction" {
					return "an attribute " + a.Key
				}
				if key == "href" || key == "src" || key == "action" || key == "xlink:href" {
					v := strings.ToLower(strings.Map(func(r rune) rune {
						if r <= ' ' {
							return -1
						}
						return r
					}, a.Val))
					if strings.HasPrefix(v, "javascript:") || strings.HasPrefix(v, "vbscript:") ||
						strings.HasPrefix(v, "data:") && !(key == "src" && tok.Data == "img" && !strings.HasPrefix(v, "data:image/svg")) {
						return "a " + a.Key + " " + a.Val
					}
				}
			}
		}
	}
}

// FuzzSanitizeHTML checks the HTML sanitiser with the same oracle: nothing
// that can run script is left, and the stored text, sent back in a PATCH,
// sanitises to itself; each input within fuzzTimeLimit, the seeds holding
// unclosed and nested tags, comments and attributes by the thousand.
func FuzzSanitizeHTML(f *testing.F) {
	for _, s := range []string{`<p onclick="x()">Hi <a href="javascript:alert(1)">bad</a></p>`, `<script>alert(1)</script>`,
		`<img src="data:image/png;base64,iVBORw0KGgo=">`, `<img src="data:image/svg+xml;base64,PHN2Zz4=">`,
		`<a href="https://ok.org" rel="x">ok</a>`, `<svg><script>x</script></svg>`, `<iframe src=x></iframe><style>*{}</style>`,
		`<a href="java&#x09;script:alert(1)">x</a>`, `<math><mi xlink:href="javascript:x">y</mi></math>`} {
		f.Add(s)
	}
	for _, unit := range []string{"<a ", "<b><i>", "<!--", "<a href=x>", "&amp", "<p title='", "<table><tr><td>", "</p>", "<svg><p>", "<a href=\"javascript:"} {
		f.Add(strings.Repeat(unit, 64<<10/len(unit)))
	}
	f.Fuzz(func(t *testing.T, in string) {
		ctx, cancel := context.WithTimeout(context.Background(), fuzzTimeLimit)
		defer cancel()
		start := time.Now()
		out, err := SanitizeHTML(ctx, in)
		if took := time.Since(start); took > fuzzTimeLimit || err != nil {
			t.Fatalf("SanitizeHTML(%d bytes, %.40q...) took %v (%v), more than %v", len(in), in, took, err, fuzzTimeLimit)
		}
		if bad := unsafeHTML(out); bad != "" {
			t.Fatalf("SanitizeHTML(%q) = %q, which has %s", in, out, bad)
		}
		if again := mustHTML(t, out); again != out {
			t.Fatalf("SanitizeHTML(%q) = %q, then %q", in, out, again)
		}
	})
}

// TestMarkupProblem: a paragraph's markers are bounded, and so is the sum
// of their squares over the text; blank lines (in a quote too) end a
// paragraph, escaped markers are text, and 1 MiB of ordinary Markdown is
// far from either bound.
func TestMarkupProblem(t *testing.T) {
	ordinary := "Some *emphasis*, a [link](https://example.org/page) and `code`, then **more** words of an article.\n\n"
	for _, tc := range []struct {
		name, md string
		refused  bool
	}{
		{"ordinary 1 MiB", strings.Repeat(ordinary, MaxContent/len(ordinary)), false},
		{"one long ordinary paragraph", strings.Repeat("a *b* [c](d) ", 250), false},
		{"a paragraph at the bound", strings.Repeat("*", maxParagraphMarkers), false},
		{"a paragraph over it", strings.Repeat("*a_", maxParagraphMarkers/2+1), true},
		{"escaped markers are text", strings.Repeat(`\*a\_`, 100000), false},
		{"quoted paragraphs", strings.Repeat("> "+strings.Repeat("*a_", 1000)+"\n>\n", 3), false},
		{"a quote without blank lines", strings.Repeat("> "+strings.Repeat("*a_", 1000)+"\n", 3), true},
		{"many paragraphs near the bound", strings.Repeat(strings.Repeat("[](", 1400)+"\n\n", 12), true},
		{"a table of links", strings.Repeat("| [a](b) | `c` |\n", 300), false},
		{"lists nested on a line", "- - 1. > " + strings.Repeat("- ", maxNesting-4) + "a\n", false},
		{"too deep on a line", strings.Repeat("- ", maxNesting+1) + "a", true},
		{"quotes too deep", strings.Repeat("> ", 4096) + "a", true},
		{"a long list", strings.Repeat("- [a](b) *c*\n", 20000), false},
		{"a table padded to its header", strings.Repeat("|a", 1000) + "|\n" + strings.Repeat("|-", 1000) + "|\n" + strings.Repeat("a\n", 1000), true},
		{"a table with too many columns", strings.Repeat("|a", maxTableColumns+1) + "|\n" + strings.Repeat("|-", maxTableColumns+1) + "|\n", true},
		{"a table with too many cells", strings.Repeat("|a", 100) + "|\n" + strings.Repeat("|-", 100) + "|\n" + strings.Repeat("a\n", 1000), true},
		{"a large table", "| a | b | c |\n|:-|-:|:-:|\n" + strings.Repeat("| x | 2 | 3 |\n", 30000), false},
		{"tables apart", strings.Repeat(strings.Repeat("|a", 100)+"|\n"+strings.Repeat("|-", 100)+"|\n"+strings.Repeat("a\n", 500)+"\n", 10), false},
		{"thematic breaks", strings.Repeat("a\n---\n", 50000), false},
		{"unbalanced link parentheses", strings.Repeat("[a]((", 1000) + strings.Repeat("x", 300<<10), true},
		{"unclosed bracketed destinations", strings.Repeat("[a](<b", 1000) + strings.Repeat("x", 300<<10), true},
		{"a long paragraph with links", strings.Repeat("see [a](https://example.org/a) and more words here ", 200), false},
	} {
		if got := MarkupProblem(tc.md); (got != "") != tc.refused {
			t.Errorf("%s: MarkupProblem = %q, want refused %v", tc.name, got, tc.refused)
		}
	}
}

// TestLargeTablesAndLinkRunsAreRefusedBeforeParsing: a table whose short
// rows the reader would pad to a wide header, and a long run after
// unbalanced link parentheses, are validation errors on content, at once.
func TestLargeTablesAndLinkRunsAreRefusedBeforeParsing(t *testing.T) {
	for _, md := range []string{
		strings.Repeat("|a", 1000) + "|\n" + strings.Repeat("|-", 1000) + "|\n" + strings.Repeat("a\n", 1000),
		strings.Repeat("[a](((", 1000) + strings.Repeat("x", 300<<10),
	} {
		start := time.Now()
		_, err := SanitizeMarkdown(context.Background(), md)
		var fields validation.Errors
		if !errors.As(err, &fields) || len(fields) != 1 || fields[0].Field != "content" || time.Since(start) > time.Second {
			t.Fatalf("SanitizeMarkdown(%.20q...) = %v after %v, want a content error at once", md, err, time.Since(start))
		}
	}
}

// TestTableParseStopsWhenAsked: a table within the bounds, of plain cells
// (no inline parsing), still stops with its context.
func TestTableParseStopsWhenAsked(t *testing.T) {
	md := strings.Repeat("|a", 100) + "|\n" + strings.Repeat("|-", 100) + "|\n" + strings.Repeat("a\n", 900)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := SanitizeMarkdown(ctx, md); !errors.Is(err, context.Canceled) {
		t.Fatalf("SanitizeMarkdown(table, ended context) = %v, want context.Canceled", err)
	}
	if _, err := RenderPreview(ctx, "MARKDOWN", md); !errors.Is(err, context.Canceled) {
		t.Fatalf("RenderPreview(table, ended context) = %v, want context.Canceled", err)
	}
}

// TestDenseMarkupIsRefusedBeforeParsing: SanitizeMarkdown refuses, as a
// validation error on content and at once, what MarkupProblem names.
func TestDenseMarkupIsRefusedBeforeParsing(t *testing.T) {
	start := time.Now()
	_, err := SanitizeMarkdown(context.Background(), strings.Repeat("*a_", 200000))
	var fields validation.Errors
	if !errors.As(err, &fields) || len(fields) != 1 || fields[0].Field != "content" || time.Since(start) > time.Second {
		t.Fatalf("SanitizeMarkdown(600 KB of *a_) = %v after %v, want a content error at once", err, time.Since(start))
	}
}
