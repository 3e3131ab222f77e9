// Package rendering serves answers that are rendered once and kept in
// memory (a listing, a detail, the tag categories, a media record) the way
// CONTRACT.md §7 says every GET answers:
//
//   - a strong ETag, and If-None-Match answered 304 (whatever the request's
//     Cache-Control says: no-cache asks caches to revalidate, which is what
//     a conditional request is);
//   - gzip, zstd and br for bodies of MinCompressSize bytes or more, each
//     encoding made once per Rendering, on first demand, and with an ETag of
//     its own; If-None-Match with the ETag of any encoding is honoured;
//     Vary: Accept-Encoding;
//   - Cache-Control as the caller says (Public or Private);
//   - HEAD answered with the same headers and no body.
//
// A Rendering never changes once made: when the data changes, make a new
// one (Cache does that when a revision moves). Serving one costs no
// allocation and no copy beyond the write itself, so a service (or the
// gateway, which renders again what it micro-caches) answers from memory at
// about the speed of a static file server.
//
// Typical use, in a handler:
//
//	r, err := rendering.JSON(dto)      // or kept from an earlier request
//	...
//	r.Serve(c.Writer, c.Request, rendering.Public)
//
// and httpx.GET registers the route for HEAD too.
package rendering

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
)

// Cache-Control values of JSON answers (CONTRACT.md §7): clients may keep
// them but revalidate every time; back-office answers were asked for with
// credentials, so no shared cache may keep them.
const (
	Public  = "no-cache"
	Private = "private, no-cache"
)

// JSONType is the Content-Type of JSON renderings.
const JSONType = "application/json; charset=utf-8"

// MinCompressSize is the smallest body that is compressed: below it the
// framing and the client's work outweigh the bytes saved.
const MinCompressSize = 1024

// Encoding is a content coding a Rendering can be sent in.
type Encoding int

// The encodings, in the order the server prefers them when a client
// accepts several equally: zstd decodes fastest, br is the smallest (a few
// per cent below the others on a listing), gzip is what every client has.
const (
	Identity Encoding = iota
	Zstd
	Brotli
	Gzip
	numEncodings
)

var encodingNames = [numEncodings]string{"identity", "zstd", "br", "gzip"}

func (e Encoding) String() string { return encodingNames[e] }

// A Rendering is one answer's bytes, its content type and its strong ETag,
// with its compressed encodings made on first demand. Its zero value is not
// usable: make one with New, NewWithETag or JSON.
type Rendering struct {
	contentType string
	body        []byte
	length      []string // Content-Length of the identity body
	etags       [numEncodings]string
	etagHeaders [numEncodings][]string
	encoded     [numEncodings]encoded
}

// encoded is one compressed form, made once.
type encoded struct {
	once   sync.Once
	body   []byte
	length []string
}

// New returns a Rendering of body, whose ETag is a digest of body.
// The Rendering keeps body: the caller must not change it afterwards.
func New(contentType string, body []byte) *Rendering {
	sum := sha256.Sum256(body)
	return NewWithETag(contentType, body, `"`+hex.EncodeToString(sum[:16])+`"`)
}

// NewWithETag returns a Rendering of body whose identity ETag is etag (a
// strong, quoted entity tag the caller already has, such as an upstream
// service's). The ETag of each encoding is derived from it ("x" gives
// "x-gzip"), so renderings of the same bytes under the same ETag, made by
// different processes, agree on every ETag and every compressed body.
// The Rendering keeps body: the caller must not change it afterwards.
func NewWithETag(contentType string, body []byte, etag string) *Rendering {
	r := &Rendering{contentType: contentType, body: body, length: []string{strconv.Itoa(len(body))}}
	for e := Identity; e < numEncodings; e++ {
		r.etags[e] = etag
		if e != Identity {
			r.etags[e] = encodedETag(etag, e)
		}
		r.etagHeaders[e] = []string{r.etags[e]}
	}
	return r
}

// JSON returns a Rendering of v as JSON, encoded as encoding/json.Marshal
// (and so Gin's c.JSON) writes it.
func JSON(v any) (*Rendering, error) {
	body, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return New(JSONType, body), nil
}

// encodedETag inserts the encoding's name before the closing quote.
func encodedETag(etag string, e Encoding) string {
	if strings.HasSuffix(etag, `"`) && len(etag) >= 2 {
		return etag[:len(etag)-1] + "-" + e.String() + `"`
	}
	return etag + "-" + e.String()
}

// ETag is the identity body's strong, quoted ETag.
func (r *Rendering) ETag() string { return r.etags[Identity] }

// HasETag reports whether tag is the ETag of one of r's encodings, as a
// client that read r sends it back (If-Match), compared whole.
func (r *Rendering) HasETag(tag string) bool {
	for _, t := range r.etags {
		if t == tag {
			return true
		}
	}
	return false
}

// ETagOf is the ETag the body in encoding e is sent with.
func (r *Rendering) ETagOf(e Encoding) string { return r.etags[e] }

// Body is the identity body. The caller must not change it.
func (r *Rendering) Body() []byte { return r.body }

// ContentType is the body's media type.
func (r *Rendering) ContentType() string { return r.contentType }

// Encoded returns the body in encoding e, compressing it on the first call
// for e (concurrent callers wait for that one compression). Bodies smaller
// than MinCompressSize are never compressed: it returns the identity body.
func (r *Rendering) Encoded(e Encoding) []byte {
	body, _ := r.encodedWithLength(e)
	return body
}

func (r *Rendering) encodedWithLength(e Encoding) ([]byte, []string) {
	if e == Identity || len(r.body) < MinCompressSize {
		return r.body, r.length
	}
	enc := &r.encoded[e]
	enc.once.Do(func() {
		enc.body = compress(e, r.body)
		enc.length = []string{strconv.Itoa(len(enc.body))}
	})
	return enc.body, enc.length
}

// Negotiate returns the encoding r is sent in for a request whose
// Accept-Encoding header is acceptEncoding: the acceptable one with the
// highest q-value (RFC 9110 §12.5.3), ties going to the server's order;
// identity for a body under MinCompressSize, when nothing else is
// acceptable, or when the client weighs identity above every coding.
func (r *Rendering) Negotiate(acceptEncoding string) Encoding {
	if len(r.body) < MinCompressSize || acceptEncoding == "" {
		return Identity
	}
	return negotiate(acceptEncoding)
}

// Serve answers req with r: 304 when req's If-None-Match names the ETag of
// any of r's encodings (with that ETag, so the client's cache finds the
// answer it kept), otherwise 200 with the body in the negotiated encoding
// (no body for HEAD). cacheControl is Public or Private ("" sets none).
// The status is written; the caller writes nothing after.
func (r *Rendering) Serve(w http.ResponseWriter, req *http.Request, cacheControl string) {
	h := w.Header()
	if cacheControl != "" {
		h["Cache-Control"] = cacheControlHeader(cacheControl)
	}
	addVary(h)
	e := r.Negotiate(req.Header.Get("Accept-Encoding"))
	if inm := req.Header.Get("If-None-Match"); inm != "" {
		if m, ok := r.matchETag(inm, e); ok {
			h["Etag"] = r.etagHeaders[m]
			w.WriteHeader(http.StatusNotModified)
			return
		}
	}
	body, length := r.encodedWithLength(e)
	h["Content-Type"] = r.contentTypeHeader()
	h["Etag"] = r.etagHeaders[e]
	if e != Identity {
		h["Content-Encoding"] = encodingHeaders[e]
	}
	h["Content-Length"] = length
	w.WriteHeader(http.StatusOK)
	if req.Method != http.MethodHead {
		_, _ = w.Write(body)
	}
}

// matchETag reports whether the If-None-Match value inm names one of r's
// ETags (weak comparison, RFC 9110 §13.1.2) and which: the selected
// encoding's when it is listed (or inm is "*"), otherwise the first listed.
func (r *Rendering) matchETag(inm string, selected Encoding) (Encoding, bool) {
	found, ok := Identity, false
	for rest := inm; rest != ""; {
		var tag string
		tag, rest, _ = strings.Cut(rest, ",")
		tag = strings.TrimPrefix(strings.TrimSpace(tag), "W/")
		if tag == "*" {
			return selected, true
		}
		for e := Identity; e < numEncodings; e++ {
			if tag != r.etags[e] {
				continue
			}
			if e == selected {
				return e, true
			}
			if !ok {
				found, ok = e, true
			}
		}
	}
	return found, ok
}

func (r *Rendering) contentTypeHeader() []string {
	if r.contentType == JSONType {
		return jsonTypeHeader
	}
	return []string{r.contentType}
}

// Shared header values, so serving allocates nothing; net/http only reads
// them.
var (
	jsonTypeHeader  = []string{JSONType}
	encodingHeaders = [numEncodings][]string{nil, {"zstd"}, {"br"}, {"gzip"}}
	publicHeader    = []string{Public}
	privateHeader   = []string{Private}
	varyHeader      = []string{"Accept-Encoding"}
)

// addVary adds Accept-Encoding to the Vary header, beside what another
// layer (CORS: Origin) may have put there.
func addVary(h http.Header) {
	v := h["Vary"]
	if len(v) == 0 {
		h["Vary"] = varyHeader
		return
	}
	for _, s := range v {
		if strings.Contains(strings.ToLower(s), "accept-encoding") {
			return
		}
	}
	h["Vary"] = append(slices.Clip(v), "Accept-Encoding") // never into a shared array
}

func cacheControlHeader(v string) []string {
	switch v {
	case Public:
		return publicHeader
	case Private:
		return privateHeader
	}
	return []string{v}
}

// NegotiateAmong picks, for an Accept-Encoding value, the encoding of
// offered a client prefers, as Negotiate does, or Identity: for an answer
// that is made as it is sent (streamed), in the encodings its maker has.
func NegotiateAmong(acceptEncoding string, offered ...Encoding) Encoding {
	if acceptEncoding == "" {
		return Identity
	}
	var mask [numEncodings]bool
	for _, e := range offered {
		mask[e] = true
	}
	return negotiateAmong(acceptEncoding, mask)
}

var allEncodings = [numEncodings]bool{true, true, true, true}

// negotiate picks the encoding for an Accept-Encoding value; see Negotiate.
func negotiate(acceptEncoding string) Encoding {
	return negotiateAmong(acceptEncoding, allEncodings)
}

// negotiateAmong is negotiate among the codings offered.
func negotiateAmong(acceptEncoding string, offered [numEncodings]bool) Encoding {
	var q [numEncodings]float64
	var listed [numEncodings]bool // Identity too: a client may prefer it
	star, starListed := 0.0, false
	for rest := acceptEncoding; rest != ""; {
		var item string
		item, rest, _ = strings.Cut(rest, ",")
		name, params, _ := strings.Cut(item, ";")
		name = strings.TrimSpace(name)
		weight := qValue(params)
		e := Identity
		switch {
		case strings.EqualFold(name, "gzip"), strings.EqualFold(name, "x-gzip"):
			e = Gzip
		case strings.EqualFold(name, "zstd"):
			e = Zstd
		case strings.EqualFold(name, "br"):
			e = Brotli
		case strings.EqualFold(name, "identity"):
			e = Identity
		case name == "*":
			star, starListed = weight, true
			continue
		default:
			continue
		}
		q[e], listed[e] = weight, true
	}
	weightOf := func(e Encoding) float64 {
		if !listed[e] && starListed {
			return star
		}
		return q[e]
	}
	best, bestQ := Identity, 0.0
	for e := Zstd; e < numEncodings; e++ {
		if w := weightOf(e); offered[e] && w > bestQ {
			best, bestQ = e, w
		}
	}
	// Identity only when the client gives it a higher weight than every
	// coding (not listed, it is acceptable but preferred by nobody).
	if (listed[Identity] || starListed) && weightOf(Identity) > bestQ {
		return Identity
	}
	return best
}

// qValue reads the weight of an Accept-Encoding item's parameters ("q=0.5");
// 1 when absent, 0 when unreadable (a client that garbles it gets identity).
func qValue(params string) float64 {
	for rest := params; rest != ""; {
		var p string
		p, rest, _ = strings.Cut(rest, ";")
		k, v, ok := strings.Cut(strings.TrimSpace(p), "=")
		if !ok || !strings.EqualFold(strings.TrimSpace(k), "q") {
			continue
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil || f < 0 || f > 1 {
			return 0
		}
		return f
	}
	return 1
}

// Compression levels, chosen by measurement on a 1.6 MiB listing of 10,000
// documents (each about 30 ms on one core of the benchmark machine, made
// once per rendering): gzip 8 is 20.4 % of the bytes where gzip 9 takes
// four times as long for 1 % less; zstd's best level is 20.4 %; brotli 5 is
// 19.7 % where 11 takes 3 s.
const (
	gzipLevel   = 8
	brotliLevel = 5
)

// zstdEncoder is shared: EncodeAll is safe for concurrent use.
var zstdEncoder = sync.OnceValue(func() *zstd.Encoder {
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedBestCompression))
	if err != nil {
		panic("rendering: zstd encoder: " + err.Error()) // only for invalid options
	}
	return enc
})

func compress(e Encoding, body []byte) []byte {
	switch e {
	case Zstd:
		return zstdEncoder().EncodeAll(body, make([]byte, 0, len(body)/3))
	case Brotli:
		var buf bytes.Buffer
		buf.Grow(len(body) / 3)
		w := brotli.NewWriterLevel(&buf, brotliLevel)
		_, _ = w.Write(body) // writes to a bytes.Buffer do not fail
		_ = w.Close()
		return buf.Bytes()
	case Gzip:
		var buf bytes.Buffer
		buf.Grow(len(body) / 3)
		w, _ := gzip.NewWriterLevel(&buf, gzipLevel) // a valid level
		_, _ = w.Write(body)
		_ = w.Close()
		return buf.Bytes()
	}
	return body
}
