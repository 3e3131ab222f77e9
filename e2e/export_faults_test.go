package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/doclib/libs/testkit"
)

// seedMedia uploads n PDFs of size bytes each, none named by a document:
// bytes enough for an export or import to be caught mid-way.
func seedMedia(st *Stack, n, size int) {
	st.t.Helper()
	blk := bytes.Repeat([]byte("pdf body 0123456789abcdef "), size/26)
	for i := range n {
		st.Upload(fmt.Sprintf("bulk%d.pdf", i), append([]byte(fmt.Sprintf("%%PDF-1.4\n%% %d\n", i)), blk...))
	}
}

// startDoclib starts the doclib binary against st without waiting for it;
// its output goes to out.
func startDoclib(t *testing.T, st *Stack, out *testkit.Buffer, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(doclib(t), args...)
	cmd.Env = st.doclibEnv()
	cmd.Stdout, cmd.Stderr = out, out
	testkit.Must(t, cmd.Start(), "start doclib")
	return cmd
}

// count is the length of the JSON list a BO listing answers.
func count(st *Stack, path string) int {
	var list []any
	st.Must("GET", path, nil, 200).JSON(st.t, &list)
	return len(list)
}

// TestImportMinIOKilledMidImport (issue 28): the target's own MinIO is
// killed (SIGKILL) while an import streams media into it. The import stops
// with an error naming the media entry; nothing half-written is visible
// (every media record listed has its whole file, every document names only
// media that are there); once MinIO is back on the same data, the same
// import run again finishes and the installation answers as the source.
func TestImportMinIOKilledMidImport(t *testing.T) {
	t.Parallel()
	src := NewStack(t, nil)
	ids := seedLibrary(src)
	seedMedia(src, 5, 20<<20) // over miniostore.PartSize (16 MiB): a kill cuts a multipart upload
	archivePath := filepath.Join(t.TempDir(), "lib.tar")
	out, err := src.Doclib("export", "-o", archivePath)
	testkit.Must(t, err, "export: "+out)
	want := answers(src, ids)

	dst := NewStack(t, nil)
	s3 := testkit.OwnMinIO(t)
	dst.UseMinIO(s3.Creds, testkit.UniqueName(t))
	var log testkit.Buffer
	cmd := startDoclib(t, dst, &log, "import", archivePath)
	Eventually(t, 60*time.Second, "the import stored a media", func() bool { return count(dst, "/bo/medias") >= 1 })
	s3.Kill()
	if err := cmd.Wait(); err == nil {
		t.Fatalf("the import finished although MinIO was killed mid-way (too fast? give it more media):\n%s", log.String())
	}
	if !log.Contains("entry media/") || !log.Contains("run it again") {
		t.Errorf("an import whose MinIO was killed: want an error naming the media entry, got\n%s", log.String())
	}
	t.Logf("the interrupted import:\n%s", tail(log.String(), 4))
	s3.Start()
	Eventually(t, 30*time.Second, "media reports MinIO back", func() bool { return readyStatus(t, dst, "media") == "ready" })
	nothingHalfWritten(t, dst)

	out, err = dst.Doclib("import", archivePath)
	testkit.Must(t, err, "import again once MinIO is back: "+out)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if len(diff(want, answers(dst, ids))) == 0 {
			break
		}
	}
	compareAnswers(t, want, answers(dst, ids))
}

// nothingHalfWritten: every media st lists downloads whole (the size its
// record gives), and every document names only media st lists.
func nothingHalfWritten(t *testing.T, st *Stack) {
	t.Helper()
	var medias []struct {
		ID   string `json:"id"`
		Size int    `json:"size"`
	}
	st.Must("GET", "/bo/medias", nil, 200).JSON(t, &medias)
	have := map[string]bool{}
	for _, m := range medias {
		have[m.ID] = true
		if r := st.BO("GET", "/bo/medias/"+m.ID+"/download", nil); r.Status != 200 || len(r.Body) != m.Size {
			t.Errorf("media %s is listed but its file is not whole: %d, %d bytes of %d", m.ID, r.Status, len(r.Body), m.Size)
		}
	}
	var docs []struct {
		ID        string   `json:"id"`
		FileID    string   `json:"fileId"`
		ImagesIDs []string `json:"imagesIds"`
	}
	st.Must("GET", "/bo/documents", nil, 200).JSON(t, &docs)
	for _, d := range docs {
		for _, id := range append(d.ImagesIDs, d.FileID) {
			if id != "" && !have[id] {
				t.Errorf("document %s names media %s, which the installation does not have", d.ID, id)
			}
		}
	}
	t.Logf("after the interruption: %d media, %d documents, all whole", len(medias), len(docs))
}

// TestExportKilledMidWay (issue 28): the doclib binary is killed (SIGKILL)
// while it writes an archive. Nothing is left under the name asked for; the
// partial file is named FILE.partial and verify and import refuse it as
// truncated; the same export run again writes a whole archive.
func TestExportKilledMidWay(t *testing.T) {
	t.Parallel()
	st := NewStack(t, nil)
	seedLibrary(st)
	seedMedia(st, 6, 8<<20)
	path := filepath.Join(t.TempDir(), "lib.tar")
	var log testkit.Buffer
	cmd := startDoclib(t, st, &log, "export", "-workers", "1", "-o", path)
	Eventually(t, 60*time.Second, "the export wrote a part of the archive", func() bool {
		fi, err := os.Stat(path + ".partial")
		return err == nil && fi.Size() > 1<<20
	})
	testkit.Must(t, cmd.Process.Signal(syscall.SIGKILL), "kill doclib")
	_ = cmd.Wait()
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("a killed export left %s (%v); want nothing under the name asked for\n%s", path, err, log.String())
	}
	out, err := st.Doclib("verify", path+".partial")
	if err == nil || !strings.Contains(out, "truncated") {
		t.Errorf("verify of the partial archive: want a refusal saying truncated, got %v\n%s", err, out)
	}
	out, err = st.Doclib("import", "-merge", path+".partial")
	if err == nil || !strings.Contains(out, "truncated") || !strings.Contains(out, "nothing was imported") {
		t.Errorf("import of the partial archive: want a refusal saying truncated, got %v\n%s", err, out)
	}
	out, err = st.Doclib("export", "-o", path)
	testkit.Must(t, err, "export again: "+out)
	out, err = st.Doclib("verify", path)
	testkit.Must(t, err, "verify the export run again: "+out)
	if _, err := os.Stat(path + ".partial"); !os.IsNotExist(err) {
		t.Errorf("the export run again left %s.partial (%v)", path, err)
	}
}

// TestExportToBucketKeepsTheNewest (issue 28): doclib export -s3, the chart
// CronJob's command, against a real MinIO: the archive is written under
// DOCLIB_BACKUP_PREFIX and verifies; only the newest DOCLIB_BACKUP_KEEP
// archives stay; objects that are not its archives (another name, another
// prefix) are left alone.
func TestExportToBucketKeepsTheNewest(t *testing.T) {
	t.Parallel()
	st := NewStack(t, nil)
	seedLibrary(st)
	s3 := testkit.MinIO(t)
	mc, err := minio.New(s3.Endpoint, &minio.Options{Creds: credentials.NewStaticV4(s3.AccessKey, s3.SecretKey, "")})
	testkit.Must(t, err, "minio client")
	ctx := context.Background()
	bucket := testkit.UniqueName(t)
	testkit.Must(t, mc.MakeBucket(ctx, bucket, minio.MakeBucketOptions{}), "make the backup bucket")
	// Written newest name first, a second before the others: the archive
	// kept is the newest by name (when it was begun), not the last written.
	for i, k := range []string{"backups/doclib-20200103T000000Z.tar", "backups/doclib-20200102T000000Z.tar.zst",
		"backups/doclib-20200101T000000Z.tar", "backups/doclib-pre-upgrade.tar", "other/doclib-20200101T000000Z.tar"} {
		_, err := mc.PutObject(ctx, bucket, k, strings.NewReader("old"), 3, minio.PutObjectOptions{})
		testkit.Must(t, err, "put "+k)
		if i == 0 {
			time.Sleep(1100 * time.Millisecond) // S3 dates are to the second
		}
	}
	env := []string{"S3_ENDPOINT=" + s3.Endpoint, "S3_ACCESS_KEY=" + s3.AccessKey, "S3_SECRET_KEY=" + s3.SecretKey,
		"DOCLIB_BACKUP_BUCKET=" + bucket, "DOCLIB_BACKUP_PREFIX=backups/", "DOCLIB_BACKUP_KEEP=2"}
	first := exportToBucket(t, st, env)
	wantKeys(t, mc, bucket, "backups/doclib-20200103T000000Z.tar", first, "backups/doclib-pre-upgrade.tar",
		"other/doclib-20200101T000000Z.tar")
	path := filepath.Join(t.TempDir(), "from-bucket.tar.zst")
	testkit.Must(t, mc.FGetObject(ctx, bucket, first, path, minio.GetObjectOptions{}), "download the archive")
	out, err := st.Doclib("verify", path)
	testkit.Must(t, err, "verify the archive in the bucket: "+out)
	time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second))) // names are to the second
	second := exportToBucket(t, st, env)
	wantKeys(t, mc, bucket, first, second, "backups/doclib-pre-upgrade.tar", "other/doclib-20200101T000000Z.tar")
}

// exportToBucket runs doclib export -s3 -zstd with env and returns the
// object it wrote.
func exportToBucket(t *testing.T, st *Stack, env []string) string {
	t.Helper()
	cmd := exec.Command(doclib(t), "export", "-s3", "-zstd")
	cmd.Env = st.doclibEnv(env...)
	raw, err := cmd.CombinedOutput()
	testkit.Must(t, err, "export -s3: "+string(raw))
	t.Logf("export -s3:\n%s", raw)
	for _, line := range strings.Split(string(raw), "\n") {
		if rest, ok := strings.CutPrefix(line, "wrote s3://"); ok {
			_, key, _ := strings.Cut(rest, "/")
			return key
		}
	}
	t.Fatalf("export -s3 did not say what it wrote:\n%s", raw)
	return ""
}

func wantKeys(t *testing.T, mc *minio.Client, bucket string, want ...string) {
	t.Helper()
	var got []string
	for obj := range mc.ListObjects(context.Background(), bucket, minio.ListObjectsOptions{Recursive: true}) {
		testkit.Must(t, obj.Err, "list the bucket")
		got = append(got, obj.Key)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("the backup bucket holds\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
