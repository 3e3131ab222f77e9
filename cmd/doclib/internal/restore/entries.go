package restore

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"net/url"
	"strconv"

	"github.com/doclib/cmd/doclib/internal/archive"
	"github.com/doclib/cmd/doclib/internal/client"
	"github.com/doclib/cmd/doclib/internal/library"
)

// put sends one import and counts it; a conflict is an error naming the
// entry unless merging.
func (in *Importer) put(ctx context.Context, entry, kind, id, path string, body *client.Body) error {
	status, conflict, err := in.request(ctx, entry, kind, id, path, body)
	if err == nil {
		in.count(kind, status, conflict, id)
	}
	return err
}

// request sends one import and answers its status, or conflict when the
// installation has the record otherwise: an error naming the entry unless
// merging.
func (in *Importer) request(ctx context.Context, entry, kind, id, path string, body *client.Body) (status int, conflict bool, err error) {
	resp, err := in.c.Do(ctx, http.MethodPut, path, body)
	var se *client.StatusError
	if errors.As(err, &se) && se.Status == http.StatusConflict && bytes.Contains([]byte(se.Body), []byte(`"import_conflict"`)) {
		if !in.merge {
			return 0, false, fmt.Errorf("entry %s: %s %s exists and differs, %w: %w", entry, kind, id, ErrConflict, err)
		}
		return 0, true, nil
	}
	if errors.As(err, &se) && se.Status == http.StatusRequestEntityTooLarge {
		return 0, false, fmt.Errorf("entry %s: %s %s is %w (%s): %w", entry, kind, id, ErrTooLarge, tooLargeHint(kind), err)
	}
	if err != nil {
		return 0, false, fmt.Errorf("entry %s: %s %s: %w", entry, kind, id, err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, false, nil
}

// tooLargeHint says what limit a record of kind is over: a media file's
// is a setting; a record's JSON body (document, revision) has the
// catalog's fixed import limit, which doclib stays under by sending a
// large entry one revision at a time, so only one record over it is left.
func tooLargeHint(kind string) string {
	if kind == "media" {
		return "raise MEDIA_MAX_UPLOAD_SIZE of its gateway and media service"
	}
	return fmt.Sprintf("one %s's import request may carry %d MiB, a fixed limit of the catalog: this record cannot be imported as it is", kind, maxEntryBody>>20)
}

// referenceData writes categories, tags and (unless merging: the target's
// stay) settings.
func (in *Importer) referenceData(ctx context.Context, contents library.Contents) error {
	for _, l := range []struct {
		kind  archive.Kind
		entry string
		name  string
		route string
	}{
		{archive.KindCategories, archive.CategoriesPath, "category", "/bo/import/tags-categories/"},
		{archive.KindTags, archive.TagsPath, "tag", "/bo/import/tags/"},
	} {
		err := eachRecord(contents.Raw[l.kind], func(id string, raw []byte) error {
			return in.put(ctx, l.entry, l.name, id, l.route+url.PathEscape(id), client.JSON(raw))
		})
		if err != nil {
			return err
		}
	}
	settings := contents.Raw[archive.KindSettings]
	var s struct {
		UpdatedAt string `json:"updatedAt"`
	}
	if in.merge || json.Unmarshal(settings, &s) != nil || s.UpdatedAt == "" {
		return nil // never set where it came from: the target's default stays
	}
	return in.put(ctx, archive.SettingsPath, "settings", "", "/bo/import/config", client.JSON(settings))
}

// eachRecord calls fn with the id and bytes of every line of a JSON Lines
// entry (Verify checked every line has an id).
func eachRecord(raw []byte, fn func(id string, raw []byte) error) error {
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 0, 64<<10), archive.MaxJSONEntry)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var r struct {
			ID string `json:"id"`
		}
		if err := json.Unmarshal(line, &r); err != nil {
			return err
		}
		if err := fn(r.ID, bytes.Clone(line)); err != nil {
			return err
		}
	}
	return sc.Err()
}

// entries imports each media file and document as the archive holds them.
// Media are streamed in the archive's order, one at a time (their bytes
// come from the one archive stream); documents, small, are sent by the
// pool meanwhile: each after the media written before it in the archive
// (all it names: the exporter writes a document after them) and after the
// documents it pins that this run sends (they are earlier in the archive).
func (in *Importer) entries(ctx context.Context, ar *archive.Reader, contents library.Contents) error {
	records := map[string][]byte{}
	if err := eachRecord(contents.Raw[archive.KindMediaRecords], func(id string, raw []byte) error {
		records[id] = raw
		return nil
	}); err != nil {
		return err
	}
	p := newPool(ctx, in.workers)
	done := map[string]chan struct{}{} // documents sent by this run, closed once imported
	for {
		f, err := ar.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err == nil {
			err = contents.Same(f)
		}
		if err == nil {
			switch f.Kind {
			case archive.KindMediaFile:
				err = in.media(p.ctx, f, records[f.ID])
			case archive.KindDocument:
				err = in.startDocument(p, f, done)
			}
		}
		if err != nil {
			p.fail(err)
			break
		}
	}
	if err := p.wait(); err != nil {
		return err
	}
	return ctx.Err()
}

// startDocument reads a document entry and hands it to the pool, to be
// sent once the documents it pins are.
func (in *Importer) startDocument(p *pool, f *archive.File, done map[string]chan struct{}) error {
	raw, err := f.Bytes()
	if err != nil {
		return err
	}
	var d library.Document
	if err := json.Unmarshal(raw, &d); err != nil {
		return fmt.Errorf("entry %s: %w", f.Path, err)
	}
	refs, err := library.DocumentRefs(d.Document)
	if err != nil {
		return fmt.Errorf("entry %s: %w", f.Path, err)
	}
	var deps []chan struct{}
	for _, id := range refs.Documents {
		if ch, ok := done[id]; ok {
			deps = append(deps, ch)
		}
	}
	mine := make(chan struct{})
	done[f.ID] = mine
	entry, id := f.Path, f.ID
	p.goRun(func(ctx context.Context) error {
		for _, ch := range deps {
			select {
			case <-ch:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		if err := in.document(ctx, entry, id, d, raw); err != nil {
			return err
		}
		close(mine)
		return nil
	})
	return nil
}

// maxEntryBody is the largest body the import routes take (the catalog's
// httpx.MaxImportJSONBody): a larger entry goes one revision at a time.
const maxEntryBody = 8 << 20

// document sends a document's entry as it is (its revisions, then it, in
// one request), or, when it is over in.entryLimit, its revisions one by one
// and then the document (the catalog takes a document's revisions before
// it). The entry route stops at the first record the installation has
// otherwise: merging, the entry then goes one record at a time, so each
// revision and the document is created, left or kept by itself, as the
// merge rules say (a revision the installation lacks is created even after
// one that conflicts).
func (in *Importer) document(ctx context.Context, entry, id string, d library.Document, raw []byte) error {
	base := "/bo/import/documents/" + url.PathEscape(id)
	if len(raw) <= in.entryLimit {
		status, conflict, err := in.request(ctx, entry, "document", id, base+"/entry", client.JSON(raw))
		if err != nil || !conflict {
			if err == nil {
				in.count("document", status, false, id)
				in.countRevisions(len(d.Revisions))
			}
			return err
		}
	}
	for _, rev := range d.Revisions {
		var r struct {
			Version int64 `json:"version"`
		}
		if err := json.Unmarshal(rev, &r); err != nil {
			return fmt.Errorf("entry %s: a revision: %w", entry, err)
		}
		v := strconv.FormatInt(r.Version, 10)
		if err := in.put(ctx, entry, "revision", id+"/"+v, base+"/revisions/"+v, client.JSON(rev)); err != nil {
			return err
		}
	}
	return in.put(ctx, entry, "document", id, base, client.JSON(d.Document))
}

// media streams a media file with its record as one multipart request,
// never holding the bytes: a request that fails is not sent again (the
// bytes are read once); the import stops naming the entry and a new run
// resumes (what was stored answers 200 at once).
func (in *Importer) media(ctx context.Context, f *archive.File, record []byte) error {
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	done := make(chan error, 1)
	go func() { done <- writeMediaForm(pw, mw, record, f) }()
	body := &client.Body{ContentType: mw.FormDataContentType(), Once: true,
		Open: func() (io.Reader, error) { return pr, nil }}
	err := in.put(ctx, f.Path, "media", f.ID, "/bo/import/medias/"+url.PathEscape(f.ID), body)
	pr.CloseWithError(errors.New("the request is over")) // the server may answer before reading it all (200)
	werr := <-done
	if err != nil {
		return err
	}
	if werr != nil && f.Err() != nil {
		return f.Err() // the archive itself failed (a changed byte after verify)
	}
	return nil
}

func writeMediaForm(pw *io.PipeWriter, mw *multipart.Writer, record []byte, f *archive.File) error {
	err := func() error {
		h := textproto.MIMEHeader{}
		h.Set("Content-Disposition", `form-data; name="record"`)
		h.Set("Content-Type", "application/json")
		part, err := mw.CreatePart(h)
		if err != nil {
			return err
		}
		if _, err := part.Write(record); err != nil {
			return err
		}
		file, err := mw.CreateFormFile("file", f.ID)
		if err != nil {
			return err
		}
		if _, err := io.Copy(file, f); err != nil {
			return err
		}
		return mw.Close()
	}()
	pw.CloseWithError(err)
	return err
}
