// Package dockertest is what the tests of the docker backend, of the executor's command and of the agent share:
// whether a Docker Engine and the test image are there. Without them a test skips with the reason, or fails when
// CI=true (CI must test the docker backend).
package dockertest

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/moby/moby/client"
)

// Image is the image the tests run commands in: GOALBOX_DOCKER_IMAGE, default debian:bookworm-slim
// (scripts/setup-docker.sh builds it where nothing can be pulled).
func Image() string {
	if img := os.Getenv("GOALBOX_DOCKER_IMAGE"); img != "" {
		return img
	}
	return "debian:bookworm-slim"
}

// Require returns a client to the Engine (closed when the test ends) and the test image, or skips the test —
// fails it when CI=true — when no Engine answers or the image is missing.
func Require(t testing.TB) (*client.Client, string) {
	t.Helper()
	image := Image()
	unavailable := func(format string, args ...any) {
		t.Helper()
		msg := fmt.Sprintf(format, args...)
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true and the docker backend cannot be tested: %s", msg)
		}
		t.Skipf("docker backend not tested: %s (run scripts/setup-docker.sh)", msg)
	}
	cli, err := client.New(client.FromEnv)
	if err != nil {
		unavailable("docker client: %v", err)
	}
	t.Cleanup(func() { cli.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := cli.Ping(ctx, client.PingOptions{NegotiateAPIVersion: true}); err != nil {
		unavailable("no Docker Engine answers: %v", err)
	}
	if _, err := cli.ImageInspect(ctx, image); err != nil {
		unavailable("image %s: %v", image, err)
	}
	return cli, image
}
