package httpx

import (
	"strconv"
	"strings"
)

// RangeKind is what a Range header asks of a body of known size.
type RangeKind int

const (
	// RangeNone: no Range, a unit other than bytes (RFC 9110 §14.2: ignored)
	// or several ranges (the contract answers those with the whole body).
	RangeNone RangeKind = iota
	// RangeSingle: one satisfiable range, Start and Length set.
	RangeSingle
	// RangeUnsatisfiable: malformed, or no byte of it inside the body
	// (a suffix of zero bytes, a start at or after the end): 416.
	RangeUnsatisfiable
)

// ByteRange is a parsed Range header.
type ByteRange struct {
	Kind   RangeKind
	Start  int64
	Length int64
}

// ParseRange reads a Range header for a body of size bytes, strictly: digits
// only (no sign, no spaces inside a number), first-pos <= last-pos, and a
// suffix length above zero (RFC 9110 §14.1.1). net/http's own parser takes
// "bytes=-0" for a 206 of nothing and "+1-2" for a range.
func ParseRange(header string, size int64) ByteRange {
	header = strings.TrimSpace(header)
	if header == "" {
		return ByteRange{}
	}
	unit, set, ok := strings.Cut(header, "=")
	if !ok {
		return ByteRange{Kind: RangeUnsatisfiable}
	}
	if !strings.EqualFold(strings.TrimSpace(unit), "bytes") {
		return ByteRange{}
	}
	var specs int
	var valid []ByteRange
	for _, spec := range strings.Split(set, ",") {
		spec = strings.TrimSpace(spec)
		if spec == "" { // RFC 9110 list syntax allows empty elements
			continue
		}
		specs++
		r, ok := parseRangeSpec(spec, size)
		if !ok {
			return ByteRange{Kind: RangeUnsatisfiable}
		}
		if r.Kind == RangeSingle {
			valid = append(valid, r)
		}
	}
	switch {
	case len(valid) == 0:
		return ByteRange{Kind: RangeUnsatisfiable}
	case specs > 1:
		return ByteRange{} // several ranges: the whole body
	}
	return valid[0]
}

// parseRangeSpec reads one range-spec; ok is false when it is malformed. A
// well-formed spec outside the body has Kind RangeUnsatisfiable.
func parseRangeSpec(spec string, size int64) (ByteRange, bool) {
	first, last, ok := strings.Cut(spec, "-")
	if !ok {
		return ByteRange{}, false
	}
	if first == "" { // suffix-range: the last n bytes
		n, ok := digits(last)
		if !ok {
			return ByteRange{}, false
		}
		if n == 0 || size == 0 {
			return ByteRange{Kind: RangeUnsatisfiable}, true
		}
		n = min(n, size)
		return ByteRange{Kind: RangeSingle, Start: size - n, Length: n}, true
	}
	start, ok := digits(first)
	if !ok {
		return ByteRange{}, false
	}
	end := size - 1
	if last != "" {
		e, ok := digits(last)
		if !ok || e < start {
			return ByteRange{}, false
		}
		end = min(e, size-1)
	}
	if start >= size {
		return ByteRange{Kind: RangeUnsatisfiable}, true
	}
	return ByteRange{Kind: RangeSingle, Start: start, Length: end - start + 1}, true
}

// digits parses a non-empty run of ASCII digits; values past int64 saturate
// (a range beyond any body is simply past its end).
func digits(s string) (int64, bool) {
	if s == "" {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil { // only overflow is left
		return 1<<63 - 1, true
	}
	return n, true
}

// Header returns the canonical Range header for r, as net/http's
// ServeContent reads it: "" for RangeNone, an explicit first-last for
// RangeSingle, and a start at the end for RangeUnsatisfiable (which
// ServeContent answers 416 with Content-Range: bytes */size, after
// evaluating the conditional headers first, as RFC 9110 §13.2.2 orders).
func (r ByteRange) Header(size int64) string {
	switch r.Kind {
	case RangeSingle:
		return "bytes=" + strconv.FormatInt(r.Start, 10) + "-" + strconv.FormatInt(r.Start+r.Length-1, 10)
	case RangeUnsatisfiable:
		return "bytes=" + strconv.FormatInt(size, 10) + "-"
	}
	return ""
}
