//go:build linux

package local

import (
	"testing"

	"github.com/goalbox/goalbox/servers/executor/execserver"
	"github.com/goalbox/goalbox/servers/executor/execserver/internal/sandboxtest"
)

// TestLocalProtectedFiles attacks the protected project files in the namespace mode, where the holder makes them
// read-only, and in the fallback, where only the sweep after each command undoes what a command did; and, as the
// positive control, with nothing protected, where every attack must succeed.
func TestLocalProtectedFiles(t *testing.T) {
	for _, m := range []struct {
		name                  string
		fallback, unprotected bool
	}{{"namespaces", false, false}, {"fallback", true, false}, {"unprotected", false, true}} {
		t.Run(m.name, func(t *testing.T) {
			modeWanted(t, m.fallback)
			sandboxtest.RunProtectedFiles(t, func(t *testing.T) (execserver.Backend, string) {
				return newLocalTestBackend(t, func(c *Config) { c.NoNamespaces = m.fallback })
			}, !m.fallback, m.unprotected)
		})
	}
}
