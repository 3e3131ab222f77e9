// Package rendition owns image renditions: the download parameters (w, h,
// fit, format, q, preset) and their rules (sizes snapped to a set, formats
// negotiated from Accept), the object key a rendition is stored under (the
// original's digest and the parameters), and the use case that makes one
// once from the original, bounded in concurrency, and serves it stored
// after that. Decoding and encoding is an Imager's (vipsimage).
package rendition

import (
	"fmt"
	"mime"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/doclib/services/media/internal/media"
)

// Fits: cover fills w×h exactly and crops; contain fits inside w×h and pads
// to exactly w×h; inside fits inside w×h, no padding.
const (
	FitCover   = "cover"
	FitContain = "contain"
	FitInside  = "inside"
)

// Formats a rendition may have; Auto picks one from Accept.
const (
	JPEG = "jpeg"
	PNG  = "png"
	WebP = "webp"
	AVIF = "avif"
	Auto = "auto"
)

var (
	fits    = []string{FitCover, FitContain, FitInside}
	formats = []string{JPEG, PNG, WebP, AVIF, Auto}
	// params are the query parameters that ask for a rendition.
	params = []string{"w", "h", "fit", "format", "q", "preset"}
)

// ContentType returns the media type of format.
func ContentType(format string) string { return "image/" + format }

// Spec is a rendition fully decided: every value set, sizes snapped, format
// resolved. W or H is 0 when not bounded.
type Spec struct {
	W, H    int
	Fit     string
	Format  string
	Quality int
}

// Name is the spec's part of the object key: every value, so that two
// requests meaning the same rendition share one object.
func (s Spec) Name() string {
	return fmt.Sprintf("w%d-h%d-%s-q%d.%s", s.W, s.H, s.Fit, s.Quality, s.Format)
}

// Key is where the rendition s of the original with digest sha256 is
// stored: under media.RenditionPrefix, so deleting the media finds them all.
func Key(sha256 string, s Spec) string { return media.RenditionPrefix(sha256) + s.Name() }

// Preset is a named set of parameters.
type Preset struct {
	W, H   int
	Fit    string
	Format string
}

// DefaultPresets are thumb, card and full unless configured.
var DefaultPresets = map[string]Preset{
	"thumb": {W: 160, H: 160, Fit: FitCover, Format: Auto},
	"card":  {W: 640, Fit: FitInside, Format: Auto},
	"full":  {W: 1920, H: 1920, Fit: FitInside, Format: Auto},
}

// DefaultSizes is the set sizes snap to.
var DefaultSizes = []int{160, 320, 640, 1280, 1920}

// Request is what a download asked for, before its format is negotiated.
type Request struct {
	Spec
	// Negotiated says the format depends on Accept (format=auto): the
	// answer carries Vary: Accept.
	Negotiated bool
}

// FieldError is one wrong parameter.
type FieldError struct{ Field, Message string }

// ValidationError lists every wrong parameter of a request.
type ValidationError struct{ Fields []FieldError }

func (e *ValidationError) Error() string {
	return fmt.Sprintf("%d invalid rendition parameter(s)", len(e.Fields))
}

// Asked reports whether q names any rendition parameter.
func Asked(q url.Values) bool {
	return slices.ContainsFunc(params, func(p string) bool { return q.Has(p) })
}

// Parse reads the rendition parameters of q for an image of source type
// srcType and negotiates format=auto against accept. Every wrong parameter
// is reported at once.
func (c Config) Parse(q url.Values, accept, srcType string) (Request, error) {
	p := &parser{q: q, cfg: c}
	var r Request
	if name := q.Get("preset"); q.Has("preset") {
		r.Spec = p.preset(name)
	} else {
		r.W, r.H = p.size("w"), p.size("h")
		r.Fit = p.choice("fit", fits, FitInside)
		r.Format = p.choice("format", formats, "")
	}
	if q.Has("format") && q.Has("preset") {
		r.Format = p.choice("format", formats, "")
	}
	r.Quality = p.quality()
	if len(p.errs) > 0 {
		return Request{}, &ValidationError{Fields: p.errs}
	}
	if !q.Has("preset") { // a preset's sizes are the operator's own
		r.W, r.H = c.snap(r.W), c.snap(r.H)
	}
	if r.W == 0 && r.H == 0 { // never the original's full size: the largest of the set
		r.W, r.H, r.Fit = c.largest(), c.largest(), FitInside
	}
	if r.W == 0 || r.H == 0 { // cover and contain need both sides
		r.Fit = FitInside
	}
	if r.Format == Auto {
		r.Negotiated = true
	}
	r.Format = c.resolve(r.Format, accept, srcType)
	return r, nil
}

type parser struct {
	q    url.Values
	cfg  Config
	errs []FieldError
}

func (p *parser) fail(field, format string, a ...any) {
	p.errs = append(p.errs, FieldError{Field: field, Message: fmt.Sprintf(format, a...)})
}

// size reads w or h: a whole number of pixels from 1 to MaxSide; 0 when absent.
func (p *parser) size(field string) int {
	if !p.q.Has(field) {
		return 0
	}
	n, err := strconv.Atoi(p.q.Get(field))
	if err != nil || n < 1 || n > p.cfg.MaxSide {
		p.fail(field, "must be a whole number of pixels from 1 to %d", p.cfg.MaxSide)
		return 0
	}
	return n
}

func (p *parser) choice(field string, allowed []string, def string) string {
	if !p.q.Has(field) {
		return def
	}
	v := p.q.Get(field)
	if !slices.Contains(allowed, v) {
		p.fail(field, "must be one of %s", strings.Join(allowed, ", "))
		return def
	}
	return v
}

// quality reads q (1 to 100), rounded up to a multiple of 10 unless
// arbitrary values are allowed.
func (p *parser) quality() int {
	if !p.q.Has("q") {
		return p.cfg.Quality
	}
	n, err := strconv.Atoi(p.q.Get("q"))
	if err != nil || n < 1 || n > 100 {
		p.fail("q", "must be a whole number from 1 to 100")
		return 0
	}
	if !p.cfg.AllowArbitrary {
		n = (n + 9) / 10 * 10
	}
	return n
}

func (p *parser) preset(name string) Spec {
	for _, f := range []string{"w", "h", "fit"} {
		if p.q.Has(f) {
			p.fail(f, "cannot be given with preset (only format and q can)")
		}
	}
	pr, ok := p.cfg.Presets[name]
	if !ok {
		p.fail("preset", "must be one of %s", strings.Join(p.cfg.presetNames(), ", "))
		return Spec{}
	}
	return Spec{W: pr.W, H: pr.H, Fit: pr.Fit, Format: pr.Format}
}

// snap returns the smallest size of the set at least n (the largest when n
// is over all), or n itself when arbitrary sizes are allowed.
func (c Config) snap(n int) int {
	if n == 0 || c.AllowArbitrary {
		return n
	}
	for _, s := range c.Sizes {
		if s >= n {
			return s
		}
	}
	return c.largest()
}

func (c Config) largest() int {
	if c.AllowArbitrary || len(c.Sizes) == 0 {
		return c.MaxSide
	}
	return c.Sizes[len(c.Sizes)-1]
}

// resolve turns format (possibly "" or auto) into a concrete format: auto
// picks AVIF (if enabled for auto) or WebP when Accept names them, and
// otherwise, as an absent format, the source's own family: JPEG for JPEG,
// WebP for WebP, PNG for the rest (keeps transparency).
func (c Config) resolve(format, accept, srcType string) string {
	if format == Auto {
		switch {
		case c.AutoAVIF && accepts(accept, ContentType(AVIF)):
			return AVIF
		case accepts(accept, ContentType(WebP)):
			return WebP
		}
		format = ""
	}
	if format != "" {
		return format
	}
	switch srcType {
	case "image/jpeg", media.PDFType: // a page: JPEG is the smaller
		return JPEG
	case "image/webp":
		return WebP
	}
	return PNG
}

// accepts reports whether accept names mediaType itself with a non-zero
// weight. Wildcards do not count: a client sending */* alone may not
// decode WebP or AVIF.
func accepts(accept, mediaType string) bool {
	for _, r := range strings.Split(accept, ",") {
		mt, ps, err := mime.ParseMediaType(strings.TrimSpace(r))
		if err != nil || !strings.EqualFold(mt, mediaType) {
			continue
		}
		if q, ok := ps["q"]; ok {
			if f, err := strconv.ParseFloat(q, 64); err != nil || f <= 0 {
				return false
			}
		}
		return true
	}
	return false
}
