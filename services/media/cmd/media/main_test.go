package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/doclib/libs/config"
	"github.com/doclib/libs/httpx"
)

func TestLoad(t *testing.T) {
	env := config.FromMap(map[string]string{
		"MONGODB_URI": "mongodb://db/", "CATALOG_URL": "http://catalog:8082", "NATS_URL": "nats://nats:4222",
		"S3_ENDPOINT": "minio:9000", "S3_ACCESS_KEY": "key", "S3_SECRET_KEY": "very-secret",
		"MEDIA_ALLOWED_TYPES": "application/pdf, image/png", "IDENTITY_SIGNING_KEY": "identity-key-0123456789abcdef-0123",
	})
	s, err := load(env)
	if err != nil {
		t.Fatal(err)
	}
	if s.server.Addr != ":8083" || s.database != "media" || s.s3.Bucket != "doclib-media" || s.s3.Region != "us-east-1" ||
		s.s3.UseTLS || s.media.MaxSize != 104857600 || len(s.media.AllowedTypes) != 2 || s.s3.SecretKey != "very-secret" ||
		s.server.WriteTimeout != 30*time.Minute || s.server.ReadHeaderTimeout == 0 || !s.media.StripMetadata {
		t.Errorf("settings %+v", s)
	}
	if shown := fmt.Sprint(env.Attrs()...); strings.Contains(shown, "very-secret") || strings.Contains(shown, "identity-key") {
		t.Errorf("the start-up log shows the secret key: %s", shown)
	}

	_, err = load(config.FromMap(map[string]string{"S3_ENDPOINT": "http://minio:9000", "MEDIA_MAX_UPLOAD_SIZE": "0"}))
	for _, key := range []string{"MONGODB_URI", "CATALOG_URL", "NATS_URL", "S3_ENDPOINT", "S3_ACCESS_KEY", "S3_SECRET_KEY", "MEDIA_MAX_UPLOAD_SIZE", "IDENTITY_SIGNING_KEY"} {
		if err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("error %v should name %s", err, key)
		}
	}
}

// TestAMediaImportIsNotCutAtTheBudget: a media import streams its file for
// as long as it takes (a 512 MiB one took over 5 s and was answered 503
// outcome_unknown, its upload cancelled); other writes keep the bound.
func TestAMediaImportIsNotCutAtTheBudget(t *testing.T) {
	t.Parallel()
	slow := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(httpx.RequestBudget + httpx.BoundGrace + 300*time.Millisecond)
		w.WriteHeader(http.StatusCreated)
	})
	h := bound(slow)
	for path, want := range map[string]int{"/bo/import/medias/abc": http.StatusCreated, "/bo/medias/abc": http.StatusServiceUnavailable} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPut, path, strings.NewReader("x")))
		if rec.Code != want {
			t.Errorf("a slow PUT %s: %d, want %d", path, rec.Code, want)
		}
	}
}
