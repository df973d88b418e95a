//go:build !linux

package docker

import (
	"context"
	"errors"
)

// setupTotalsCgroup: cgroups are Linux's; Docker Desktop's live in its VM, out of the server's reach.
func (b *dockerBackend) setupTotalsCgroup(context.Context) (string, error) {
	return "", errors.New("no host cgroups outside Linux")
}

func (b *dockerBackend) removeTotalsCgroup() {}
