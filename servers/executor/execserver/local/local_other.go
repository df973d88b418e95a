//go:build !linux

package local

import (
	"fmt"
	"log/slog"
	"runtime"

	"github.com/goalbox/goalbox/servers/executor/execserver/backend"
)

// New needs Linux: its confinement (namespaces, Landlock, capabilities) is Linux's.
func New(cfg Config, logger *slog.Logger) (backend.Backend, error) {
	return nil, fmt.Errorf("the local backend needs Linux (its confinement is Linux's namespaces, Landlock and seccomp), and this is %s; use the docker backend", runtime.GOOS)
}
