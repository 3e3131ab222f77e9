package rendition

import (
	"errors"
	"net/url"
	"reflect"
	"testing"
)

func TestParse(t *testing.T) {
	t.Parallel()
	cfg := Config{}.WithDefaults()
	arbitrary := cfg
	arbitrary.AllowArbitrary = true
	for _, c := range []struct {
		cfg            Config
		query, accept  string
		src            string
		want           Spec
		wantNegotiated bool
	}{
		{cfg, "w=300", "", "image/jpeg", Spec{W: 320, Fit: FitInside, Format: JPEG, Quality: 80}, false},
		{cfg, "w=3000", "", "image/png", Spec{W: 1920, Fit: FitInside, Format: PNG, Quality: 80}, false},
		{arbitrary, "w=300&q=55", "", "image/png", Spec{W: 300, Fit: FitInside, Format: PNG, Quality: 55}, false},
		{cfg, "w=300&q=55", "", "image/gif", Spec{W: 320, Fit: FitInside, Format: PNG, Quality: 60}, false},
		{cfg, "w=160&fit=cover", "", "image/jpeg", Spec{W: 160, Fit: FitInside, Format: JPEG, Quality: 80}, false},
		{cfg, "w=160&h=100&fit=cover", "", "image/jpeg", Spec{W: 160, H: 160, Fit: FitCover, Format: JPEG, Quality: 80}, false},
		{cfg, "format=webp", "", "image/jpeg", Spec{W: 1920, H: 1920, Fit: FitInside, Format: WebP, Quality: 80}, false},
		{cfg, "preset=thumb", "image/webp", "image/jpeg", Spec{W: 160, H: 160, Fit: FitCover, Format: WebP, Quality: 80}, true},
		{cfg, "preset=thumb&format=png", "image/webp", "image/jpeg", Spec{W: 160, H: 160, Fit: FitCover, Format: PNG, Quality: 80}, false},
		{cfg, "format=auto&w=1", "image/avif,*/*", "image/webp", Spec{W: 160, Fit: FitInside, Format: WebP, Quality: 80}, true},
		{cfg, "format=auto&w=1", "image/*", "image/jpeg", Spec{W: 160, Fit: FitInside, Format: JPEG, Quality: 80}, true},
	} {
		q, _ := url.ParseQuery(c.query)
		got, err := c.cfg.Parse(q, c.accept, c.src)
		if err != nil {
			t.Errorf("%s: %v", c.query, err)
			continue
		}
		if got.Spec != c.want || got.Negotiated != c.wantNegotiated {
			t.Errorf("%s (Accept %q): %+v negotiated %v, want %+v %v", c.query, c.accept, got.Spec, got.Negotiated, c.want, c.wantNegotiated)
		}
	}
}

func TestParseErrors(t *testing.T) {
	t.Parallel()
	q, _ := url.ParseQuery("w=0&h=99999&fit=fill&format=bmp&q=101")
	_, err := Config{}.WithDefaults().Parse(q, "", "image/png")
	var v *ValidationError
	if !errors.As(err, &v) {
		t.Fatalf("error %v, want a ValidationError", err)
	}
	var fields []string
	for _, f := range v.Fields {
		fields = append(fields, f.Field)
	}
	if want := []string{"w", "h", "fit", "format", "q"}; !reflect.DeepEqual(fields, want) {
		t.Errorf("fields %v, want %v", fields, want)
	}
}

func TestParsePresets(t *testing.T) {
	t.Parallel()
	got, err := ParsePresets("thumb:160x160:cover, card:640x0:inside:webp", 4096)
	want := map[string]Preset{"thumb": {160, 160, FitCover, Auto}, "card": {640, 0, FitInside, WebP}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, %v; want %v", got, err, want)
	}
	for _, bad := range []string{"thumb", "t:0x0:cover", "t:10x10:fill", "t:10x10:cover:bmp", "t:10:cover", ":1x1:cover"} {
		if _, err := ParsePresets(bad, 4096); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if _, err := ParseSizes("320, 160,x", 4096); err == nil {
		t.Error("sizes with x accepted")
	}
}

func TestKey(t *testing.T) {
	t.Parallel()
	s := Spec{W: 320, Fit: FitInside, Format: WebP, Quality: 80}
	if got := Key("abc", s); got != "renditions/abc/w320-h0-inside-q80.webp" {
		t.Errorf("key %q", got)
	}
}
