//go:build !linux

package execserver

import (
	"errors"
	"log/slog"
)

// NewLocalBackend needs Linux: its confinement (namespaces, Landlock, capabilities) is Linux's.
func NewLocalBackend(cfg LocalConfig, logger *slog.Logger) (Backend, error) {
	return nil, errors.New("the local backend needs Linux; use -backend docker")
}
