package httpapi

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/andybalholm/brotli"
	"github.com/gin-gonic/gin"
	"github.com/klauspost/compress/zstd"

	"github.com/doclib/libs/httpx"
	"github.com/doclib/libs/problem"
	"github.com/doclib/libs/rendering"
	"github.com/doclib/services/catalog/internal/library"
)

// bundleAnswer is the head of GET /public/bundle's answer; writeBundle
// streams it member by member, its documents and details one at a time.
type bundleAnswer struct {
	Cursor        string            `json:"cursor"`
	Tags          []string          `json:"tags"`
	Config        json.RawMessage   `json:"config"`
	TagCategories json.RawMessage   `json:"tagCategories"`
	FilesSize     int64             `json:"filesSize"`
	Files         []json.RawMessage `json:"files"`
}

// bundleDetail is Document with updatedAt and, for MARKDOWN and HTML, the
// address of its words (a PDF's are its file's text).
type bundleDetail struct {
	documentDetail
	UpdatedAt string `json:"updatedAt"`
	Text      string `json:"text,omitempty"`
}

// bundle serves GET /public/bundle: the public library for an app's first
// start (library/bundle.go), from the spool: written once per ETag, in the
// coding the client prefers (zstd, br, gzip), 304 for the ETag of any.
func (h *Handler) bundle(c *gin.Context) {
	tags, err := library.ParseBundleTags(c.Query("tags"))
	if err != nil {
		httpx.Fail(c, problem.BadRequest("tags: "+err.Error()))
		return
	}
	b, err := h.lib.Bundle(c, tags, rendering.MaxLag(c.Request, publicLag))
	if err != nil {
		fail(c, err)
		return
	}
	enc := rendering.NegotiateAmong(c.GetHeader("Accept-Encoding"), bundleEncodings...)
	etags := map[rendering.Encoding]string{rendering.Identity: b.ETag}
	for _, e := range bundleEncodings {
		etags[e] = strings.TrimSuffix(b.ETag, `"`) + "-" + e.String() + `"`
	}
	hd := c.Writer.Header()
	hd.Set("Cache-Control", rendering.Public)
	hd.Add("Vary", "Accept-Encoding")
	if e, ok := matchETag(c.GetHeader("If-None-Match"), etags, enc); ok {
		hd.Set("ETag", etags[e])
		c.Status(http.StatusNotModified)
		return
	}
	f, err := h.bundles.open(c, etags[enc], func(w io.Writer) error { return writeEncoded(c, w, enc, b) })
	if err != nil {
		fail(c, err)
		return
	}
	defer h.bundles.release(f)
	hd.Set("ETag", etags[enc])
	hd.Set("Content-Type", rendering.JSONType)
	hd.Set("Content-Length", strconv.FormatInt(f.size, 10))
	if enc != rendering.Identity {
		hd.Set("Content-Encoding", enc.String())
	}
	c.Status(http.StatusOK)
	if c.Request.Method != http.MethodHead {
		_, _ = io.Copy(c.Writer, f.reader())
	}
}

// matchETag reports which of etags If-None-Match names (the negotiated
// one for "*").
func matchETag(inm string, etags map[rendering.Encoding]string, negotiated rendering.Encoding) (rendering.Encoding, bool) {
	for _, tag := range strings.Split(inm, ",") {
		tag = strings.TrimPrefix(strings.TrimSpace(tag), "W/")
		if tag == "*" {
			return negotiated, true
		}
		for e, t := range etags {
			if tag == t {
				return e, true
			}
		}
	}
	return 0, false
}

// bundleEncodings are the codings a bundle is offered in, beside identity.
var bundleEncodings = []rendering.Encoding{rendering.Zstd, rendering.Brotli, rendering.Gzip}

// writeEncoded writes the bundle to w in enc. The levels are those of the
// JSON renderings (libs/rendering) but zstd's, one below its best: a
// bundle is compressed once per change, yet the first request after one
// waits for it.
func writeEncoded(ctx context.Context, w io.Writer, enc rendering.Encoding, b library.Bundle) error {
	var z io.WriteCloser
	var err error
	switch enc {
	case rendering.Gzip:
		z, err = gzip.NewWriterLevel(w, 8)
	case rendering.Zstd:
		z, err = zstd.NewWriter(w, zstd.WithEncoderLevel(zstd.SpeedBetterCompression), zstd.WithEncoderConcurrency(1))
	case rendering.Brotli:
		z = brotli.NewWriterLevel(w, 5)
	default:
		return writeBundle(ctx, w, b)
	}
	if err != nil {
		return err
	}
	if err := writeBundle(ctx, z, b); err != nil {
		return err
	}
	return z.Close()
}

// writeBundle writes b as JSON: the head, then the documents and the
// details one at a time, stopping when ctx ends.
func writeBundle(ctx context.Context, w io.Writer, b library.Bundle) error {
	head := bundleAnswer{Cursor: b.Next.String(), Tags: b.Tags, Config: b.Config, TagCategories: b.Categories,
		FilesSize: b.FilesSize, Files: make([]json.RawMessage, len(b.Files))}
	for i, f := range b.Files {
		head.Files[i] = f.Record
	}
	raw, err := json.Marshal(head)
	if err != nil {
		return err
	}
	s := &jsonStream{w: w}
	s.raw(raw[:len(raw)-1]) // without its closing brace
	s.array(ctx, `,"documents":`, len(b.Listing), func(i int) any {
		d := b.Listing[i]
		return syncDocument{documentShort: toShort(*d), UpdatedAt: httpx.FormatTime(d.UpdatedAt)}
	})
	s.array(ctx, `,"details":`, len(b.Details), func(i int) any {
		d := b.Details[i]
		out := bundleDetail{documentDetail: toDetail(*d, b.From.Related(d)), UpdatedAt: httpx.FormatTime(d.UpdatedAt)}
		if d.Type.Inline() {
			out.Text = "/public/documents/" + d.ID + "/text"
		}
		return out
	})
	s.raw([]byte("}"))
	return s.err
}

// jsonStream writes JSON in pieces, keeping the first error.
type jsonStream struct {
	w   io.Writer
	err error
}

func (s *jsonStream) raw(b []byte) {
	if s.err == nil {
		_, s.err = s.w.Write(b)
	}
}

// array writes name (the member's `,"name":`) and the JSON array of n
// items, each marshalled on its own.
func (s *jsonStream) array(ctx context.Context, name string, n int, item func(i int) any) {
	s.raw([]byte(name + "["))
	for i := 0; i < n && s.err == nil; i++ {
		if s.err = ctx.Err(); s.err != nil {
			return
		}
		if i > 0 {
			s.raw([]byte(","))
		}
		var b []byte
		if b, s.err = json.Marshal(item(i)); s.err == nil {
			s.raw(b)
		}
	}
	s.raw([]byte("]"))
}
