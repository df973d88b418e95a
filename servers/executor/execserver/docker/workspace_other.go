//go:build !linux

package docker

import (
	"context"
	"errors"
)

// Outside Linux the server cannot look into a container (Docker Desktop runs them in a VM): the path check before
// each command is what guards against a swapped workspace (workspace_unix.go).

func (b *dockerBackend) hostWorkspace() string { return b.cfg.WorkspaceHostDir }

func (b *dockerBackend) probeMountVerify(context.Context, string) bool { return false }

func (b *dockerBackend) verifyMounts(context.Context, string, protection, *commandLayer) error {
	return nil
}

func (b *dockerBackend) containerPid(context.Context, string) (int, error) {
	return 0, errors.New("the server cannot see the container's processes here")
}
