package app

import (
	"slices"
	"testing"

	"github.com/atelier-dev/atelier/internal/config"
)

func TestBrowserOrigins(t *testing.T) {
	for _, c := range []struct {
		name        string
		cfg         config.Server
		api, s3     string
		wantS3      string
		wantConsole []string
	}{
		{"loopback", config.Server{Listen: "127.0.0.1:0"}, "127.0.0.1:8080", "127.0.0.1:9000",
			"http://127.0.0.1:9000", []string{"http://127.0.0.1:8080", "http://localhost:8080"}},
		{"every address", config.Server{Listen: "0.0.0.0:8080", AdvertiseURL: "https://atelier.example.com"}, "0.0.0.0:8080", "[::]:9000",
			"", []string{"https://atelier.example.com"}},
		{"configured", config.Server{Listen: "0.0.0.0:8080", S3AdvertiseURL: "https://s3.example.com",
			ConsoleOrigins: []string{"https://console.example.com"}}, "0.0.0.0:8080", "0.0.0.0:9000",
			"https://s3.example.com", []string{"https://console.example.com"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s3, console := browserOrigins(&c.cfg, c.api, c.s3)
			if s3 != c.wantS3 || !slices.Equal(console, c.wantConsole) {
				t.Errorf("browserOrigins = %q, %q; want %q, %q", s3, console, c.wantS3, c.wantConsole)
			}
		})
	}
}
