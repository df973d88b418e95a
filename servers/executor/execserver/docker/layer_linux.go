package docker

// Each container's own layer (the workspace guard, package wsguard), as the local backend's namespace mode has it:
// a command never writes the workspace, nor the cache. A root server on the Docker host mounts, for each container,
// a tmpfs bounded in bytes and in inodes by what the disk caps leave when the container is made, and in it two
// overlays: the workspace (lower: the folder opened at start, through its descriptor, never its path again) and the
// cache, each with its upper and work folders in that tmpfs. The Engine binds the two merged folders at /workspace
// and /cache. So a write past the caps fails in the command with ENOSPC at the write (fallocate included), an
// inode past them too, and nothing the command does reaches the host's filesystem until the server applies the
// upper layers through pathguard (package wsguard): every wsguard.ApplyEvery while the container runs, and once more
// when its command has ended and nothing runs in it any more. Then the tmpfs is unmounted: what was refused, and
// whatever the command left past the caps, is gone with it. The container's /dev/shm is a folder of the same tmpfs,
// bound in place of the Engine's own (64 MiB whatever the caps, and not counted in them): as the local backend's,
// it counts in the caps' bytes and inodes and ends with the command; nothing of it is applied.
//
// One container runs one command (a pooled one too), so a layer never needs clearing while its container lives:
// it is made with the container and goes with it.
//
// It needs what mounting needs: a root server, on the Docker host, in the mount namespace the Engine's runtime
// resolves bind sources in (checked at start: layerSupport). Elsewhere (a server in the docker group, Docker
// Desktop, a remote Engine) the backend runs without it, as before: read-only binds, a sweep and a polled disk cap,
// and /healthz and the server's instructions say so.

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/goalbox/goalbox/servers/executor/execserver/internal/layer"
	"github.com/goalbox/goalbox/servers/executor/execserver/internal/proctree"
	"golang.org/x/sys/unix"
)

// commandLayer is one container's layer: a tmpfs mounted at dir, holding ws/ and cache/ (the merged views the
// Engine binds), their upper and work folders, and shm/ (the container's /dev/shm).
type commandLayer struct {
	dir     string
	wsID    [2]uint64 // the merged workspace's root, as the container must see it at /workspace
	cacheID [2]uint64 // the merged cache's, when there is a cache
	shmID   [2]uint64 // shm/, as the container must see it at /dev/shm
	cache   bool
	// bytes and inodes are the tmpfs's size: a pooled container's layer is used only while they still fit (fits).
	bytes, inodes int64
	// overCap, when not empty, is the note for a command whose layer was made at a cap (layer.Room).
	overCap string
	// unmounted says close ran.
	unmounted bool
}

func (l *commandLayer) merged() string      { return filepath.Join(l.dir, "ws") }
func (l *commandLayer) mergedCache() string { return filepath.Join(l.dir, "cache") }
func (l *commandLayer) upper() string       { return filepath.Join(l.dir, "upper") }
func (l *commandLayer) cacheUpper() string  { return filepath.Join(l.dir, "cache-upper") }
func (l *commandLayer) shm() string         { return filepath.Join(l.dir, "shm") }

// layerSupport says whether this server can give its containers layers, and if not why. It mounts one layer (a
// probe) and needs to see into the containers (mountVerify) from the mount namespace the Engine's runtime works
// in: the parent of the network holder's init (the runtime's shim) must share the server's mount namespace, else
// the Engine would bind the empty folder under the mount.
func (b *dockerBackend) layerSupport(holderPid int) error {
	switch {
	case b.cfg.NoWorkspaceLayer:
		return errors.New("off (-no-workspace-layer)")
	case os.Geteuid() != 0:
		return errors.New("the server is not root, and only root mounts the layers the Engine binds")
	case !b.mountVerify:
		return errors.New("the server cannot see into its containers (not on the Docker host)")
	}
	ours, err := os.Readlink("/proc/self/ns/mnt")
	if err != nil {
		return err
	}
	ppid, _, ok := proctree.Stat(holderPid)
	if !ok {
		return fmt.Errorf("the container runtime's process: no /proc/%d/stat to read", holderPid)
	}
	theirs, err := os.Readlink("/proc/" + strconv.Itoa(ppid) + "/ns/mnt")
	if err != nil {
		return fmt.Errorf("the container runtime's mount namespace: %w", err)
	}
	if ours != theirs {
		return errors.New("the Docker Engine's runtime is in another mount namespace than the server, and would not see its mounts")
	}
	l, err := b.mountLayer(layer.BytesFloor, layer.InodesFloor)
	if err != nil {
		return err
	}
	return l.close()
}

// newLayer makes the layer of a container about to be created, as large as the caps leave now; nil when the
// backend does not layer. At a cap the layer gets the floor and a note: the command can delete, not add.
func (b *dockerBackend) newLayer() (*commandLayer, error) {
	if !b.layered {
		return nil, nil
	}
	bytesLeft, inodesLeft, note := b.capsLeft()
	l, err := b.mountLayer(bytesLeft, inodesLeft)
	if err != nil {
		return nil, fmt.Errorf("docker backend: the command's layer: %w", err)
	}
	l.overCap = note
	return l, nil
}

// capsLeft is the size of a layer made now (layer.Room): what the caps leave of the workspace and the cache.
func (b *dockerBackend) capsLeft() (bytesLeft, inodesLeft int64, note string) {
	return layer.Room(b.diskDirs(), b.cfg.MaxWorkspaceBytes, b.cfg.MaxWorkspaceInodes, "the workspace and the cache")
}

// fits says whether a layer made ahead (the warm pool's) is no larger than what the caps leave now, and takes the
// note a layer made now would have: the workspace may have grown since it was made.
func (b *dockerBackend) fits(l *commandLayer) bool {
	if l == nil {
		return true
	}
	bytesLeft, inodesLeft, note := b.capsLeft()
	if l.bytes > bytesLeft || l.inodes > inodesLeft {
		return false
	}
	l.overCap = note
	return true
}

// mountLayer mounts a tmpfs of bytes and inodes in a new folder of ctlRoot (root's, 0700: no other user of the
// host reaches into it) and the overlays in it.
func (b *dockerBackend) mountLayer(bytes, inodes int64) (_ *commandLayer, err error) {
	dir, err := os.MkdirTemp(b.ctlRoot, "l-")
	if err != nil {
		return nil, err
	}
	l := &commandLayer{dir: dir, cache: b.cacheDir != "", bytes: bytes, inodes: inodes}
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV,
		fmt.Sprintf("size=%d,nr_inodes=%d,mode=0700", bytes, inodes)); err != nil {
		os.Remove(dir)
		return nil, fmt.Errorf("tmpfs: %w", err)
	}
	defer func() {
		if err != nil {
			l.close()
		}
	}()
	ws := "/proc/self/fd/" + strconv.Itoa(b.wsFD)
	if l.wsID, err = mountOverlay(ws, dir, "ws", "upper", "work"); err != nil {
		return nil, fmt.Errorf("workspace overlay: %w", err)
	}
	if l.cache {
		if l.cacheID, err = mountOverlay(b.cacheDir, dir, "cache", "cache-upper", "cache-work"); err != nil {
			return nil, fmt.Errorf("cache overlay: %w", err)
		}
	}
	if l.shmID, err = makeShm(l.shm()); err != nil {
		return nil, fmt.Errorf("the layer's /dev/shm: %w", err)
	}
	return l, nil
}

// makeShm makes the folder bound at the container's /dev/shm, sticky and open to all as a /dev/shm is (only the
// command's user runs in the container), and returns its identity.
func makeShm(p string) ([2]uint64, error) {
	if err := os.Mkdir(p, 0o700); err != nil {
		return [2]uint64{}, err
	}
	if err := os.Chmod(p, 0o777|os.ModeSticky); err != nil {
		return [2]uint64{}, err
	}
	var st unix.Stat_t
	if err := unix.Stat(p, &st); err != nil {
		return [2]uint64{}, err
	}
	return [2]uint64{uint64(st.Dev), uint64(st.Ino)}, nil
}

// mountOverlay mounts at dir/merged an overlay of lower with its upper and work folders in dir, and returns the
// merged root's identity. The upper folder has the lower root's owner and mode: the merged root shows the upper
// folder's. userxattr keeps the overlay's marks as user.overlay.* attributes (what wsguard reads) and keeps
// redirects and metacopy off (the kernel refuses them beside it): every change is in the upper folder itself.
func mountOverlay(lower, dir, merged, upper, work string) ([2]uint64, error) {
	var st unix.Stat_t
	if err := unix.Stat(lower, &st); err != nil {
		return [2]uint64{}, err
	}
	for _, d := range []struct {
		name string
		mode uint32
	}{{upper, st.Mode & 0o777}, {work, 0o700}, {merged, 0o755}} {
		p := filepath.Join(dir, d.name)
		if err := os.Mkdir(p, 0o700); err != nil {
			return [2]uint64{}, err
		}
		if err := os.Chmod(p, os.FileMode(d.mode)); err != nil {
			return [2]uint64{}, err
		}
	}
	if err := os.Lchown(filepath.Join(dir, upper), int(st.Uid), int(st.Gid)); err != nil {
		return [2]uint64{}, err
	}
	at := filepath.Join(dir, merged)
	opts := "lowerdir=" + lower + ",upperdir=" + filepath.Join(dir, upper) + ",workdir=" + filepath.Join(dir, work) + ",userxattr"
	if err := unix.Mount("overlay", at, "overlay", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		return [2]uint64{}, err
	}
	if err := unix.Stat(at, &st); err != nil {
		return [2]uint64{}, err
	}
	return [2]uint64{uint64(st.Dev), uint64(st.Ino)}, nil
}

// close unmounts the overlays and the tmpfs (detached: a container the Engine has not removed yet keeps its copy
// until it goes) and removes the folder. It may be called more than once.
func (l *commandLayer) close() error {
	if l == nil || l.unmounted {
		return nil
	}
	l.unmounted = true
	var err error
	for _, m := range []string{l.mergedCache(), l.merged(), l.dir} {
		if e := unix.Unmount(m, unix.MNT_DETACH); e != nil && !errors.Is(e, unix.EINVAL) && !errors.Is(e, unix.ENOENT) {
			err = errors.Join(err, fmt.Errorf("unmount %s: %w", m, e))
		}
	}
	if err != nil {
		return err
	}
	return os.RemoveAll(l.dir)
}

// folder is the layer's folder, for the reaper ("" without a layer).
func (l *commandLayer) folder() string {
	if l == nil {
		return ""
	}
	return l.dir
}

// removeLayerDir unmounts a layer's mounts and removes its folder: the reaper's, for a server that is gone.
func removeLayerDir(dir string) error {
	if err := unmountLeftovers(dir); err != nil {
		return err
	}
	return os.RemoveAll(dir)
}

// unmountLeftovers unmounts what is mounted at dir and below it — the layers a dead server of the instance left in
// its ctlRoot, or one layer's folder — deepest first, before the folder is removed: a removal through a leftover
// overlay would only fill its tmpfs with whiteouts, but a mount point cannot be removed.
func unmountLeftovers(dir string) error {
	raw, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return err
	}
	var under []string
	for _, line := range strings.Split(string(raw), "\n") {
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		mp := unescapeMountPath(f[4])
		if mp == dir || strings.HasPrefix(mp, dir+"/") {
			under = append(under, mp)
		}
	}
	for i := len(under) - 1; i >= 0; i-- {
		if e := unix.Unmount(under[i], unix.MNT_DETACH); e != nil && !errors.Is(e, unix.EINVAL) && !errors.Is(e, unix.ENOENT) {
			err = errors.Join(err, fmt.Errorf("unmount %s: %w", under[i], e))
		}
	}
	return err
}

// unescapeMountPath undoes mountinfo's octal escapes (\040 for a space, and so on).
func unescapeMountPath(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
