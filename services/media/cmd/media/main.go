// Command media serves the media files of the document library: uploads
// streamed to an S3 bucket (MinIO), their records in MongoDB, downloads with
// ranges, and the internal lookup and download the catalog uses.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/doclib/libs/config"
	"github.com/doclib/libs/events"
	"github.com/doclib/libs/httpx"
	"github.com/doclib/libs/idempotency"
	"github.com/doclib/libs/identity/proof"
	"github.com/doclib/libs/metrics"
	"github.com/doclib/libs/mongox"
	"github.com/doclib/libs/outbox"
	"github.com/doclib/libs/periodic"
	"github.com/doclib/libs/startup"
	"github.com/doclib/libs/startup/database"
	"github.com/doclib/services/media/internal/httpapi"
	"github.com/doclib/services/media/internal/media"
	"github.com/doclib/services/media/internal/media/miniostore"
	"github.com/doclib/services/media/internal/media/mongostore"
	"github.com/doclib/services/media/internal/pdf"
	"github.com/doclib/services/media/internal/rendition"
	"github.com/doclib/services/media/internal/rendition/vipsimage"
	"github.com/doclib/services/media/internal/sandbox"
	"github.com/doclib/services/media/internal/usage"
)

const service = "media"

// sweepEvery is how often this replica finishes interrupted uploads and
// deletions.
const sweepEvery = time.Minute

// bucketWait is how long start-up waits for the bucket before serving
// without it (the object store is down: it is made once it is back).
const bucketWait = 5 * time.Second

// main first becomes a sandboxed PDF tool when this binary was started
// again as one (package sandbox).
func main() {
	sandbox.Main()
	startup.Main(service, run)
}

type settings struct {
	server      httpx.ServerConfig
	logLevel    string
	mongoURI    string
	database    string
	catalogURL  *url.URL
	natsURL     string
	identityKey []byte // verifies the gateway's signature of the caller on /bo
	// idempotencyRetention is how long an Idempotency-Key is kept, in
	// idempotencyDatabase (shared by the services).
	idempotencyRetention time.Duration
	idempotencyDatabase  string
	s3                   miniostore.Config
	media                media.Config
	renditions           rendition.Config
	pdf                  pdf.Config
	pdfEnabled           bool
	relay                outbox.RelayConfig
}

func load(env *config.Env) (settings, error) {
	s := settings{
		// Uploads and downloads of 100 MiB over slow links need long
		// read and write timeouts; headers and idle connections stay short.
		server: httpx.LoadServerConfig(env, httpx.ServerConfig{
			Addr: ":8083", ReadTimeout: 30 * time.Minute, WriteTimeout: 30 * time.Minute, IdleTimeout: 120 * time.Second,
		}),
		logLevel:             env.String("LOG_LEVEL", "info"),
		mongoURI:             env.Required("MONGODB_URI"),
		database:             env.String("MONGODB_DATABASE", "media"),
		catalogURL:           env.URL("CATALOG_URL", ""),
		natsURL:              env.Required("NATS_URL"),
		idempotencyRetention: idempotency.LoadRetention(env),
		idempotencyDatabase:  idempotency.LoadDatabase(env),
		identityKey:          proof.LoadKey(env),
		s3: miniostore.Config{
			Endpoint:  env.Required("S3_ENDPOINT"),
			AccessKey: env.Required("S3_ACCESS_KEY"),
			SecretKey: env.Secret("S3_SECRET_KEY"),
			Bucket:    env.String("S3_BUCKET", "doclib-media"),
			UseTLS:    env.Bool("S3_USE_TLS", false),
			Region:    env.String("S3_REGION", "us-east-1"),
		},
		media: media.Config{
			MaxSize:      env.Int("MEDIA_MAX_UPLOAD_SIZE", media.DefaultMaxSize, 1, math.MaxInt64-(1<<30)),
			AllowedTypes: env.List("MEDIA_ALLOWED_TYPES", media.DefaultAllowedTypes),
			// Privacy: a phone photo carries where it was taken.
			StripMetadata: env.Bool("MEDIA_STRIP_METADATA", true),
		},
		relay:      outbox.LoadRelayConfig(env),
		renditions: loadRenditions(env),
		pdfEnabled: env.Bool("PDF_ENABLED", true),
		pdf: pdf.Config{
			Memory:   env.Int("PDF_MAX_MEMORY", pdf.DefaultMemory, 64<<20, 1<<40),
			CPU:      env.Duration("PDF_MAX_CPU", pdf.DefaultCPU),
			Timeout:  env.Duration("PDF_TIMEOUT", pdf.DefaultTimeout),
			MaxPages: int(env.Int("PDF_TEXT_MAX_PAGES", pdf.DefaultMaxPages, 1, 1_000_000)),
			MaxText:  env.Int("PDF_TEXT_MAX_BYTES", pdf.DefaultMaxText, 1<<10, 1<<30),
		},
	}
	if strings.Contains(s.s3.Endpoint, "://") || strings.Contains(s.s3.Endpoint, "/") {
		env.Check("S3_ENDPOINT", errors.New("must be host:port, without a scheme or a path (TLS is S3_USE_TLS)"))
	}
	return s, env.Err()
}

// loadRenditions reads the RENDITION_* settings (services/media/README.md, "Image renditions").
func loadRenditions(env *config.Env) rendition.Config {
	c := rendition.Config{
		AllowArbitrary:  env.Bool("RENDITION_ARBITRARY_SIZES", false),
		MaxSide:         int(env.Int("RENDITION_MAX_SIDE", rendition.DefaultMaxSide, 16, 16384)),
		Quality:         int(env.Int("RENDITION_QUALITY", rendition.DefaultQuality, 1, 100)),
		AutoAVIF:        env.Bool("RENDITION_AUTO_AVIF", false),
		SVG:             env.Bool("RENDITION_SVG", false),
		Concurrency:     int(env.Int("RENDITION_CONCURRENCY", rendition.DefaultConcurrency, 1, 64)),
		Wait:            env.Duration("RENDITION_WAIT", rendition.DefaultWait),
		MaxSourceBytes:  env.Int("RENDITION_MAX_SOURCE_BYTES", rendition.DefaultMaxSourceBytes, 1, 1<<30),
		MaxSourcePixels: int(env.Int("RENDITION_MAX_SOURCE_PIXELS", media.MaxImagePixels, 1, media.MaxImagePixels)),
	}
	var err error
	if c.Sizes, err = rendition.ParseSizes(env.String("RENDITION_SIZES", "160,320,640,1280,1920"), c.MaxSide); err != nil {
		env.Check("RENDITION_SIZES", err)
	}
	if c.Presets, err = rendition.ParsePresets(env.String("RENDITION_PRESETS",
		"thumb:160x160:cover,card:640x0:inside,full:1920x1920:inside"), c.MaxSide); err != nil {
		env.Check("RENDITION_PRESETS", err)
	}
	return c
}

// run wires the service top to bottom. It starts, in this order, the
// logger, telemetry, the MongoDB client (the store's indexes are the first
// call to reach it), the object storage (its bucket ensured in the
// background), the sweep, NATS (connecting in the background), the outbox
// relay and the HTTP server; each defer stops what was started just above
// it, so at shutdown the server lets in-flight requests finish, the relay
// makes a last pass, NATS drains, the sweep and the bucket's retries stop,
// MongoDB disconnects, telemetry flushes.
func run(ctx context.Context) error {
	env := config.FromEnviron()
	cfg, err := load(env)
	if err != nil {
		return err
	}
	proc, err := startup.Begin(ctx, service, env, cfg.logLevel)
	if err != nil {
		return err
	}
	defer proc.Stop()
	log := proc.Log
	db, err := database.Open(ctx, proc, cfg.mongoURI)
	if err != nil {
		return err
	}

	box := outbox.New(db.Database(cfg.database), log)
	store := mongostore.New(db.Database(cfg.database), box, log)
	keys := idempotency.NewKeys(db, cfg.idempotencyDatabase,
		idempotency.KeysConfig{Retention: cfg.idempotencyRetention, Streamed: isUpload, Log: log})
	if err := database.EnsureIndexes(ctx, box, store, keys); err != nil {
		return err
	}

	blobs, err := miniostore.New(cfg.s3)
	if err != nil {
		return err
	}
	// Media records are served while the object store is down (uploads and
	// downloads answer 503), also when it is down at start-up: the bucket
	// is made in the background. Start-up waits a little for it, so that a
	// normal start serves uploads at once.
	bucketMade, stopBucket := periodic.Until(ctx, log, fmt.Sprintf("s3 bucket %s (is S3_ENDPOINT reachable, are the keys right?)", cfg.s3.Bucket), blobs.EnsureBucket)
	defer stopBucket()
	select {
	case <-bucketMade:
	case <-time.After(bucketWait):
	case <-ctx.Done():
	}

	// An upload cannot stream longer than the server reads a request: the
	// sweep removes what older ones left.
	cfg.media.MaxUploadTime = cfg.server.ReadTimeout
	svc := media.NewService(store, blobs, usage.New(cfg.catalogURL), cfg.media, log)
	pdfReader := pdfReader(cfg, log)
	if pdfReader != nil {
		svc.WithPDF(pdfReader)
	}
	// Several replicas may sweep at once: it is idempotent.
	stopSweep := periodic.Start(ctx, log, "sweep", sweepEvery, svc.Sweep)
	defer stopSweep()

	bus, err := events.Open(ctx, cfg.natsURL, service, log)
	if err != nil {
		return err
	}
	defer bus.Close()

	// A deletion records its event in the outbox in its transaction; the
	// relay publishes it, woken by the commit.
	defer box.Start(events.NewPublisher(bus.JS, log), cfg.relay)()

	// Ready while MongoDB answers; NATS and the object storage are
	// reported, never required.
	health := httpx.NewHealth(map[string]httpx.Check{"mongodb": mongox.Ping(db)}).
		Report(map[string]httpx.Check{"nats": bus.Ready, "s3": blobs.Ready})
	engine := httpx.NewEngine(service, log)
	// Before every route: /bo answers only requests the gateway signed.
	engine.Use(proof.Middleware(proof.NewVerifier(cfg.identityKey)))
	// A POST with an Idempotency-Key runs once: its answer commits with
	// its record, in the keys' database every service shares.
	engine.Use(keys.Middleware())
	health.Register(engine)
	metrics.Register(engine) // on its own port, which no ingress routes to
	renditions := rendition.NewService(cfg.renditions, blobs, svc, vipsimage.New(log), log)
	if pdfReader != nil {
		renditions.WithPDF(pdfReader)
	}
	httpapi.New(svc, store, log, nil).WithRenditions(renditions).Register(engine)

	return httpx.Serve(ctx, log, cfg.server, bound(engine), health)
}

// pdfReader is the reader of PDFs' pages and text, or nil when PDFs are
// not read (PDF_ENABLED=false, or poppler-utils missing: said once).
func pdfReader(cfg settings, log *slog.Logger) *pdf.Reader {
	if !cfg.pdfEnabled {
		return nil
	}
	if err := pdf.Available(); err != nil {
		log.Warn("PDFs get no page count, cover or text", "error", err)
		return nil
	}
	return pdf.NewReader(cfg.pdf)
}

// isUpload reports the upload, whose body streams: it is digested as it
// is read for its Idempotency-Key, and it is not held by bound.
func isUpload(r *http.Request) bool { return r.Method == http.MethodPost && r.URL.Path == "/bo/medias" }

// bound answers a write that has not answered within the request budget
// as an unknown outcome (httpx.Bound); the upload bounds its own calls.
func bound(h http.Handler) http.Handler {
	return httpx.Bound(h, httpx.RequestBudget+httpx.BoundGrace, streams)
}

// streams reports the writes whose body streams for as long as its file
// takes: the upload and a media import (doclib import), which bound their
// own calls; a file over a few hundred MiB takes longer than the budget.
func streams(r *http.Request) bool {
	return isUpload(r) || (r.Method == http.MethodPut && strings.HasPrefix(r.URL.Path, "/bo/import/medias/"))
}
