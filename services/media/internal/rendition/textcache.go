package rendition

import (
	"container/list"
	"context"
	"sync"
	"sync/atomic"

	"github.com/doclib/libs/rendering"
	"github.com/doclib/services/media/internal/media"
)

// DefaultTextCacheBytes bounds the texts kept rendered in memory.
const DefaultTextCacheBytes = 64 << 20

// TextType is the Content-Type of a PDF's text.
const TextType = "text/plain; charset=utf-8"

// textCache keeps the renderings of PDF texts by SHA-256, the least
// recently used dropped first once their bodies pass max bytes (a body
// larger than max is not kept). A rendering keeps its compressed forms, so
// a text is compressed once per encoding while it stays here.
type textCache struct {
	mu    sync.Mutex
	max   int64
	size  int64
	order *list.List // of *textEntry, most recent first
	byKey map[string]*list.Element
}

type textEntry struct {
	key string
	r   *rendering.Rendering
}

func newTextCache(max int64) *textCache {
	return &textCache{max: max, order: list.New(), byKey: map[string]*list.Element{}}
}

func (c *textCache) get(key string) (*rendering.Rendering, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.byKey[key]
	if !ok {
		return nil, false
	}
	c.order.MoveToFront(el)
	return el.Value.(*textEntry).r, true
}

func (c *textCache) put(key string, r *rendering.Rendering) {
	n := int64(len(r.Body()))
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.byKey[key]; ok || n > c.max {
		return
	}
	c.byKey[key] = c.order.PushFront(&textEntry{key: key, r: r})
	c.size += n
	for c.size > c.max {
		el := c.order.Back()
		e := el.Value.(*textEntry)
		c.order.Remove(el)
		delete(c.byKey, e.key)
		c.size -= int64(len(e.r.Body()))
	}
}

// textLoads counts the texts read from the store (or extracted) and
// rendered: a text served from memory is not.
type textLoads struct{ n atomic.Int64 }

// TextLoads is how many times a text was read and rendered (not served
// from memory) since the service started.
func (s *Service) TextLoads() int64 { return s.loads.n.Load() }

// TextRendering returns the text of the PDF m rendered, ready to serve in
// the encoding acceptEncoding negotiates: from memory, or read (extracted
// if need be) and compressed in a text slot, waiting at most Config.Wait
// for one (ErrBusy). Texts are kept by SHA-256: media with the same bytes
// share one.
func (s *Service) TextRendering(ctx context.Context, m media.Media, acceptEncoding string) (*rendering.Rendering, error) {
	if s.pdf == nil || m.MimeType != media.PDFType {
		return nil, ErrNoText
	}
	if r, ok := s.texts.get(m.SHA256); ok {
		return r, nil
	}
	release, err := acquireSlot(ctx, s.textSlots, s.cfg)
	if err != nil {
		return nil, err
	}
	defer release()
	if r, ok := s.texts.get(m.SHA256); ok { // rendered while this one waited
		return r, nil
	}
	t, err := s.Text(ctx, m)
	if err != nil {
		return nil, err
	}
	s.loads.n.Add(1)
	r := rendering.New(TextType, t.Body)
	r.Encoded(r.Negotiate(acceptEncoding)) // compressed here, in the slot
	s.texts.put(m.SHA256, r)
	return r, nil
}
