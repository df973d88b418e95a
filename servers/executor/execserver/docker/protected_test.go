//go:build linux

package docker

import (
	"testing"

	"github.com/goalbox/goalbox/servers/executor/execserver/backend"
	"github.com/goalbox/goalbox/servers/executor/execserver/internal/sandboxtest"
)

// TestDockerProtectedFiles attacks the protected project files on the docker backend (the Go image, which has git
// for the attacks that use it), and runs the positive control with nothing protected.
func TestDockerProtectedFiles(t *testing.T) {
	img := dockerGoImage(t)
	for _, unprotected := range []bool{false, true} {
		name := map[bool]string{false: "protected", true: "unprotected"}[unprotected]
		t.Run(name, func(t *testing.T) {
			var enforced bool
			sandboxtest.RunProtectedFiles(t, func(t *testing.T) (backend.Backend, string) {
				b, ws := newDockerTestBackend(t, func(c *Config) { c.Image = img })
				if e, ok := any(b).(backend.ProtectEnforcer); ok {
					enforced = e.EnforcesProtected()
				}
				return b, ws
			}, enforced, unprotected)
		})
	}
}
