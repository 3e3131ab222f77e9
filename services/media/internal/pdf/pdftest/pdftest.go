// Package pdftest makes PDF files for tests: well-formed ones of n pages
// with a word of their own on each, and hostile ones (encrypted, claiming
// a huge page count, nested deeper than a parser's stack, a compressed
// stream that inflates to gigabytes).
package pdftest

import (
	"bytes"
	"compress/zlib"
	"fmt"
	"strings"
)

// build lays out objects (numbered from 1) with a correct cross-reference
// table; trailer is added to the trailer dictionary.
func build(objs []string, trailer string) []byte {
	var b bytes.Buffer
	b.WriteString("%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
	offs := make([]int, len(objs))
	for i, o := range objs {
		offs[i] = b.Len()
		fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", i+1, o)
	}
	xref := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(objs)+1)
	for _, o := range offs {
		fmt.Fprintf(&b, "%010d 00000 n \n", o)
	}
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root 1 0 R %s >>\nstartxref\n%d\n%%%%EOF\n", len(objs)+1, trailer, xref)
	return b.Bytes()
}

func stream(dict, data string) string {
	return fmt.Sprintf("<< %s /Length %d >>\nstream\n%s\nendstream", dict, len(data), data)
}

// Word is the word written on page n (from 1) of Pages.
func Word(n int) string { return fmt.Sprintf("zebra%dquux", n) }

// Pages returns a PDF of n US-letter pages (612×792 points), page i
// saying "Page i" and Word(i).
func Pages(n int) []byte { return pages(n, "[0 0 612 792]", 0) }

// Rotated returns a one-page PDF of w×h points turned by rotate degrees.
func Rotated(w, h, rotate int) []byte { return pages(1, fmt.Sprintf("[0 0 %d %d]", w, h), rotate) }

func pages(n int, box string, rotate int) []byte {
	kids := make([]string, n)
	objs := []string{"<< /Type /Catalog /Pages 2 0 R >>", "", "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"}
	for i := range n {
		kids[i] = fmt.Sprintf("%d 0 R", 4+2*i)
		objs = append(objs,
			fmt.Sprintf("<< /Type /Page /Parent 2 0 R /MediaBox %s /Rotate %d /Resources << /Font << /F1 3 0 R >> >> /Contents %d 0 R >>", box, rotate, 5+2*i),
			stream("", fmt.Sprintf("BT /F1 24 Tf 72 700 Td (Page %d %s) Tj ET 0 0 1 rg 72 72 200 200 re f", i+1, Word(i+1))))
	}
	objs[1] = fmt.Sprintf("<< /Type /Pages /Kids [%s] /Count %d >>", strings.Join(kids, " "), n)
	return build(objs, "")
}

// Encrypted returns a PDF encrypted with a user password (RC4, 40 bits)
// whose check value matches no password: no reader opens it without one.
func Encrypted() []byte {
	objs := []string{"<< /Type /Catalog /Pages 2 0 R >>", "<< /Type /Pages /Kids [4 0 R] /Count 1 >>",
		"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
		"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 5 0 R >>", stream("", "garbled"),
		"<< /Filter /Standard /V 1 /R 2 /O <" + strings.Repeat("11", 32) + "> /U <" + strings.Repeat("22", 32) + "> /P -4 >>"}
	return build(objs, "/Encrypt 6 0 R /ID [<0123456789abcdef0123456789abcdef> <0123456789abcdef0123456789abcdef>]")
}

// HugePageCount returns a PDF whose page tree lists one page n times.
func HugePageCount(n int) []byte {
	kids := strings.Repeat("4 0 R ", n)
	objs := []string{"<< /Type /Catalog /Pages 2 0 R >>", fmt.Sprintf("<< /Type /Pages /Kids [%s] /Count %d >>", kids, n),
		"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
		"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> /Contents 5 0 R >>",
		stream("", "BT /F1 24 Tf 72 700 Td (again) Tj ET")}
	return build(objs, "")
}

// DeepNesting returns a PDF whose page content names an array nested
// depth levels deep.
func DeepNesting(depth int) []byte {
	nested := strings.Repeat("[", depth) + strings.Repeat("]", depth)
	objs := []string{"<< /Type /Catalog /Pages 2 0 R /Nested " + nested + " >>", "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
		"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R >>", stream("", nested+" pop")}
	return build(objs, "")
}

// FlateBomb returns a PDF whose page content inflates to size bytes of
// drawing operators (each a tiny filled rectangle).
func FlateBomb(size int) []byte {
	var z bytes.Buffer
	zw, _ := zlib.NewWriterLevel(&z, zlib.BestCompression)
	op := []byte("1 1 1 1 re f\n")
	for written := 0; written < size; written += len(op) {
		_, _ = zw.Write(op)
	}
	_ = zw.Close()
	objs := []string{"<< /Type /Catalog /Pages 2 0 R >>", "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
		"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R >>",
		fmt.Sprintf("<< /Filter /FlateDecode /Length %d >>\nstream\n%s\nendstream", z.Len(), z.Bytes())}
	return build(objs, "")
}
