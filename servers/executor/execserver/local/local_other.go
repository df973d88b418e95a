//go:build !linux

package local

import (
	"errors"
	"log/slog"

	"github.com/goalbox/goalbox/servers/executor/execserver"
)

// New needs Linux: its confinement (namespaces, Landlock, capabilities) is Linux's.
func New(cfg Config, logger *slog.Logger) (execserver.Backend, error) {
	return nil, errors.New("the local backend needs Linux; use -backend docker")
}
