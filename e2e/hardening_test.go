package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// TestHardeningInput replays, through the gateway, the input defects the
// adversarial review of issue 16 found (items 6, 7, 8, 9, 10 and 12): each
// subtest failed before its fix.
func TestHardeningInput(t *testing.T) {
	st := NewStack(t, nil)
	st.Must("POST", "/bo/tags-categories", `{"id":"health","name":"Santé"}`, 201)
	pdf := st.Upload("guide.pdf", pdfBytes)

	expect := func(t *testing.T, r Response, status int, code, fields string) {
		t.Helper()
		if r.Status != status {
			t.Fatalf("status %d, want %d; %s", r.Status, status, r.Body)
		}
		if p := r.Problem(t); p.Code != code || (fields != "" && p.Fields() != fields) {
			t.Errorf("problem %+v, want %s naming %q", p, code, fields)
		}
	}

	t.Run("5 Markdown is sanitised with the HTML policy, code kept byte for byte", func(t *testing.T) {
		md := "# Fiche\n\n<script>alert(1)</script>\n\nTexte <img src=x onerror=alert(1)> et [x](javascript:alert(1)).\n\n" +
			"```html\n<script>alert('code')</script>\n[y](javascript:code)\n```\n"
		body, _ := json.Marshal(map[string]any{"type": "MARKDOWN", "title": "T", "content": md})
		var d docJSON
		st.Must("POST", "/bo/documents", string(body), 201).JSON(t, &d)
		var pub docJSON
		st.Req("GET", "/public/documents/"+d.ID+"/detail", nil).JSON(t, &pub)
		want := "# Fiche\n\n\n\nTexte <img src=\"x\"> et [x]().\n\n" +
			"```html\n<script>alert('code')</script>\n[y](javascript:code)\n```\n"
		if pub.Content == nil || *pub.Content != want {
			t.Errorf("public detail content %q, want %q", deref(pub.Content), want)
		}
	})

	t.Run("6 controls and bidi overrides are refused in titles, names and sources", func(t *testing.T) {
		expect(t, st.BO("POST", "/bo/documents", `{"type":"LINK","title":"evil\u202egpj.html","url":"https://x.org"}`), 422, "validation_failed", "title")
		expect(t, st.BO("POST", "/bo/documents", `{"type":"LINK","title":"a\u0007b","url":"https://x.org"}`), 422, "validation_failed", "title")
		expect(t, st.BO("POST", "/bo/documents", `{"type":"MARKDOWN","title":"T","content":"x","sources":["ok","x\u2066y","a\nb"]}`), 422, "validation_failed", "sources[1],sources[2]")
		expect(t, st.BO("POST", "/bo/tags-categories", `{"id":"c2","name":"evil\u202etxt"}`), 422, "validation_failed", "name")
		expect(t, st.BO("POST", "/bo/tags", `{"id":"t2","name":"a\u0085b","categoryId":"health"}`), 422, "validation_failed", "name")
		// A right-to-left mark is text, not an override.
		st.Must("POST", "/bo/documents", `{"type":"LINK","title":"\u05e9\u05dc\u05d5\u05dd\u200f 1","url":"https://x.org"}`, 201)
	})

	t.Run("6 download file names carry no bidi or control characters", func(t *testing.T) {
		id := st.Upload("evil\u202egpj.html.pdf", pdfBytes[:len(pdfBytes)-1])
		r := st.Req("GET", "/public/medias/"+id+"/download", nil)
		if cd := r.Header.Get("Content-Disposition"); r.Status != 200 || strings.Contains(cd, "%E2%80%AE") || strings.ContainsRune(cd, 0x202e) {
			t.Errorf("download of a media named with U+202E: %d Content-Disposition %q", r.Status, cd)
		}
	})

	t.Run("7 LINK urls are parsed strictly and stored normalised", func(t *testing.T) {
		for _, u := range []string{"https://evil\u202e.com/", "https://xn--zz.example/", "https://exa mple.org/", `https://x.org/"onmouseover="x`,
			"https://x.org/<script>", "https://a..b/", "https://x.org\\@evil.com/", "https://\u200bx.org/"} {
			body := fmt.Sprintf(`{"type":"LINK","title":"T","url":%q}`, u)
			expect(t, st.BO("POST", "/bo/documents", body), 422, "validation_failed", "url")
		}
		var d docJSON
		st.Must("POST", "/bo/documents", `{"type":"LINK","title":"T","url":"HTTPS://Bücher.Example:443/café?q=é#x"}`, 201).JSON(t, &d)
		if d.URL == nil || *d.URL != "https://xn--bcher-kva.example:443/caf%C3%A9?q=%C3%A9#x" {
			t.Errorf("stored url %v, want the normalised form", d.URL)
		}
	})

	t.Run("8 an error on a download is never cacheable", func(t *testing.T) {
		for _, path := range []string{"/public/medias/" + pdf + "/download"} {
			r := st.Req("GET", path, nil, "If-Match", `"other"`)
			if r.Status != 412 || r.Header.Get("Cache-Control") != "no-store" || r.Problem(t).Code != "precondition_failed" {
				t.Errorf("%s with a failing If-Match: %d Cache-Control %q %s", path, r.Status, r.Header.Get("Cache-Control"), r.Body)
			}
			r = st.Req("GET", path, nil, "Range", "bytes=999999-")
			if r.Status != 416 || r.Header.Get("Cache-Control") != "no-store" {
				t.Errorf("%s with an unsatisfiable range: %d Cache-Control %q", path, r.Status, r.Header.Get("Cache-Control"))
			}
		}
	})

	t.Run("9 Range bytes=-0 is 416", func(t *testing.T) {
		var md docJSON
		st.Must("POST", "/bo/documents", `{"type":"MARKDOWN","title":"T","content":"# x"}`, 201).JSON(t, &md)
		var doc docJSON
		st.Must("POST", "/bo/documents", fmt.Sprintf(`{"type":"PDF","title":"T","fileId":%q}`, pdf), 201).JSON(t, &doc)
		for _, path := range []string{"/public/medias/" + pdf + "/download", "/public/documents/" + md.ID + "/download", "/public/documents/" + doc.ID + "/download"} {
			r := st.Req("GET", path, nil, "Range", "bytes=-0")
			if r.Status != 416 || r.Problem(t).Code != "range_not_satisfiable" {
				t.Errorf("%s with Range bytes=-0: %d %v %q", path, r.Status, r.Header, r.Body)
			}
		}
	})

	t.Run("10 invalid UTF-8 and lone surrogates are 400", func(t *testing.T) {
		expect(t, st.BO("POST", "/bo/tags-categories", []byte("{\"id\":\"u1\",\"name\":\"a\xffb\"}")), 400, "bad_request", "name")
		expect(t, st.BO("POST", "/bo/tags-categories", `{"id":"u2","name":"a\ud800b"}`), 400, "bad_request", "name")
		expect(t, st.BO("POST", "/bo/documents", `{"type":"LINK","title":"\udc00","url":"https://x.org"}`), 400, "bad_request", "title")
	})

	t.Run("12 exact key names, no duplicate keys, no invisible-only names, no null sources", func(t *testing.T) {
		expect(t, st.BO("POST", "/bo/tags-categories", `{"ID":"k1","NAME":"K1"}`), 422, "validation_failed", "ID,NAME") // named as near misses of id and name
		expect(t, st.BO("POST", "/bo/tags-categories", `{"id":"k2","name":"A","name":"B"}`), 400, "bad_request", "name")
		expect(t, st.BO("POST", "/bo/tags-categories", `{"id":"k3","name":"\u200b\u200b"}`), 422, "validation_failed", "name")
		expect(t, st.BO("POST", "/bo/documents", `{"type":"LINK","title":"\u200b \ufeff","url":"https://x.org"}`), 422, "validation_failed", "title")
		expect(t, st.BO("POST", "/bo/documents", `{"type":"MARKDOWN","title":"T","content":"x","sources":[null]}`), 400, "bad_request", "sources[0]")
		if r := st.BO("GET", "/bo/tags-categories", nil); strings.Contains(string(r.Body), `"k1"`) || strings.Contains(string(r.Body), `"k2"`) {
			t.Errorf("a refused category was stored: %s", r.Body)
		}
	})

	t.Run("12 an upload name cut at 255 characters keeps its extension", func(t *testing.T) {
		name := strings.Repeat("é", 300) + ".pdf"
		m := st.uploadJSON(name, append([]byte(nil), append(pdfBytes, 'x')...))
		if got := m["name"].(string); utf8.RuneCountInString(got) != 255 || !strings.HasSuffix(got, "é.pdf") {
			t.Errorf("name of %d characters ending %q, want 255 ending é.pdf", utf8.RuneCountInString(got), got[max(0, len(got)-10):])
		}
	})
}

// uploadJSON uploads content as name and returns the media record (201, or
// 200 for bytes already stored).
func (st *Stack) uploadJSON(name string, content []byte) map[string]any {
	st.t.Helper()
	r := st.PostFile(name, content)
	if r.Status != 201 && r.Status != 200 {
		st.t.Fatalf("upload %q: %d %s", name, r.Status, r.Body)
	}
	var m map[string]any
	r.JSON(st.t, &m)
	return m
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

// TestDocumentDownloadValidators (issue 16 item 2): a PDF document's
// download changes its validators when a PATCH points it at another media,
// even an older one, so a client's If-Modified-Since or If-Range from
// before the PATCH never gets the old answer.
func TestDocumentDownloadValidators(t *testing.T) {
	st := NewStack(t, nil)
	older := st.Upload("older.pdf", unique(pdfBytes, "older"))
	time.Sleep(1100 * time.Millisecond) // HTTP dates have seconds
	newer := st.Upload("newer.pdf", unique(pdfBytes, "newer"))
	var d docJSON
	st.Must("POST", "/bo/documents", fmt.Sprintf(`{"type":"PDF","title":"T","fileId":%q}`, newer), 201).JSON(t, &d)
	path := "/public/documents/" + d.ID + "/download"
	time.Sleep(1100 * time.Millisecond) // a date is sent once the second of the change is over
	first := st.Req("GET", path, nil)
	lastModified, etag := first.Header.Get("Last-Modified"), first.Header.Get("ETag")
	if first.Status != 200 || lastModified == "" || etag == "" {
		t.Fatalf("download: %d %v", first.Status, first.Header)
	}
	if r := st.Req("GET", path, nil, "If-Modified-Since", lastModified); r.Status != 304 {
		t.Errorf("unchanged document, If-Modified-Since its Last-Modified: %d, want 304", r.Status)
	}

	time.Sleep(1100 * time.Millisecond)
	st.Must("PATCH", "/bo/documents/"+d.ID, fmt.Sprintf(`{"type":"PDF","title":"T","fileId":%q}`, older), 200)
	r := st.Req("GET", path, nil, "If-Modified-Since", lastModified)
	if r.Status != 200 || !strings.HasSuffix(string(r.Body), "older") {
		t.Errorf("after a PATCH to an older media, If-Modified-Since from before: %d (%d bytes), want 200 with the new file", r.Status, len(r.Body))
	}
	if lm := r.Header.Get("Last-Modified"); lm == lastModified || r.Header.Get("ETag") == etag {
		t.Errorf("validators did not change: Last-Modified %q (was %q), ETag %q (was %q)", lm, lastModified, r.Header.Get("ETag"), etag)
	}
	if r := st.Req("GET", path, nil, "Range", "bytes=0-3", "If-Range", lastModified); r.Status != 200 || !strings.HasSuffix(string(r.Body), "older") {
		t.Errorf("If-Range with the old date: %d, want 200 with the whole new file", r.Status)
	}
	if r := st.Req("GET", path, nil, "If-Unmodified-Since", lastModified); r.Status != 412 || r.Header.Get("Cache-Control") != "no-store" {
		t.Errorf("If-Unmodified-Since from before the PATCH: %d %v, want 412 no-store", r.Status, r.Header)
	}
	time.Sleep(1100 * time.Millisecond)
	if now := st.Req("GET", path, nil).Header.Get("Last-Modified"); now != "" {
		if r := st.Req("GET", path, nil, "Range", "bytes=0-3", "If-Range", now); r.Status != 206 || string(r.Body) != "%PDF" {
			t.Errorf("If-Range with the current date: %d %q, want 206", r.Status, r.Body)
		}
		if r := st.Req("GET", path, nil, "If-Modified-Since", now); r.Status != 304 {
			t.Errorf("If-Modified-Since the current date: %d, want 304", r.Status)
		}
	} else {
		t.Errorf("no Last-Modified a second after the change")
	}
}

// TestDocumentFileSwitchedWithinOneSecond (issue 21 item 2, as written):
// two media uploaded within the same second, a document switched from one
// to the other: If-Modified-Since with the first answer's Last-Modified is
// the new file, not 304. HTTP dates have seconds, so a date is answered
// 304 only when the change is provably at or before it.
func TestDocumentFileSwitchedWithinOneSecond(t *testing.T) {
	st := NewStack(t, nil)
	first := st.Upload("first.pdf", unique(pdfBytes, "first"))
	second := st.Upload("second.pdf", unique(pdfBytes, "second"))
	var d docJSON
	st.Must("POST", "/bo/documents", fmt.Sprintf(`{"type":"PDF","title":"T","fileId":%q}`, first), 201).JSON(t, &d)
	path := "/public/documents/" + d.ID + "/download"
	before := st.Req("GET", path, nil)
	st.Must("PATCH", "/bo/documents/"+d.ID, fmt.Sprintf(`{"type":"PDF","title":"T","fileId":%q}`, second), 200)
	r := st.Req("GET", path, nil, "If-Modified-Since", dateOf(before))
	if r.Status != 200 || !strings.HasSuffix(string(r.Body), "second") {
		t.Errorf("switched within the second, If-Modified-Since the first answer's date: %d (%d bytes), want 200 with the new file", r.Status, len(r.Body))
	}
	// The same for a MARKDOWN document whose content changes within a second.
	st.Must("POST", "/bo/documents", `{"type":"MARKDOWN","title":"M","content":"one","sources":[],"imagesIds":[]}`, 201).JSON(t, &d)
	path = "/public/documents/" + d.ID + "/download"
	before = st.Req("GET", path, nil)
	st.Must("PATCH", "/bo/documents/"+d.ID, `{"type":"MARKDOWN","title":"M","content":"two","sources":[],"imagesIds":[]}`, 200)
	r = st.Req("GET", path, nil, "If-Modified-Since", dateOf(before))
	if r.Status != 200 || !strings.Contains(string(r.Body), "two") {
		t.Errorf("content changed within the second, If-Modified-Since the first answer's date: %d %q, want 200 with the new content", r.Status, r.Body)
	}
}

// dateOf is the date a client would send as If-Modified-Since after r: its
// Last-Modified, or, when it had none (changed within that second), the
// answer's Date, as a cache without Last-Modified may.
func dateOf(r Response) string {
	if lm := r.Header.Get("Last-Modified"); lm != "" {
		return lm
	}
	return r.Header.Get("Date")
}
