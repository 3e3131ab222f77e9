package library

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"sync"
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

// taxonomy keeps the categories last fetched.
type taxonomy struct {
	src      Taxonomy
	fetching sync.Mutex // one fetch at a time
	mu       sync.Mutex // guards the fields below
	cur      *Categories
	etag     string
	checked  time.Time
}

func (t *taxonomy) held() (*Categories, string, time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.cur, t.etag, t.checked
}

// Categories returns the tag categories, revalidated with the taxonomy if
// the last check began more than maxLag before the call (0: after it).
// While one call revalidates, calls that allow a lag get the categories
// held. While the taxonomy cannot be reached, the categories held are
// returned with the error (nil if none were ever fetched).
func (l *Library) Categories(ctx context.Context, maxLag time.Duration) (*Categories, error) {
	t := l.tax
	asked := time.Now()
	cur, _, checked := t.held()
	if cur != nil && maxLag > 0 && asked.Sub(checked) < maxLag {
		return cur, nil
	}
	if !t.fetching.TryLock() {
		if cur != nil && maxLag > 0 {
			return cur, nil
		}
		t.fetching.Lock()
	}
	defer t.fetching.Unlock()
	cur, etag, checked := t.held()
	if cur != nil && !checked.Before(asked) {
		return cur, nil // revalidated by a check begun after this call
	}
	begun := time.Now()
	body, newETag, changed, err := t.src.Categories(ctx, etag)
	if err != nil {
		return cur, err
	}
	c := cur
	if changed || cur == nil {
		if c, err = parseCategories(body); err != nil {
			return cur, err
		}
	}
	t.mu.Lock()
	t.cur, t.etag, t.checked = c, newETag, begun
	t.mu.Unlock()
	if c != cur {
		l.setCategories(c)
	}
	return c, nil
}

// RefreshCategories revalidates the tag categories; the background job
// that keeps related documents' order current runs it.
func (l *Library) RefreshCategories(ctx context.Context) error {
	_, err := l.Categories(ctx, 0)
	return err
}
