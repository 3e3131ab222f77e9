package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/doclib/libs/testkit"
)

// BenchmarkExportImport (issue 28): doclib export of a library of
// BENCH_EXPORT_DOCS documents (default 1,000) and BENCH_EXPORT_MEDIA_MIB
// MiB of media (default 1,024, in 16 MiB PDFs) against the anchor, the same
// bytes read straight from MinIO with minio-go and the documents, revisions
// and taxonomy read straight from the databases (what mc mirror plus
// mongodump would read), into a file; then doclib import into a fresh stack
// against copying the same objects to another bucket and the same
// database records to other collections. Targets: each at least 0.5x the
// anchor's speed (at most twice its time); doclib's peak memory flat (not
// growing with the media). Writes bench/results/export.md.
func BenchmarkExportImport(b *testing.B) {
	docs, mib := envInt("BENCH_EXPORT_DOCS", 1000), envInt("BENCH_EXPORT_MEDIA_MIB", 1024)
	src := NewStackLoggingTo(b, nil, b.TempDir())
	seedStart := time.Now()
	seedBench(b, src, docs, mib)
	b.Logf("seeded %d documents and %d MiB in %s", docs, mib, time.Since(seedStart))
	dir := b.TempDir()
	archivePath := filepath.Join(dir, "lib.tar")
	loadBefore := loadAvg()
	exportTime, exportRSS := timedDoclib(b, src, "export", "-o", archivePath)
	anchorRead := timed(func() { anchorReadAll(b, src, filepath.Join(dir, "anchor")) })
	loadExport := loadAvg()
	dst := NewStackLoggingTo(b, nil, b.TempDir())
	importTime, importRSS := timedDoclib(b, dst, "import", archivePath)
	anchorCopy := timed(func() { anchorCopyAll(b, src) })
	loadImport := loadAvg()
	info, _ := os.Stat(archivePath)
	row := func(what string, got, anchor time.Duration, rss int64, load string) string {
		ratio := anchor.Seconds() / got.Seconds()
		verdict := "pass"
		if ratio < 0.5 {
			verdict = "**fail**"
		}
		return fmt.Sprintf("| %s | %.1f s (anchor %.1f s): **%.2fx** the anchor's speed; doclib peak RSS %d MiB | ≥ 0.5x, memory flat | %s | %s |\n",
			what, got.Seconds(), anchor.Seconds(), ratio, rss>>10, verdict, load)
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "# doclib export and import (issue 28)\n\n%d documents (MARKDOWN, about 1 KB, one tag each; every 10th a PDF naming a media), %d MiB of media in 16 MiB PDFs; archive %d MiB, uncompressed. `BENCH_EXPORT_DOCS=%d BENCH_EXPORT_MEDIA_MIB=%d go test -run '^$' -bench BenchmarkExportImport -benchtime 1x -timeout 60m ./e2e/`. One run each (seeding is the long part), not alternated: the load is given beside each figure.\n\n",
		docs, mib, info.Size()>>20, docs, mib)
	sb.WriteString("| target | figure measured | target | pass/fail | load (1, 5, 15 min) |\n|---|---|---|---|---|\n")
	sb.WriteString(row("export vs minio-go GetObject of every object + a find over the catalog, revisions and taxonomy collections, into a file", exportTime, anchorRead, exportRSS, loadBefore+" → "+loadExport))
	sb.WriteString(row("import into a fresh stack vs minio-go GetObject→PutObject of every object to another bucket + find→insertMany of the same records", importTime, anchorCopy, importRSS, loadExport+" → "+loadImport))
	writeResult(b, "export.md", sb.String())
}

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

func timed(f func()) time.Duration {
	start := time.Now()
	f()
	return time.Since(start)
}

// timedDoclib runs doclib against st and returns its time and peak RSS (KiB).
// The RSS is GNU time's (it forks a small process): the rusage of a child
// Go starts itself is no use, Linux carries the parent's peak (this test
// binary's, hundreds of MiB) into the child's ru_maxrss at exec.
func timedDoclib(b *testing.B, st *Stack, args ...string) (time.Duration, int64) {
	start := time.Now()
	out, kib, err := doclibRSS(b, st, args...)
	if err != nil {
		b.Fatalf("doclib %v: %v\n%s", args, err, out)
	}
	return time.Since(start), kib
}

// doclibRSS runs doclib against st under /usr/bin/time and returns its
// output, its peak RSS in KiB and its error.
func doclibRSS(t testing.TB, st *Stack, args ...string) (string, int64, error) {
	t.Helper()
	rssFile := filepath.Join(t.TempDir(), "rss")
	cmd := exec.Command("/usr/bin/time", append([]string{"-f", "%M", "-o", rssFile, doclib(t)}, args...)...)
	cmd.Env = st.doclibEnv()
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	runErr := cmd.Run()
	raw, err := os.ReadFile(rssFile)
	testkit.Must(t, err, "/usr/bin/time's output")
	// On a failure /usr/bin/time writes "Command exited with non-zero status N" first.
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	kib, err := strconv.ParseInt(lines[len(lines)-1], 10, 64)
	testkit.Must(t, err, fmt.Sprintf("/usr/bin/time: %q", raw))
	return out.String(), kib, runErr
}

// envOf is the value of a service's environment variable in st.
func envOf(st *Stack, svc, key string) string {
	for _, kv := range st.env[svc] {
		if v, ok := strings.CutPrefix(kv, key+"="); ok {
			return v
		}
	}
	return ""
}

// seedBench writes the library through the API: 16 MiB PDFs, then the
// documents, every 10th a PDF document naming one of them.
func seedBench(b *testing.B, st *Stack, docs, mib int) {
	st.Must("POST", "/bo/tags-categories", map[string]any{"id": "bench", "name": "Bench"}, 201)
	st.Must("POST", "/bo/tags", map[string]any{"id": "b1", "name": "B1", "categoryId": "bench"}, 201)
	blk := bytes.Repeat([]byte("pdf body 0123456789abcdef "), (16<<20)/26)
	var files []string
	for i := range max(1, mib/16) {
		content := append([]byte(fmt.Sprintf("%%PDF-1.4\n%% %d\n", i)), blk...)
		files = append(files, st.Upload(fmt.Sprintf("f%d.pdf", i), content))
	}
	body := strings.Repeat("Un paragraphe de texte. ", 40)
	for i := range docs {
		doc := map[string]any{"type": "MARKDOWN", "title": fmt.Sprintf("Doc %d", i), "content": body, "sources": []string{},
			"imagesIds": []string{}, "tagsIds": []string{"b1"}}
		if i%10 == 0 {
			doc = map[string]any{"type": "PDF", "title": fmt.Sprintf("PDF %d", i), "fileId": files[(i/10)%len(files)], "tagsIds": []string{"b1"}}
		}
		st.Must("POST", "/bo/documents", doc, 201)
	}
}

func benchMinio(b *testing.B) *minio.Client {
	s3 := testkit.MinIO(b)
	c, err := minio.New(s3.Endpoint, &minio.Options{Creds: credentials.NewStaticV4(s3.AccessKey, s3.SecretKey, "")})
	testkit.Must(b, err, "minio client")
	return c
}

func benchMongo(b *testing.B) *mongo.Client {
	c, err := mongo.Connect(options.Client().ApplyURI(testkit.MongoURI(b)))
	testkit.Must(b, err, "mongo")
	b.Cleanup(func() { _ = c.Disconnect(context.Background()) })
	return c
}

// anchorCollections are what a mongodump of the library would read.
func anchorCollections(st *Stack) [][2]string {
	return [][2]string{{envOf(st, "catalog", "MONGODB_DATABASE"), "documents"}, {envOf(st, "catalog", "MONGODB_DATABASE"), "revisions"},
		{envOf(st, "taxonomy", "MONGODB_DATABASE"), "categories"}, {envOf(st, "taxonomy", "MONGODB_DATABASE"), "tags"},
		{envOf(st, "media", "MONGODB_DATABASE"), "medias"}}
}

// anchorReadAll reads every media object and every record of the library
// straight from MinIO and MongoDB into one file.
func anchorReadAll(b *testing.B, st *Stack, path string) {
	ctx := context.Background()
	f, err := os.Create(path)
	testkit.Must(b, err, "anchor file")
	defer f.Close()
	mc, bucket := benchMinio(b), envOf(st, "media", "S3_BUCKET")
	for obj := range mc.ListObjects(ctx, bucket, minio.ListObjectsOptions{Recursive: true}) {
		testkit.Must(b, obj.Err, "list")
		r, err := mc.GetObject(ctx, bucket, obj.Key, minio.GetObjectOptions{})
		testkit.Must(b, err, "get")
		_, err = io.Copy(f, r)
		r.Close()
		testkit.Must(b, err, "copy")
	}
	db := benchMongo(b)
	for _, c := range anchorCollections(st) {
		cur, err := db.Database(c[0]).Collection(c[1]).Find(ctx, bson.D{})
		testkit.Must(b, err, "find")
		for cur.Next(ctx) {
			_, _ = f.Write(cur.Current)
		}
		testkit.Must(b, cur.Err(), "cursor")
		_ = cur.Close(ctx)
	}
}

// anchorCopyAll copies every media object to another bucket and every
// record to other collections, straight.
func anchorCopyAll(b *testing.B, st *Stack) {
	ctx := context.Background()
	mc, bucket := benchMinio(b), envOf(st, "media", "S3_BUCKET")
	to := bucket + "-anchor"
	testkit.Must(b, mc.MakeBucket(ctx, to, minio.MakeBucketOptions{}), "bucket")
	for obj := range mc.ListObjects(ctx, bucket, minio.ListObjectsOptions{Recursive: true}) {
		testkit.Must(b, obj.Err, "list")
		r, err := mc.GetObject(ctx, bucket, obj.Key, minio.GetObjectOptions{})
		testkit.Must(b, err, "get")
		_, err = mc.PutObject(ctx, to, obj.Key, r, obj.Size, minio.PutObjectOptions{PartSize: 16 << 20})
		r.Close()
		testkit.Must(b, err, "put")
	}
	db := benchMongo(b)
	for _, c := range anchorCollections(st) {
		cur, err := db.Database(c[0]).Collection(c[1]).Find(ctx, bson.D{})
		testkit.Must(b, err, "find")
		var batch []any
		for cur.Next(ctx) {
			batch = append(batch, bson.Raw(bytes.Clone(cur.Current)))
		}
		_ = cur.Close(ctx)
		if len(batch) > 0 {
			_, err = db.Database(c[0]+"anchor").Collection(c[1]).InsertMany(ctx, batch)
			testkit.Must(b, err, "insert")
		}
	}
}
