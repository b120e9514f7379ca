package extract

import (
	"bytes"
	"compress/zlib"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// pdfBuild writes a PDF of the given objects (numbered from 1) and
// trailer; a []byte object is a Flate-compressed stream.
func pdfBuild(objs []any, trailer string) []byte {
	var b bytes.Buffer
	b.WriteString("%PDF-1.7\n%\xe2\xe3\xcf\xd3\n")
	for i, o := range objs {
		fmt.Fprintf(&b, "%d 0 obj\n", i+1)
		switch v := o.(type) {
		case string:
			b.WriteString(v)
		case []byte:
			var z bytes.Buffer
			zw := zlib.NewWriter(&z)
			_, _ = zw.Write(v)
			_ = zw.Close()
			fmt.Fprintf(&b, "<< /Length %d /Filter /FlateDecode >>\nstream\n", z.Len())
			b.Write(z.Bytes())
			b.WriteString("\nendstream")
		}
		b.WriteString("\nendobj\n")
	}
	fmt.Fprintf(&b, "trailer\n%s\n%%%%EOF\n", trailer)
	return b.Bytes()
}

const cmap = `/CIDInit /ProcSet findresource begin 12 dict begin begincmap
1 begincodespacerange <0000> <FFFF> endcodespacerange
2 beginbfchar <0001> <0048> <0002> <00E9> endbfchar
1 beginbfrange <0003> <0005> <0061> endbfrange
endcmap end end`

func samplePDF() []byte {
	return pdfBuild([]any{
		"<< /Type /Catalog /Pages 2 0 R >>",
		"<< /Type /Pages /Kids [3 0 R 6 0 R] /Count 2 /Resources << /Font << /F1 4 0 R /F2 7 0 R >> >> >>",
		"<< /Type /Page /Parent 2 0 R /Contents 5 0 R >>",
		"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
		[]byte("BT /F1 12 Tf 72 720 Td (Quarterly report) Tj 0 -14 Td [(Revenue grew ) -20 (by) -300 (12%) ] TJ\n" +
			"0 -14 Td (Costs \\(fixed\\) fell \\223a lot\\224.) Tj ET"),
		"<< /Type /Page /Parent 2 0 R /Contents 8 0 R >>",
		"<< /Type /Font /Subtype /Type0 /BaseFont /Foo /ToUnicode 9 0 R >>",
		"<< /Length 52 >>\nstream\nBT /F2 10 Tf <00010002> Tj T* <000300040005> Tj ET\nendstream",
		[]byte(cmap),
		"<< /Title (Q1 Report) /Author <FEFF0041006400610020004C> /CreationDate (D:20260315120000Z) >>",
	}, "<< /Root 1 0 R /Info 10 0 R /Size 11 >>")
}

func TestPDF(t *testing.T) {
	t.Parallel()
	doc, err := Extract(samplePDF(), "", "q1.pdf")
	if err != nil {
		t.Fatal(err)
	}
	if doc.ContentType != "application/pdf" || doc.Title != "Q1 Report" || doc.Author != "Ada L" ||
		!doc.Published.Equal(time.Date(2026, 3, 15, 12, 0, 0, 0, time.UTC)) || doc.Metadata["pages"] != 2 {
		t.Fatalf("fields: %q %q %v %v", doc.Title, doc.Author, doc.Published, doc.Metadata)
	}
	var got []string
	for _, s := range doc.Sections {
		got = append(got, strings.Join(s.Path, "/")+": "+s.Text)
	}
	want := []string{"Page 1: Quarterly report\nRevenue grew by 12%\nCosts (fixed) fell “a lot”.", "Page 2: Hé\nabc"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("pages (-want +got):\n%s", d)
	}
}

func TestPDFRefused(t *testing.T) {
	t.Parallel()
	enc := pdfBuild([]any{"<< /Type /Catalog /Pages 2 0 R >>", "<< /Type /Pages /Kids [] /Count 0 >>"},
		"<< /Root 1 0 R /Encrypt << /Filter /Standard >> >>")
	if _, err := Extract(enc, "application/pdf", ""); !errors.Is(err, ErrUnsupported) {
		t.Errorf("encrypted: %v", err)
	}
	if _, err := Extract([]byte("GIF89a"), "application/pdf", ""); !errors.Is(err, ErrCorrupt) {
		t.Errorf("not a PDF: %v", err)
	}
	// Images only: no text, a clear error.
	img := pdfBuild([]any{"<< /Type /Catalog /Pages 2 0 R >>", "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
		"<< /Type /Page /Parent 2 0 R /Contents 4 0 R >>", []byte("q 100 0 0 100 0 0 cm /Im1 Do Q")}, "<< /Root 1 0 R >>")
	if _, err := Extract(img, "application/pdf", ""); !errors.Is(err, ErrEmpty) {
		t.Errorf("image-only PDF: %v", err)
	}
	// A page tree that points at itself ends.
	loop := pdfBuild([]any{"<< /Type /Catalog /Pages 2 0 R >>", "<< /Type /Pages /Kids [2 0 R] /Count 1 >>"}, "<< /Root 1 0 R >>")
	if _, err := Extract(loop, "application/pdf", ""); !errors.Is(err, ErrEmpty) {
		t.Errorf("looping page tree: %v", err)
	}
}

func FuzzExtractPDF(f *testing.F) {
	f.Add(samplePDF())
	f.Add([]byte("%PDF-1.4\n1 0 obj << /Type /Page /Contents 2 0 R >> endobj 2 0 obj << /Length 5 >> stream\nBT ET\nendstream endobj"))
	f.Add([]byte("%PDF-1.4\n1 0 obj [ [ [ [ ( ( ( \\"))
	f.Fuzz(func(t *testing.T, data []byte) {
		doc, err := Extract(data, "application/pdf", "")
		if err == nil && len(doc.Sections) == 0 {
			t.Fatal("nil error with no sections")
		}
	})
}

// TestPDFObjectStream: the catalog, page tree and page packed in a
// compressed object stream (PDF 1.5+), as most producers write them.
func TestPDFObjectStream(t *testing.T) {
	t.Parallel()
	objs := []string{"<< /Type /Catalog /Pages 3 0 R >>", "<< /Type /Pages /Kids [4 0 R] /Count 1 >>",
		"<< /Type /Page /Parent 3 0 R /Contents 5 0 R /Resources << /Font << /F1 6 0 R >> >> >>"}
	var header, body bytes.Buffer
	for i, o := range objs {
		fmt.Fprintf(&header, "%d %d ", i+2, body.Len())
		body.WriteString(o + "\n")
	}
	packed := append([]byte(header.String()), body.Bytes()...)
	var z bytes.Buffer
	zw := zlib.NewWriter(&z)
	_, _ = zw.Write(packed)
	_ = zw.Close()
	var b bytes.Buffer
	b.WriteString("%PDF-1.5\n")
	fmt.Fprintf(&b, "1 0 obj\n<< /Type /ObjStm /N 3 /First %d /Length %d /Filter /FlateDecode >>\nstream\n", header.Len(), z.Len())
	b.Write(z.Bytes())
	b.WriteString("\nendstream\nendobj\n")
	b.WriteString("5 0 obj\n<< /Length 44 >>\nstream\nBT /F1 9 Tf (Packed objects still read) Tj ET\nendstream\nendobj\n")
	b.WriteString("6 0 obj\n<< /Type /Font /Subtype /Type1 >>\nendobj\n")
	b.WriteString("7 0 obj\n<< /Type /XRef /Root 2 0 R /Size 8 /Length 0 >>\nstream\n\nendstream\nendobj\n%%EOF\n")
	doc, err := Extract(b.Bytes(), "application/pdf", "")
	if err != nil {
		t.Fatal(err)
	}
	if len(doc.Sections) != 1 || doc.Sections[0].Text != "Packed objects still read" {
		t.Fatalf("sections: %+v", doc.Sections)
	}
}
