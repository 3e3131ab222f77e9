package httpx

import (
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/doclib/libs/logging"
)

// discardWriter is a ResponseWriter that keeps nothing: the benchmark
// measures the engine's middleware, not a recorder.
type discardWriter struct{ h http.Header }

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (w *discardWriter) WriteHeader(int)             {}

// BenchmarkEngine is one public read through NewEngine's middleware, its
// log written to a file (as a container runtime keeps it), at each level.
func BenchmarkEngine(b *testing.B) {
	body := make([]byte, 3<<10)
	for _, level := range []string{"info", "warn"} {
		b.Run(level, func(b *testing.B) {
			f, err := os.Create(filepath.Join(b.TempDir(), "log"))
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			e := NewEngine("bench", logging.New(f, "bench", level))
			e.GET("/public/documents/:id/detail", func(c *gin.Context) { c.Data(http.StatusOK, "application/json", body) })
			req, _ := http.NewRequest("GET", "/public/documents/abc/detail", nil)
			w := &discardWriter{h: http.Header{}}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				clear(w.h)
				e.ServeHTTP(w, req)
			}
		})
	}
}
