package rendition

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/doclib/services/media/internal/media"
)

// Config holds the rendition rules and bounds.
type Config struct {
	// Sizes is the set w and h snap to (ascending), unless AllowArbitrary.
	Sizes          []int
	AllowArbitrary bool
	// MaxSide bounds w and h in every case.
	MaxSide int
	// Quality is q when not given.
	Quality int
	Presets map[string]Preset
	// AutoAVIF lets format=auto pick AVIF (slow to encode: off by default).
	AutoAVIF bool
	// SVG lets SVG images be rasterised (off: they are served as they are).
	SVG bool
	// Concurrency is how many renditions are made at once; Wait how long
	// an excess request waits for its turn before a 503.
	Concurrency int
	Wait        time.Duration
	// MaxSourceBytes and MaxSourcePixels bound the originals a rendition is
	// made from (read whole into memory; the header is checked first).
	MaxSourceBytes  int64
	MaxSourcePixels int
	// TextCacheBytes bounds the PDF texts kept rendered in memory (their
	// identity bodies; compressed forms come on top, smaller).
	TextCacheBytes int64
}

// Defaults of Config.
const (
	DefaultMaxSide        = 4096
	DefaultQuality        = 80
	DefaultConcurrency    = 2
	DefaultWait           = 10 * time.Second
	DefaultMaxSourceBytes = 50 << 20
)

// WithDefaults returns c with zero fields set to their defaults.
func (c Config) WithDefaults() Config {
	if len(c.Sizes) == 0 {
		c.Sizes = DefaultSizes
	}
	if c.MaxSide <= 0 {
		c.MaxSide = DefaultMaxSide
	}
	if c.Quality <= 0 {
		c.Quality = DefaultQuality
	}
	if len(c.Presets) == 0 {
		c.Presets = DefaultPresets
	}
	if c.Concurrency <= 0 {
		c.Concurrency = DefaultConcurrency
	}
	if c.TextCacheBytes <= 0 {
		c.TextCacheBytes = DefaultTextCacheBytes
	}
	if c.Wait <= 0 {
		c.Wait = DefaultWait
	}
	if c.MaxSourceBytes <= 0 {
		c.MaxSourceBytes = DefaultMaxSourceBytes
	}
	if c.MaxSourcePixels <= 0 {
		c.MaxSourcePixels = media.MaxImagePixels
	}
	return c
}

func (c Config) presetNames() []string {
	names := make([]string, 0, len(c.Presets))
	for n := range c.Presets {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// ParseSizes reads a comma-separated list of sizes ("160,320,640"), sorted.
func ParseSizes(s string, maxSide int) ([]int, error) {
	var sizes []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > maxSide {
			return nil, fmt.Errorf("%q is not a size from 1 to %d", f, maxSide)
		}
		sizes = append(sizes, n)
	}
	slices.Sort(sizes)
	return slices.Compact(sizes), nil
}

// ParsePresets reads presets written name:WxH:fit[:format], comma-separated
// ("thumb:160x160:cover,card:640x0:inside:webp"); 0 leaves a side unbounded,
// and the format is auto unless given.
func ParsePresets(s string, maxSide int) (map[string]Preset, error) {
	out := map[string]Preset{}
	for _, item := range strings.Split(s, ",") {
		f := strings.Split(strings.TrimSpace(item), ":")
		if len(f) < 3 || len(f) > 4 || f[0] == "" {
			return nil, fmt.Errorf("%q is not name:WxH:fit[:format]", item)
		}
		p := Preset{Fit: f[2], Format: Auto}
		if len(f) == 4 {
			p.Format = f[3]
		}
		w, h, ok := strings.Cut(f[1], "x")
		var errW, errH error
		p.W, errW = strconv.Atoi(w)
		p.H, errH = strconv.Atoi(h)
		switch {
		case !ok || errW != nil || errH != nil || p.W < 0 || p.H < 0 || p.W > maxSide || p.H > maxSide || p.W+p.H == 0:
			return nil, fmt.Errorf("preset %s: %q is not WxH with sides from 0 to %d, not both 0", f[0], f[1], maxSide)
		case !slices.Contains(fits, p.Fit):
			return nil, fmt.Errorf("preset %s: fit must be one of %s", f[0], strings.Join(fits, ", "))
		case !slices.Contains(formats, p.Format):
			return nil, fmt.Errorf("preset %s: format must be one of %s", f[0], strings.Join(formats, ", "))
		}
		out[f[0]] = p
	}
	return out, nil
}
