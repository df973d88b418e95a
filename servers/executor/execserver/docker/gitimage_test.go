//go:build linux

package docker

import (
	"os"
	"strings"
	"testing"

	"github.com/goalbox/goalbox/pkg/ciskip"
	"github.com/goalbox/goalbox/servers/executor/execserver/backend"
)

// dockerGitImage is the image the tests that need git in a command run in: the executor's own image
// (deploy/Dockerfile.exec installs git, as a coding agent's sandbox needs it), or GOALBOX_DOCKER_GIT_IMAGE. It must
// exist and hold git; else the test skips, or fails under CI=true, saying how to build it. One command on a
// throwaway backend checks git, so that an image built before git was added fails here, by name, rather than as an
// attack's control that plants too little.
func dockerGitImage(t *testing.T) string {
	t.Helper()
	img := os.Getenv("GOALBOX_DOCKER_GIT_IMAGE")
	if img == "" {
		img = DefaultImage
	}
	cli := dockerRequire(t)
	if _, err := cli.ImageInspect(t.Context(), img); err != nil {
		ciskip.Skipf(t, "the image with git %s is missing (docker build -f deploy/Dockerfile.exec -t %s . in the repository's root, or set GOALBOX_DOCKER_GIT_IMAGE): %v", img, DefaultImage, err)
	}
	b, _ := newDockerTestBackend(t, func(c *Config) { c.Image = img })
	code, out := dockerRun(t, b, backend.Request{Command: "git --version"})
	if code != 0 || !strings.HasPrefix(out, "git version") {
		t.Fatalf("the image %s has no git (%d %q): rebuild it from deploy/Dockerfile.exec (docker build -f deploy/Dockerfile.exec -t %s .), which installs git", img, code, out, DefaultImage)
	}
	b.Close()
	return img
}
