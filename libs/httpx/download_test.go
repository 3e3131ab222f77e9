package httpx

import (
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestContentDisposition(t *testing.T) {
	tests := []struct{ disp, name, want string }{
		{"inline", "guide.pdf", `inline; filename="guide.pdf"`},
		{"attachment", "résumé.pdf", `attachment; filename="resume.pdf"; filename*=UTF-8''r%C3%A9sum%C3%A9.pdf`},
		{"attachment", "a\"b\r\n%.md", `attachment; filename="a_b_.md"; filename*=UTF-8''a%22b%25.md`},
		{"inline", "evil\u202egpj.html", `inline; filename="evilgpj.html"`},
		{"attachment", "", `attachment; filename="file"`},
	}
	for _, tt := range tests {
		if got := ContentDisposition(tt.disp, tt.name); got != tt.want {
			t.Errorf("ContentDisposition(%q, %q) = %s, want %s", tt.disp, tt.name, got, tt.want)
		}
	}
}

func TestServeContentRanges(t *testing.T) {
	body := "0123456789"
	serve := func(rng string) (int, string, string) {
		req := httptest.NewRequest("GET", "/", nil)
		if rng != "" {
			req.Header.Set("Range", rng)
		}
		rec := httptest.NewRecorder()
		rec.Header().Set("Content-Type", "text/plain")
		if err := ServeContent(rec, req, time.Now(), int64(len(body)), strings.NewReader(body)); err != nil {
			t.Fatal(err)
		}
		return rec.Code, rec.Body.String(), rec.Header().Get("Content-Type")
	}
	if code, b, _ := serve("bytes=2-4"); code != 206 || b != "234" {
		t.Errorf("single range: %d %q", code, b)
	}
	if code, b, _ := serve("bytes=0-1,4-5"); code != 200 || b != body {
		t.Errorf("several ranges: %d %q, want the whole body", code, b)
	}
	if code, _, ct := serve("bytes=50-"); code != 416 || ct != "application/problem+json" {
		t.Errorf("unsatisfiable: %d %s", code, ct)
	}
}

func TestETagMatch(t *testing.T) {
	for header, want := range map[string]bool{
		`"a"`: true, `W/"a"`: true, `"b", "a"`: true, `*`: true, `"b"`: false, ``: false,
	} {
		if got := ETagMatch(header, `"a"`); got != want {
			t.Errorf("ETagMatch(%q) = %v, want %v", header, got, want)
		}
	}
}
