package gateway

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// BenchmarkServeHTTP measures the gateway's own work per request: a
// recorded response, a real instance over loopback.
func BenchmarkServeHTTP(b *testing.B) {
	be := newBackend(b, func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header()["Content-Type"] = []string{"application/json"}
		io.WriteString(w, `{"predicted_label":"cat","scores":[["cat",0.91],["dog",0.09]]}`)
	})
	g := New(Options{Logger: slog.New(slog.DiscardHandler)})
	g.Set(openRoute("s1", Backend{"i1", "m1", be.addr()}))
	body := `{"inputs":[1,2,3]}`
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		r := httptest.NewRequest("POST", "/v1/infers/s1", strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		g.ServeHTTP(w, r)
		if w.Code != 200 {
			b.Fatal(w.Code)
		}
	}
}
