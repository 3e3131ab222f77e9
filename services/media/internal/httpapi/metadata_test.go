package httpapi_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"net/http"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/doclib/libs/testkit"
	"github.com/doclib/services/media/internal/media"
	"github.com/doclib/services/media/internal/media/mongostore"
)

// TestImageDimensionsAndDigest (CONTRACT.md §10): every record carries the
// SHA-256 of its bytes, and an image its width and height, read from its
// header as it streams.
func TestImageDimensionsAndDigest(t *testing.T) {
	a := newAPI(t, media.Config{})
	// A JPEG whose frame header comes after 300 KiB of metadata segments:
	// the header is read while streaming, however far it is.
	var big bytes.Buffer
	big.Write(jpegHead[:2]) // SOI
	for range 5 {
		big.Write([]byte{0xff, 0xe1, 0xff, 0xff}) // an APP1 segment of 65,533 bytes
		big.Write(make([]byte, 0xffff-2))
	}
	big.Write(jpegHead[2:])
	for _, c := range []struct {
		name    string
		content []byte
		mime    string
		w, h    int
	}{
		{"a.png", sample(pngHead, 4000, 1), "image/png", 3, 2},
		{"b.jpg", sample(jpegHead, 4000, 2), "image/jpeg", 5, 4},
		{"c.gif", sample(gifHead, 4000, 3), "image/gif", 2, 7},
		{"d.webp", sample(webpHead, 4000, 4), "image/webp", 6, 9},
		{"e.jpg", big.Bytes(), "image/jpeg", 5, 4},
		{"f.pdf", sample(pdfHead, 4000, 5), "application/pdf", 0, 0},
	} {
		m := a.mustUpload(c.name, c.content)
		if m.MimeType != c.mime || m.Width != c.w || m.Height != c.h || m.SHA256 != sum(c.content) {
			t.Errorf("%s: %+v, want %s %d×%d sha256 %s", c.name, m, c.mime, c.w, c.h, sum(c.content))
		}
		var pub map[string]any
		a.must("GET", "/public/medias/"+m.ID, 200).json(t, &pub)
		if pub["sha256"] != sum(c.content) || (c.w > 0) != (pub["width"] != nil) || (c.w > 0 && pub["width"] != float64(c.w)) {
			t.Errorf("%s: public record %v", c.name, pub)
		}
	}
}

// pngWithIHDR returns a PNG signature and an IHDR chunk of w×h (CRC right).
func pngWithIHDR(w, h uint32) []byte {
	chunk := []byte("IHDR")
	chunk = binary.BigEndian.AppendUint32(chunk, w)
	chunk = binary.BigEndian.AppendUint32(chunk, h)
	chunk = append(chunk, 8, 6, 0, 0, 0)
	b := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\x0d")
	b = append(b, chunk...)
	return binary.BigEndian.AppendUint32(b, crc32.ChecksumIEEE(chunk))
}

// TestBadImageHeaders: bytes that start like an image but whose header is
// cut short, broken or describes an image no one should lay out are a 422
// naming the file, and leave nothing behind.
func TestBadImageHeaders(t *testing.T) {
	a := newAPI(t, media.Config{})
	for _, c := range []struct {
		name    string
		content []byte
	}{
		{"truncated header", pngWithIHDR(3, 2)[:20]},
		{"wrong checksum", append(pngWithIHDR(3, 2)[:29], 0, 0, 0, 0)},
		{"a size of nothing", pngWithIHDR(0, 2)},
		{"a header that lies about its size", append(pngWithIHDR(100_000, 100_000), make([]byte, 100)...)},
		{"too many pixels", append(pngWithIHDR(20_000, 20_000), make([]byte, 100)...)},
		{"jpeg without a frame", []byte("\xff\xd8\xff\xe0\x00\x10JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00")},
		{"webp cut short", webpHead[:18]},
	} {
		r := a.upload(part{"file", "x", "image/png", c.content})
		p := r.problem(t, 422, "validation_failed")
		if len(p.Errors) != 1 || p.Errors[0].Field != "file" {
			t.Errorf("%s: %+v, want one error naming file", c.name, p)
		}
		t.Logf("%s: %s", c.name, p.Errors)
	}
	a.assertEmpty()
}

// TestSameBytesStoredOnce: an upload of bytes already stored answers 200
// with that media (its Location) and stores nothing new; once it is
// deleted, the same bytes make a new media.
func TestSameBytesStoredOnce(t *testing.T) {
	a := newAPI(t, media.Config{})
	content := sample(pdfHead, 50_000, 1)
	first := a.mustUpload("first.pdf", content)
	r := a.upload(part{"file", "second name.pdf", "application/pdf", content})
	var again adminMedia
	r.json(t, &again)
	if r.status != http.StatusOK || again != first || r.header.Get("Location") != "/bo/medias/"+first.ID {
		t.Fatalf("same bytes again: %d %+v Location %q, want 200 with %+v", r.status, again, r.header.Get("Location"), first)
	}
	a.wantStored(1)

	a.must("DELETE", "/bo/medias/"+first.ID, http.StatusNoContent)
	testkit.Must(t, a.svc.Sweep(context.Background()), "sweep") // no relay here: the tombstone stays, its digest freed
	third := a.mustUpload("third.pdf", content)
	if third.ID == first.ID || third.SHA256 != first.SHA256 {
		t.Errorf("after the deletion: %+v, want a new media with the same digest", third)
	}
}

// wantStored checks that n live media and n objects exist, and that no
// upload left an intent or an unfinished multipart upload.
func (a *api) wantStored(n int) {
	a.t.Helper()
	ctx := context.Background()
	var list []adminMedia
	a.must("GET", "/bo/medias", 200).json(a.t, &list)
	keys, err := a.blobs.Keys(ctx)
	testkit.Must(a.t, err, "keys")
	intents, err := a.store.Collection().Database().Collection(mongostore.UploadsCollection).CountDocuments(ctx, bson.M{})
	testkit.Must(a.t, err, "intents")
	unfinished, err := a.blobs.IncompleteUploads(ctx)
	testkit.Must(a.t, err, "unfinished uploads")
	if len(list) != n || len(keys) != n || intents != 0 || unfinished != 0 {
		a.t.Errorf("%d media, objects %v, %d upload intents, %d unfinished uploads; want %d, %d, 0, 0", len(list), keys, intents, unfinished, n, n)
	}
}

// TestIdenticalUploadsRace: identical uploads racing, through two replicas,
// end with one media and one object: one answer 201, the others 200 with
// the same media.
func TestIdenticalUploadsRace(t *testing.T) {
	a := newAPI(t, media.Config{})
	b := a.replica()
	const rounds, racers = 25, 6
	for round := range rounds {
		content := sample(pngHead, 20_000+round, uint64(round))
		var wg sync.WaitGroup
		results := make([]response, racers)
		start := make(chan struct{})
		for i := range racers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				replica := a
				if i%2 == 1 {
					replica = b
				}
				<-start
				results[i] = replica.upload(part{"file", fmt.Sprintf("r%d-%d.png", round, i), "image/png", content})
			}()
		}
		close(start)
		wg.Wait()
		created, ids := 0, map[string]bool{}
		for _, r := range results {
			var m adminMedia
			r.json(t, &m)
			switch r.status {
			case http.StatusCreated:
				created++
			case http.StatusOK:
			default:
				t.Fatalf("round %d: status %d %s", round, r.status, r.body)
			}
			ids[m.ID] = true
		}
		if created != 1 || len(ids) != 1 {
			t.Fatalf("round %d: %d answers 201 and %d distinct media, want 1 and 1", round, created, len(ids))
		}
	}
	a.wantStored(rounds)
}

// TestOlderRecordsGetDigests: records stored before digests were unique
// get theirs at start-up (the first copy of some bytes keeps being the one
// an upload of them finds), and the unique index is built.
func TestOlderRecordsGetDigests(t *testing.T) {
	a := newAPI(t, media.Config{})
	ctx := context.Background()
	content := sample(pdfHead, 3000, 9)
	older, newer := a.mustUpload("older.pdf", content), time.Now()
	// Make it look like a record of before, and add a copy of the same
	// bytes, as the same file uploaded twice back then would be.
	_, err := a.store.Collection().UpdateMany(ctx, bson.M{}, bson.M{"$unset": bson.M{"digest": ""}})
	testkit.Must(t, err, "unset digests")
	testkit.Must(t, a.store.Collection().Database().Collection(mongostore.CollectionName).Indexes().DropOne(ctx, "digest_unique"), "drop index")
	_, err = a.store.Collection().InsertOne(ctx, bson.M{"_id": "copyofolder0000000000a", "name": "copy.pdf", "mimeType": "application/pdf",
		"size": len(content), "objectKey": "media/copy", "sha256": sum(content), "createdAt": newer, "updatedAt": newer})
	testkit.Must(t, err, "insert a copy")

	testkit.Must(t, a.store.EnsureIndexes(ctx), "indexes with older records")
	r := a.upload(part{"file", "again.pdf", "application/pdf", content})
	var m adminMedia
	r.json(t, &m)
	if r.status != http.StatusOK || m.ID != older.ID {
		t.Errorf("upload of the older bytes: %d %+v, want 200 with the older media %s", r.status, m, older.ID)
	}
}

// TestSweepRemovesWhatCrashedUploadsLeft (issue 16 item 3): an upload that
// crashed leaves its intent, maybe an object without a record and an
// unfinished multipart upload; once the upload cannot still be running, the
// sweep removes them. An intent whose object a record holds only goes.
func TestSweepRemovesWhatCrashedUploadsLeft(t *testing.T) {
	a := newAPI(t, media.Config{MaxUploadTime: time.Minute})
	ctx := context.Background()
	kept := a.mustUpload("kept.pdf", sample(pdfHead, 3000, 1))
	var keptKey string
	var doc struct {
		ObjectKey string `bson:"objectKey"`
	}
	testkit.Must(t, a.store.Collection().FindOne(ctx, bson.M{"_id": kept.ID}).Decode(&doc), "record")
	keptKey = doc.ObjectKey

	long := time.Now().Add(-time.Hour)
	a.putObject("media/crashed-after-put")
	testkit.Must(t, a.store.Uploads().Begin(ctx, "media/crashed-after-put", long), "intent")
	testkit.Must(t, a.blobs.StartUnfinished(ctx, "media/crashed-mid-put"), "unfinished upload")
	testkit.Must(t, a.store.Uploads().Begin(ctx, "media/crashed-mid-put", long), "intent")
	testkit.Must(t, a.store.Uploads().Begin(ctx, keptKey, long), "intent of a stored media")
	testkit.Must(t, a.store.Uploads().Begin(ctx, "media/still-running", time.Now()), "intent of a running upload")
	testkit.Must(t, a.blobs.StartUnfinished(ctx, "media/still-running"), "running upload")

	testkit.Must(t, a.svc.Sweep(ctx), "sweep")
	keys, err := a.blobs.Keys(ctx)
	testkit.Must(t, err, "keys")
	if len(keys) != 1 || keys[0] != keptKey {
		t.Errorf("objects after the sweep %v, want only %s", keys, keptKey)
	}
	if n, _ := a.blobs.IncompleteUploads(ctx); n != 1 {
		t.Errorf("%d unfinished uploads after the sweep, want the running one only", n)
	}
	var left []string
	cur, err := a.store.Collection().Database().Collection(mongostore.UploadsCollection).Find(ctx, bson.M{})
	testkit.Must(t, err, "intents")
	var docs []struct {
		Key string `bson:"_id"`
	}
	testkit.Must(t, cur.All(ctx, &docs), "intents")
	for _, d := range docs {
		left = append(left, d.Key)
	}
	if len(left) != 1 || left[0] != "media/still-running" {
		t.Errorf("intents after the sweep %v, want only the running upload's", left)
	}
	a.must("GET", "/public/medias/"+kept.ID+"/download", 200)
}

// TestOlderImagesGetTheirSize: an image stored before sizes were read gets
// its width and height from its object at the next sweep; one whose header
// cannot be read is marked so and not read again.
func TestOlderImagesGetTheirSize(t *testing.T) {
	a := newAPI(t, media.Config{})
	ctx := context.Background()
	img := a.mustUpload("old.png", sample(pngHead, 5000, 1))
	broken := a.mustUpload("broken.png", sample(pngHead, 5000, 2))
	pdf := a.mustUpload("old.pdf", sample(pdfHead, 5000, 3))
	_, err := a.store.Collection().UpdateMany(ctx, bson.M{}, bson.M{"$unset": bson.M{"width": "", "height": ""}})
	testkit.Must(t, err, "forget the sizes")
	var rec struct {
		ObjectKey string `bson:"objectKey"`
	}
	testkit.Must(t, a.store.Collection().FindOne(ctx, bson.M{"_id": broken.ID}).Decode(&rec), "record")
	a.putObject(rec.ObjectKey) // its object is now a PDF's bytes: no PNG header to read

	testkit.Must(t, a.svc.Sweep(ctx), "sweep")
	var got adminMedia
	a.must("GET", "/bo/medias/"+img.ID, 200).json(t, &got)
	if got.Width != 3 || got.Height != 2 {
		t.Errorf("older image after a sweep: %d×%d, want 3×2", got.Width, got.Height)
	}
	for _, id := range []string{broken.ID, pdf.ID} {
		var m map[string]any
		a.must("GET", "/bo/medias/"+id, 200).json(t, &m)
		if m["width"] != nil || m["height"] != nil {
			t.Errorf("%s: %v, want no size", id, m)
		}
	}
	if n, _ := a.store.Collection().CountDocuments(ctx, bson.M{"_id": broken.ID, "sized": false}); n != 1 {
		t.Error("the unreadable image is not marked, so every sweep would read it again")
	}
}
