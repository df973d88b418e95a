//go:build linux

package docker

import (
	"context"
	"os"
	"testing"

	"github.com/goalbox/goalbox/servers/executor/execserver"
	"github.com/goalbox/goalbox/servers/executor/execserver/internal/sandboxtest"
)

// TestDockerProtectedFiles attacks the protected project files on the docker backend (the Go image, which has git
// for the attacks that use it), and runs the positive control with nothing protected.
func TestDockerProtectedFiles(t *testing.T) {
	img := os.Getenv("GOALBOX_DOCKER_GO_IMAGE")
	if img == "" {
		img = "golang:1.26-bookworm"
	}
	cli := dockerRequire(t)
	if _, err := cli.ImageInspect(context.Background(), img); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true and the image %s is missing (scripts/setup-docker.sh builds it): %v", img, err)
		}
		t.Skipf("image %s not found (run scripts/setup-docker.sh): %v", img, err)
	}
	for _, unprotected := range []bool{false, true} {
		name := map[bool]string{false: "protected", true: "unprotected"}[unprotected]
		t.Run(name, func(t *testing.T) {
			var enforced bool
			sandboxtest.RunProtectedFiles(t, func(t *testing.T) (execserver.Backend, string) {
				b, ws := newDockerTestBackend(t, func(c *Config) { c.Image = img })
				if e, ok := any(b).(execserver.ProtectEnforcer); ok {
					enforced = e.EnforcesProtected()
				}
				return b, ws
			}, enforced, unprotected)
		})
	}
}
