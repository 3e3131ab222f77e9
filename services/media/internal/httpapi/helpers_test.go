package httpapi_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"image"
	"image/gif"
	"image/jpeg"
	"image/png"
	"io"
	"log/slog"
	"math/rand/v2"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/textproto"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/doclib/libs/devserver"
	"github.com/doclib/libs/httpx"
	"github.com/doclib/libs/identity"
	"github.com/doclib/libs/identity/proof"
	"github.com/doclib/libs/outbox"
	"github.com/doclib/libs/testkit"
	"github.com/doclib/services/media/internal/httpapi"
	"github.com/doclib/services/media/internal/media"
	"github.com/doclib/services/media/internal/media/miniostore"
	"github.com/doclib/services/media/internal/media/mongostore"
	"github.com/doclib/services/media/internal/rendition"
	"github.com/doclib/services/media/internal/sandbox"
	"github.com/doclib/services/media/internal/usage"
)

// TestMain: this binary also runs the sandboxed PDF tools (package sandbox).
func TestMain(m *testing.M) {
	sandbox.Main()
	testkit.Main(m)
}

// catalog fakes the catalog's GET /internal/media-usage/:id.
type catalog struct {
	mu    sync.Mutex
	used  map[string][]string
	calls int
	srv   *httptest.Server
}

func newCatalog(t *testing.T) *catalog {
	c := &catalog{used: map[string][]string{}}
	c.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, ok := strings.CutPrefix(r.URL.Path, "/internal/media-usage/")
		if !ok {
			http.NotFound(w, r)
			return
		}
		c.mu.Lock()
		c.calls++
		docs := c.used[id]
		c.mu.Unlock()
		if docs == nil {
			docs = []string{}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"inUse": len(docs) > 0, "documentIds": docs})
	}))
	t.Cleanup(c.srv.Close)
	return c
}

func (c *catalog) use(mediaID string, docs ...string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.used[mediaID] = docs
}

type api struct {
	t       *testing.T
	h       http.Handler
	svc     *media.Service
	store   *mongostore.Store
	box     *outbox.Outbox
	blobs   *miniostore.Store
	catalog *catalog
	deleted int
	// renditions, when set, is given to the handler (WithRenditions).
	renditions *rendition.Service
}

// newAPI builds the real engine on this test's own database and bucket.
func newAPI(t *testing.T, cfg media.Config) *api {
	t.Helper()
	t.Parallel()
	return newAPIOn(t, cfg, testkit.MinIO(t))
}

func newAPIOn(t *testing.T, cfg media.Config, cred devserver.MinIOCredentials) *api {
	t.Helper()
	ctx := context.Background()
	db := testkit.Mongo(t)
	box := outbox.New(db, testkit.Logger(t))
	store := mongostore.New(db, box, testkit.Logger(t))
	testkit.Must(t, store.EnsureIndexes(ctx), "indexes")
	blobs, err := miniostore.New(miniostore.Config{
		Endpoint: cred.Endpoint, AccessKey: cred.AccessKey, SecretKey: cred.SecretKey,
		Bucket: testkit.UniqueName(t), Region: "us-east-1",
	})
	testkit.Must(t, err, "minio client")
	testkit.Must(t, blobs.EnsureBucket(ctx), "bucket")
	testkit.Must(t, blobs.EnsureBucket(ctx), "bucket again")
	a := &api{t: t, store: store, box: box, blobs: blobs, catalog: newCatalog(t)}
	log := slog.New(slog.DiscardHandler)
	if testing.Verbose() {
		log = slog.New(slog.NewTextHandler(tlog{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	catalogURL, _ := url.Parse(a.catalog.srv.URL)
	a.svc = media.NewService(store, blobs, usage.New(catalogURL), cfg, log)
	a.h = a.engine(log)
	return a
}

// replica returns another media replica on the same database and bucket.
func (a *api) replica() *api {
	b := *a
	b.h = b.engine(slog.New(slog.DiscardHandler))
	return &b
}

func (a *api) engine(log *slog.Logger) http.Handler {
	e := httpx.NewEngine("media", log)
	e.Use(proof.Middleware(proof.NewVerifier(identityKey))) // as cmd/media wires it
	h := httpapi.New(a.svc, a.store, log, func() { a.deleted++ })
	if a.renditions != nil {
		h.WithRenditions(a.renditions)
	}
	h.Register(e)
	return e
}

type tlog struct{ t *testing.T }

func (l tlog) Write(p []byte) (int, error) { l.t.Log(strings.TrimSpace(string(p))); return len(p), nil }

type response struct {
	status int
	header http.Header
	body   []byte
}

func (r response) json(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("body %q is not JSON: %v", r.body, err)
	}
}

type problemBody struct {
	Status int    `json:"status"`
	Code   string `json:"code"`
	Detail string `json:"detail"`
	Errors []struct {
		Field   string `json:"field"`
		Message string `json:"message"`
	} `json:"errors"`
}

// problem checks r is a problem document with status and code.
func (r response) problem(t *testing.T, status int, code string) problemBody {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d; body %s", r.status, status, r.body)
	}
	if ct := r.header.Get("Content-Type"); ct != "application/problem+json" {
		t.Errorf("Content-Type %q, want application/problem+json", ct)
	}
	var p problemBody
	r.json(t, &p)
	if p.Status != status || p.Code != code {
		t.Errorf("problem %+v, want status %d code %s", p, status, code)
	}
	return p
}

// identityKey is the key the tests sign /bo requests with, as the gateway
// would, for the caller uploader.
var identityKey = []byte("media-test-identity-key-0123456789ab")

const uploader = "uploader@example.org"

// signAsGateway signs req as the gateway would for uploader.
func signAsGateway(req *http.Request) {
	proof.NewSigner(identityKey).SignRequest(req, identity.Caller{Name: uploader, Role: identity.Editor})
}

// serve sends req to the engine, signed as the gateway would for uploader
// when it is a /bo request without a caller header of its own.
func (a *api) serve(req *http.Request) response {
	if strings.HasPrefix(req.URL.Path, "/bo/") && req.Header.Get(proof.Header) == "" {
		signAsGateway(req)
	}
	rec := httptest.NewRecorder()
	a.h.ServeHTTP(rec, req)
	return response{rec.Code, rec.Header(), rec.Body.Bytes()}
}

func (a *api) get(path string, header ...string) response {
	a.t.Helper()
	req := httptest.NewRequest(http.MethodGet, path, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	return a.serve(req)
}

func (a *api) must(method, path string, want int) response {
	a.t.Helper()
	r := a.serve(httptest.NewRequest(method, path, nil))
	if r.status != want {
		a.t.Fatalf("%s %s: status %d, want %d; body %s", method, path, r.status, want, r.body)
	}
	return r
}

// part is one part of a multipart body.
type part struct {
	field, filename, contentType string
	content                      []byte
}

func multipartBody(t *testing.T, parts ...part) (string, []byte) {
	t.Helper()
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	for _, p := range parts {
		h := textproto.MIMEHeader{}
		cd := fmt.Sprintf(`form-data; name=%q`, p.field)
		switch {
		case strings.ContainsFunc(p.filename, func(r rune) bool { return r < 0x20 || r == 0x7f }):
			// Control characters cannot travel in a quoted header value.
			var enc strings.Builder
			for _, b := range []byte(p.filename) {
				fmt.Fprintf(&enc, "%%%02X", b)
			}
			cd += "; filename*=UTF-8''" + enc.String()
		case p.filename != "":
			cd += `; filename="` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(p.filename) + `"`
		}
		h.Set("Content-Disposition", cd)
		if p.contentType != "" {
			h.Set("Content-Type", p.contentType)
		}
		pw, err := w.CreatePart(h)
		testkit.Must(t, err, "create part")
		_, _ = pw.Write(p.content)
	}
	testkit.Must(t, w.Close(), "close multipart")
	return w.FormDataContentType(), buf.Bytes()
}

func (a *api) upload(parts ...part) response {
	a.t.Helper()
	ct, body := multipartBody(a.t, parts...)
	req := httptest.NewRequest(http.MethodPost, "/bo/medias", bytes.NewReader(body))
	req.Header.Set("Content-Type", ct)
	return a.serve(req)
}

type adminMedia struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	MimeType  string `json:"mimeType"`
	Size      int64  `json:"size"`
	SHA256    string `json:"sha256"`
	Width     int    `json:"width"`
	Height    int    `json:"height"`
	CreatedAt string `json:"createdAt"`
	UpdatedAt string `json:"updatedAt"`
	CreatedBy string `json:"createdBy"`
	UpdatedBy string `json:"updatedBy"`
}

// mustUpload uploads content as the file part and returns the record.
func (a *api) mustUpload(filename string, content []byte) adminMedia {
	a.t.Helper()
	r := a.upload(part{"file", filename, "application/octet-stream", content})
	if r.status != http.StatusCreated {
		a.t.Fatalf("upload %q: status %d, want 201; body %s", filename, r.status, r.body)
	}
	var m adminMedia
	r.json(a.t, &m)
	if loc := r.header.Get("Location"); loc != "/bo/medias/"+m.ID {
		a.t.Errorf("Location %q, want /bo/medias/%s", loc, m.ID)
	}
	return m
}

// assertEmpty checks that nothing was left behind: no record, no object, no
// unfinished multipart upload.
func (a *api) assertEmpty() {
	a.t.Helper()
	ctx := context.Background()
	n, err := a.store.Collection().CountDocuments(ctx, bson.M{})
	testkit.Must(a.t, err, "count records")
	if n != 0 {
		a.t.Errorf("%d record(s) left in the collection, want none", n)
	}
	keys, err := a.blobs.Keys(ctx)
	testkit.Must(a.t, err, "list objects")
	if len(keys) != 0 {
		a.t.Errorf("objects left in the bucket: %v", keys)
	}
	up, err := a.blobs.IncompleteUploads(ctx)
	testkit.Must(a.t, err, "list incomplete uploads")
	if up != 0 {
		a.t.Errorf("%d unfinished multipart upload(s) left, want none", up)
	}
}

// Sample contents whose first bytes make their type: a PDF's magic, and
// whole small images (their header is read: the random bytes sample puts
// after them are past it).
var (
	pngHead  = encoded(png.Encode, 3, 2)
	jpegHead = encoded(func(w io.Writer, m image.Image) error { return jpeg.Encode(w, m, nil) }, 5, 4)
	gifHead  = encoded(func(w io.Writer, m image.Image) error { return gif.Encode(w, m, nil) }, 2, 7)
	webpHead = webpVP8L(6, 9)
	pdfHead  = []byte("%PDF-1.7\n%\xe2\xe3\xcf\xd3\n")
)

// encoded returns a w×h image in a format of the standard library.
func encoded(encode func(io.Writer, image.Image) error, w, h int) []byte {
	var b bytes.Buffer
	if err := encode(&b, image.NewRGBA(image.Rect(0, 0, w, h))); err != nil {
		panic(err)
	}
	return b.Bytes()
}

// webpVP8L returns the header of a lossless WebP of w×h pixels (RIFF, the
// VP8L chunk, its signature and size bits: all DecodeConfig reads).
func webpVP8L(w, h int) []byte {
	b := []byte("RIFF\x12\x00\x00\x00WEBPVP8L\x05\x00\x00\x00\x2f")
	b = binary.LittleEndian.AppendUint32(b, uint32(w-1)|uint32(h-1)<<14)
	return append(b, 0) // the chunk's padding to an even size
}

// sample returns head followed by random bytes, n in all.
func sample(head []byte, n int, seed uint64) []byte {
	b := make([]byte, n)
	r := rand.NewChaCha8([32]byte{byte(seed), byte(seed >> 8)})
	_, _ = r.Read(b)
	copy(b, head)
	return b
}

func sum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func within(t *testing.T, limit time.Duration, what string, f func()) {
	t.Helper()
	start := time.Now()
	f()
	if d := time.Since(start); d > limit {
		t.Errorf("%s took %s, want at most %s", what, d.Round(time.Millisecond), limit)
	} else {
		t.Logf("%s took %s", what, d.Round(time.Millisecond))
	}
}

func req(method, path string) *http.Request { return httptest.NewRequest(method, path, nil) }

// putObject writes a small object at key, as if a removal had failed.
func (a *api) putObject(key string) {
	a.t.Helper()
	testkit.Must(a.t, a.blobs.Put(context.Background(), key, "application/pdf", bytes.NewReader(pdfHead)), "put object")
}
