package docker

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestDefaultImage: no image configured means the executor's own image, and where it is missing the error names
// the command that builds it.
func TestDefaultImage(t *testing.T) {
	cfg := Config{WorkspaceHostDir: t.TempDir(), User: "4242:4242", CacheHostDir: "-"}
	if err := cfg.setDefaults(); err != nil {
		t.Fatal(err)
	}
	if cfg.Image != DefaultImage || DefaultImage != "goalbox/executor:latest" {
		t.Errorf("default image %q, want %q", cfg.Image, "goalbox/executor:latest")
	}
	msg := imageMissing(DefaultImage).Error()
	for _, want := range []string{"docker build -f deploy/Dockerfile.exec -t goalbox/executor:latest .", "-image", "never pulled"} {
		if !strings.Contains(msg, want) {
			t.Errorf("missing default image: %q does not say %q", msg, want)
		}
	}
	if msg := imageMissing("debian:bookworm-slim").Error(); strings.Contains(msg, "Dockerfile.exec") || !strings.Contains(msg, "docker pull debian:bookworm-slim") {
		t.Errorf("another missing image: %q", msg)
	}
}

// TestEngineHost: DOCKER_HOST wins; else the current docker context's endpoint (as Docker Desktop, Colima or
// OrbStack install one), from DOCKER_CONTEXT or config.json; "default" and a missing context fall through.
func TestEngineHost(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("DOCKER_CONFIG", dir)
	t.Setenv("DOCKER_CONTEXT", "")
	t.Setenv("DOCKER_HOST", "")
	writeContext := func(name, host string) {
		sum := sha256.Sum256([]byte(name))
		meta := filepath.Join(dir, "contexts", "meta", hex.EncodeToString(sum[:]))
		if err := os.MkdirAll(meta, 0o755); err != nil {
			t.Fatal(err)
		}
		body := `{"Name":"` + name + `","Metadata":{},"Endpoints":{"docker":{"Host":"` + host + `","SkipTLSVerify":false}}}`
		if err := os.WriteFile(filepath.Join(meta, "meta.json"), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	writeContext("colima", "unix:///Users/me/.colima/default/docker.sock")
	writeContext("desktop-linux", "unix:///Users/me/.docker/run/docker.sock")

	if h, src := EngineHost(); !strings.HasPrefix(h, "unix://") || strings.Contains(h, "colima") || strings.HasPrefix(src, "docker context") {
		t.Errorf("no context chosen: got %s (%s), want a default socket", h, src)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"auths":{},"currentContext":"colima"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if h, src := EngineHost(); h != "unix:///Users/me/.colima/default/docker.sock" || src != "docker context colima" {
		t.Errorf("config.json's context: got %s (%s)", h, src)
	}
	t.Setenv("DOCKER_CONTEXT", "desktop-linux")
	if h, _ := EngineHost(); h != "unix:///Users/me/.docker/run/docker.sock" {
		t.Errorf("DOCKER_CONTEXT: got %s", h)
	}
	t.Setenv("DOCKER_CONTEXT", "default")
	if h, _ := EngineHost(); strings.Contains(h, "/Users/me/") {
		t.Errorf("the default context: got %s", h)
	}
	t.Setenv("DOCKER_CONTEXT", "no-such-context")
	if h, _ := EngineHost(); strings.Contains(h, "/Users/me/") {
		t.Errorf("a missing context: got %s", h)
	}
	t.Setenv("DOCKER_HOST", "tcp://10.1.2.3:2375")
	if h, src := EngineHost(); h != "tcp://10.1.2.3:2375" || src != "DOCKER_HOST" {
		t.Errorf("DOCKER_HOST: got %s (%s)", h, src)
	}
}

// TestPingNoEngine: an address where nothing answers fails within the timeout, with the address in the result.
func TestPingNoEngine(t *testing.T) {
	start := time.Now()
	e, err := Ping(context.Background(), "unix:///nonexistent/docker.sock", 2*time.Second)
	if err == nil {
		t.Fatal("a socket that does not exist answered")
	}
	if e.Host != "unix:///nonexistent/docker.sock" || time.Since(start) > 5*time.Second {
		t.Errorf("got %+v after %v", e, time.Since(start))
	}
}
