package library

// The rule this file keeps: a sync page carries the tag categories its
// client needs to resolve the tags of the documents it holds (sync.go
// asks for them revalidated when the page holds a document the categories
// held may not describe), and one check of taxonomy at a time serves every
// read that arrives while it runs.

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"time"
)

// Taxonomy gives the tag categories as the public API shows them
// (TagCategory[], GET /public/tags-categories of the taxonomy service),
// revalidated with the ETag of the body held: changed is false when it is
// still current.
type Taxonomy interface {
	Categories(ctx context.Context, etag string) (body []byte, newETag string, changed bool, err error)
}

// Categories are the tag categories as the taxonomy serves them.
type Categories struct {
	// Body is the TagCategory[] JSON, sent as is in a sync page.
	Body json.RawMessage
	// Fingerprint tells one list from another (a sync cursor carries the
	// one its client holds).
	Fingerprint uint64
	categoryOf  map[string]string
}

// CategoryOf returns the category of tag, "" when unknown (no categories
// held, or a tag created since).
func (c *Categories) CategoryOf(tag string) string {
	if c == nil {
		return ""
	}
	return c.categoryOf[tag]
}

func parseCategories(body []byte) (*Categories, error) {
	var cats []struct {
		ID   string `json:"id"`
		Tags []struct {
			ID string `json:"id"`
		} `json:"tags"`
	}
	if err := json.Unmarshal(body, &cats); err != nil {
		return nil, fmt.Errorf("tag categories: %w", err)
	}
	c := &Categories{Body: body, categoryOf: map[string]string{}}
	sum := sha256.Sum256(body)
	c.Fingerprint = binary.BigEndian.Uint64(sum[:8]) | 1 // never 0: a cursor's 0 means none
	for _, cat := range cats {
		for _, t := range cat.Tags {
			c.categoryOf[t.ID] = cat.ID
		}
	}
	return c, nil
}

// taxonomy is the categories last fetched, under Library.mu.
type taxonomy struct {
	src     Taxonomy
	cur     *Categories
	etag    string
	checked time.Time // when the check that gave cur began
	// seq is the counter of the snapshot held when that check began: the
	// tags of every document up to it are as taxonomy had them before the
	// check (a write checks its tags before it takes its seq; a tag's
	// deletion is applied to documents after taxonomy deleted it), so cur
	// describes them.
	seq      int64
	fetching chan struct{} // while a check runs; closed when it ends
}

// Categories returns the tag categories, revalidated with the taxonomy if
// the last check began more than maxLag before the call (0: after it).
// While one call revalidates, calls that allow a lag get the categories
// held. While the taxonomy cannot be reached, the categories held are
// returned with the error (nil if none were ever fetched).
func (l *Library) Categories(ctx context.Context, maxLag time.Duration) (*Categories, error) {
	asked := time.Now()
	t := &l.tax
	l.mu.Lock()
	for {
		fresh := t.cur != nil && (!t.checked.Before(asked) || maxLag > 0 && asked.Sub(t.checked) < maxLag)
		if fresh || t.cur != nil && maxLag > 0 && t.fetching != nil {
			c := t.cur // fresh enough, or held while a check is under way
			l.mu.Unlock()
			return c, nil
		}
		if t.fetching == nil {
			return l.check(ctx) // it unlocks
		}
		wait, held := t.fetching, t.cur
		l.mu.Unlock()
		select {
		case <-wait:
		case <-ctx.Done():
			return held, ctx.Err()
		}
		l.mu.Lock()
	}
}

// check revalidates the categories held with taxonomy. Called under mu,
// which it releases.
func (l *Library) check(ctx context.Context) (*Categories, error) {
	t := &l.tax
	done := make(chan struct{})
	t.fetching = done
	cur, etag, seq := t.cur, t.etag, l.cur.Load().Counter
	l.mu.Unlock()
	begun := time.Now()
	c, newETag, err := fetch(ctx, t.src, cur, etag)
	l.mu.Lock()
	defer l.mu.Unlock()
	t.fetching = nil
	close(done)
	if err != nil {
		return cur, err
	}
	t.cur, t.etag, t.checked, t.seq = c, newETag, begun, seq
	if c != cur {
		l.setCategories(c)
	}
	return c, nil
}

// fetch asks taxonomy for the categories, conditionally on the ones held.
func fetch(ctx context.Context, src Taxonomy, cur *Categories, etag string) (*Categories, string, error) {
	body, newETag, changed, err := src.Categories(ctx, etag)
	if err != nil {
		return nil, "", err
	}
	if !changed && cur != nil {
		return cur, newETag, nil
	}
	c, err := parseCategories(body)
	return c, newETag, err
}

// describes reports whether the categories held describe the tags of every
// document up to seq: checked after this replica held them.
func (l *Library) describes(seq int64) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.tax.cur != nil && l.tax.seq >= seq
}

// RefreshCategories revalidates the tag categories; the background job
// that keeps related documents' order current runs it.
func (l *Library) RefreshCategories(ctx context.Context) error {
	_, err := l.Categories(ctx, 0)
	return err
}
