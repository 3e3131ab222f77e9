package e2e

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/doclib/libs/testkit"
)

// TestHugeMediaStreams (issue 28, "a 10 GiB media file"): an archive whose
// PDF is hugeMediaSize() bytes (512 MiB by default; DOCLIB_TEST_HUGE_MEDIA_MIB=10240
// for the 10 GiB case of the issue, minutes of CPU) is verified and
// imported by the doclib binary in flat memory. The archive is a sparse
// file (the PDF's real first bytes, then zeros never written to disk), so
// the test needs no 10 GiB of disk, yet doclib reads and hashes every byte.
// The target's media service takes files up to MEDIA_MAX_UPLOAD_SIZE (100
// MiB): the import stops at once at that entry, naming it, with nothing
// of it or of the document naming it visible.
func TestHugeMediaStreams(t *testing.T) {
	if testing.Short() {
		t.Skip("hashes and writes hundreds of MiB: not under -short")
	}
	t.Parallel()
	size := hugeMediaSize()
	src := NewStack(t, nil)
	pdf := src.Upload("huge.pdf", unique(pdfBytes, "huge"))
	src.Must("POST", "/bo/documents", map[string]any{"type": "PDF", "title": "Huge", "fileId": pdf, "tagsIds": []string{}}, 201)
	dir := t.TempDir()
	small := filepath.Join(dir, "small.tar")
	out, err := src.Doclib("export", "-o", small)
	testkit.Must(t, err, "export: "+out)
	huge := filepath.Join(dir, "huge.tar")
	grow(t, small, huge, pdf, unique(pdfBytes, "huge"), size)

	start := time.Now()
	out, rss, err := doclibRSS(t, src, "verify", huge)
	testkit.Must(t, err, "verify the huge archive: "+out)
	t.Logf("verify of a %d MiB media: %s, peak RSS %d MiB", size>>20, time.Since(start).Round(time.Second), rss>>10)
	if rss > 100<<10 {
		t.Errorf("verify's peak RSS is %d MiB for a %d MiB media; want flat (under 100 MiB)", rss>>10, size>>20)
	}

	dst := NewStack(t, nil)
	start = time.Now()
	out, rss, err = doclibRSS(t, dst, "import", huge)
	t.Logf("import: %s, peak RSS %d MiB\n%s", time.Since(start).Round(time.Second), rss>>10, out)
	if err == nil || !strings.Contains(out, "entry media/"+pdf) || !strings.Contains(out, "413") || !strings.Contains(out, "MEDIA_MAX_UPLOAD_SIZE") {
		t.Errorf("an import of a media over the target's upload limit: want an error naming entry media/%s with 413, got %v", pdf, err)
	}
	if rss > 100<<10 {
		t.Errorf("import's peak RSS is %d MiB for a %d MiB media; want flat (under 100 MiB)", rss>>10, size>>20)
	}
	if r := dst.BO("GET", "/bo/medias/"+pdf, nil); r.Status != 404 {
		t.Errorf("the refused media is visible: %d %s", r.Status, r.Body)
	}
	nothingHalfWritten(t, dst)
	if n := count(dst, "/bo/documents"); n != 0 {
		t.Errorf("%d documents imported; the one naming the refused media must not be", n)
	}
	importWithTheLimitRaised(t, huge, pdf, size)
}

// importWithTheLimitRaised runs the import again, as the README says,
// into a target whose MEDIA_MAX_UPLOAD_SIZE (gateway and media service)
// takes the media: every byte goes through doclib, the gateway, the media
// service and MinIO, in flat memory in each.
func importWithTheLimitRaised(t *testing.T, huge, pdf string, size int64) {
	raised := []string{"MEDIA_MAX_UPLOAD_SIZE=" + itoa(size+1<<20), "HTTP_READ_TIMEOUT=30m"}
	dst := NewStack(t, map[string][]string{"gateway": raised, "media": raised})
	start := time.Now()
	out, rss, err := doclibRSS(t, dst, "import", huge)
	testkit.Must(t, err, "import with the limit raised: "+out)
	gateway, media := peakRSS(dst.Pid("gateway")), peakRSS(dst.Pid("media"))
	t.Logf("import with the limit raised: %s; peak RSS doclib %d MiB, gateway %d MiB, media %d MiB",
		time.Since(start).Round(time.Second), rss>>10, gateway>>20, media>>20)
	for name, peak := range map[string]int64{"doclib": rss << 10, "gateway": gateway, "media": media} {
		if peak == 0 || peak > 200<<20 {
			t.Errorf("%s's peak RSS is %d MiB for a %d MiB media; want flat (known, under 200 MiB)", name, peak>>20, size>>20)
		}
	}
	var rec struct {
		Size   int64  `json:"size"`
		SHA256 string `json:"sha256"`
	}
	dst.Must("GET", "/bo/medias/"+pdf, nil, 200).JSON(t, &rec)
	if rec.Size != size || rec.SHA256 != hugeDigest(unique(pdfBytes, "huge"), size) {
		t.Errorf("the imported media is %d bytes, sha256 %s; want %d, the archive's", rec.Size, rec.SHA256, size)
	}
	if n := count(dst, "/bo/documents"); n != 1 {
		t.Errorf("%d documents imported; want the one naming the media", n)
	}
}

// defaultHugeMediaMiB keeps the test to seconds on a 2-core CI: over the
// target's 100 MiB limit, yet small enough to hash several times. The 10 GiB
// case of issue 28 is opt-in (DOCLIB_TEST_HUGE_MEDIA_MIB=10240).
const defaultHugeMediaMiB = 512

// hugeMediaSize is the size in bytes of TestHugeMediaStreams' media.
func hugeMediaSize() int64 {
	return int64(envInt("DOCLIB_TEST_HUGE_MEDIA_MIB", defaultHugeMediaMiB)) << 20
}

// grow copies the archive from to to with the media id's bytes replaced by
// content followed by zeros up to size, its record, PAX digest and manifest
// entry changed to match. Zeros are skipped, not written: to is sparse.
func grow(t *testing.T, from, to, id string, content []byte, size int64) {
	t.Helper()
	digest := hugeDigest(content, size)
	in, err := os.Open(from)
	testkit.Must(t, err, "open the archive")
	defer in.Close()
	f, err := os.Create(to)
	testkit.Must(t, err, "create the huge archive")
	defer f.Close()
	sw := &sparseWriter{f: f}
	tr, tw := tar.NewReader(in), tar.NewWriter(sw)
	changed := map[string][2]string{} // entry path: new size, digest
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		testkit.Must(t, err, "read the archive")
		body, err := io.ReadAll(tr)
		testkit.Must(t, err, "read "+hdr.Name)
		var r io.Reader = bytes.NewReader(body)
		switch hdr.Name {
		case "media/" + id:
			r = io.MultiReader(bytes.NewReader(content), io.LimitReader(zeros{}, size-int64(len(content))))
			hdr.Size, hdr.PAXRecords["DOCLIB.sha256"] = size, digest
		case "media.jsonl":
			body = bytes.Replace(body, []byte(`"size":`+itoa(int64(len(content)))), []byte(`"size":`+itoa(size)), 1)
			body = bytes.Replace(body, []byte(shaHex(content)), []byte(digest), 1)
			r, hdr.Size, hdr.PAXRecords["DOCLIB.sha256"] = bytes.NewReader(body), int64(len(body)), shaHex(body)
		case "manifest.json":
			body = rewriteManifest(t, body, changed, size-int64(len(content)))
			r, hdr.Size, hdr.PAXRecords["DOCLIB.sha256"] = bytes.NewReader(body), int64(len(body)), shaHex(body)
		}
		changed[hdr.Name] = [2]string{itoa(hdr.Size), hdr.PAXRecords["DOCLIB.sha256"]}
		testkit.Must(t, tw.WriteHeader(hdr), "write "+hdr.Name)
		_, err = io.Copy(tw, r)
		testkit.Must(t, err, "write "+hdr.Name)
	}
	testkit.Must(t, tw.Close(), "close the huge archive")
	testkit.Must(t, f.Truncate(sw.off), "size the huge archive")
}

// rewriteManifest sets each entry's size and digest to the ones written,
// and adds grown to the media bytes counted.
func rewriteManifest(t *testing.T, raw []byte, written map[string][2]string, grown int64) []byte {
	var m map[string]any
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	testkit.Must(t, d.Decode(&m), "manifest")
	for _, e := range m["entries"].([]any) {
		e := e.(map[string]any)
		w := written[e["path"].(string)]
		e["size"], e["sha256"] = json.Number(w[0]), w[1]
	}
	counts := m["counts"].(map[string]any)
	was, err := counts["mediaBytes"].(json.Number).Int64()
	testkit.Must(t, err, "manifest's mediaBytes")
	counts["mediaBytes"] = json.Number(itoa(was + grown))
	out, err := json.Marshal(m)
	testkit.Must(t, err, "manifest")
	return out
}

func hugeDigest(content []byte, size int64) string {
	h := sha256.New()
	h.Write(content)
	_, _ = io.Copy(h, io.LimitReader(zeros{}, size-int64(len(content))))
	return hex.EncodeToString(h.Sum(nil))
}

func shaHex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// zeros reads as endless zero bytes.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// sparseWriter writes to f, skipping (leaving as a hole) every write of
// zeros only.
type sparseWriter struct {
	f   *os.File
	off int64
}

var zeroBlock = make([]byte, 1<<20)

func (w *sparseWriter) Write(p []byte) (int, error) {
	if len(p) > len(zeroBlock) || !bytes.Equal(p, zeroBlock[:len(p)]) {
		if _, err := w.f.WriteAt(p, w.off); err != nil {
			return 0, err
		}
	}
	w.off += int64(len(p))
	return len(p), nil
}

// TestHugeMediaSizeIsOptIn: make test runs the huge media test at 512 MiB;
// the 10 GiB case only when asked for.
func TestHugeMediaSizeIsOptIn(t *testing.T) {
	t.Setenv("DOCLIB_TEST_HUGE_MEDIA_MIB", "")
	if got := hugeMediaSize(); got != 512<<20 {
		t.Errorf("default huge media size %d MiB; want 512", got>>20)
	}
	t.Setenv("DOCLIB_TEST_HUGE_MEDIA_MIB", "10240")
	if got := hugeMediaSize(); got != 10<<30 {
		t.Errorf("DOCLIB_TEST_HUGE_MEDIA_MIB=10240 gives %d MiB; want 10240", got>>20)
	}
}
