package docker

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strconv"

	"github.com/moby/moby/client"
	"golang.org/x/sys/unix"
)

// hostWorkspace is the workspace for the host-side walks that take a path (the disk cap's meter): the handle
// opened at start, through /proc/self/fd, so a symlink put at the workspace's path is never measured instead. The
// trailing slash makes a walk's first lstat follow the descriptor's link to the folder (without it, filepath.WalkDir
// sees a symlink and does not descend).
func (b *dockerBackend) hostWorkspace() string {
	return "/proc/self/fd/" + strconv.Itoa(b.wsFD) + "/"
}

// containerRoot is the root of a running container as the server sees it: /proc/<its init>/root. It is reachable
// only from the Docker host's PID namespace, by root or by the user the container runs as.
func (b *dockerBackend) containerRoot(ctx context.Context, id string) (string, error) {
	pid, err := b.containerPid(ctx, id)
	if err != nil {
		return "", err
	}
	return "/proc/" + strconv.Itoa(pid) + "/root", nil
}

// containerPid is the host pid of a running container's init.
func (b *dockerBackend) containerPid(ctx context.Context, id string) (int, error) {
	insp, err := b.cli.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
	if err != nil {
		return 0, err
	}
	if insp.Container.State == nil || insp.Container.State.Pid <= 0 {
		return 0, errors.New("the container is not running")
	}
	return insp.Container.State.Pid, nil
}

// probeMountVerify says whether this server can look into its containers (the network holder, running as the
// command user): then every container's mounts are verified before it gets a command (verifyMounts).
func (b *dockerBackend) probeMountVerify(ctx context.Context, holder string) bool {
	root, err := b.containerRoot(ctx, holder)
	if err != nil {
		return false
	}
	var st unix.Stat_t
	return unix.Stat(root+"/", &st) == nil
}

// verifyMounts checks, in a started container that has not been given its command, that /workspace is the folder
// opened at start and each protected path mounted on it the inode checked before the create: the Engine mounted
// paths, and a path may have been swapped since it was checked.
func (b *dockerBackend) verifyMounts(ctx context.Context, id string, prot protection, l *commandLayer) error {
	if !b.mountVerify {
		return nil
	}
	root, err := b.containerRoot(ctx, id)
	if err != nil {
		return fmt.Errorf("docker backend: verify the container's mounts: %w", err)
	}
	check := func(p string, want [2]uint64) bool {
		var st unix.Stat_t
		return unix.Lstat(root+p, &st) == nil && uint64(st.Dev) == want[0] && uint64(st.Ino) == want[1]
	}
	if l != nil {
		// The layer's merged folders, mounted by the server: the Engine bound what the server mounted, or the
		// container is not used (a mount namespace that does not see it would show the empty folder under it).
		if !check(containerWorkspace, l.wsID) || (l.cache && !check(containerCache, l.cacheID)) || !check(containerShm, l.shmID) {
			return errors.New("docker backend: the container's /workspace, /cache or /dev/shm is not the layer the executor mounted for it; not used")
		}
		return nil
	}
	if !check(containerWorkspace, b.wsID) {
		if err := b.checkWorkspacePath(); err != nil {
			return err
		}
		return fmt.Errorf("docker backend: the container's /workspace is not the workspace this executor opened at start (the path was swapped while it started); not used")
	}
	for i, rel := range prot.paths {
		if !check(path.Join(containerWorkspace, rel), prot.ids[i]) {
			return fmt.Errorf("docker backend: the protected path %s was replaced while the container started; not used", rel)
		}
	}
	return nil
}
