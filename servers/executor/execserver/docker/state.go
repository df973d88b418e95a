package docker

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/moby/moby/client"
)

// The backend's state on the host, per instance: StateBase/<instance>/ holds the lock (one executor per instance at
// a time) and ctl/, the control folders of its containers (container.go). The caches live in
// CacheBase/<instance>/cache-<workspace identity>. All of it is reached and made as safedir_unix.go describes.

// rootStateBase is where a root server keeps its state and caches: a folder of its own, never $HOME, which sudo -E
// (and macOS's sudo) leave pointing at the invoking user's home. (On Windows os.Geteuid is -1: never root.)
const rootStateBase = "/var/cache/goalbox/docker"

// defaultStateBase is the folder holding every instance's state (and, by default, caches) for this server's user.
func defaultStateBase() (string, error) {
	if os.Geteuid() == 0 {
		return rootStateBase, nil
	}
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no cache folder for the server's user (%v); set one with -cache-dir", err)
	}
	return filepath.Join(dir, "goalbox", "docker"), nil
}

// instanceLock is held for as long as a backend serves: a second backend of the same instance (the same workspace
// by default) is refused instead of sweeping away the first one's containers and control folders.
type instanceLock struct{ f *os.File }

// release gives the lock up (closing the file releases a Unix flock; on Windows, the unshared open).
func (l *instanceLock) release() error {
	if l == nil || l.f == nil {
		return nil
	}
	return l.f.Close()
}

// prepareState opens (making it) the instance's state folder, takes the instance's lock, removes the control
// folders a dead executor of the instance left, and prepares the cache.
func (b *dockerBackend) prepareState() error {
	base := b.cfg.stateBase
	if base == "" {
		var err error
		if base, err = defaultStateBase(); err != nil {
			return fmt.Errorf("docker backend: %w", err)
		}
	}
	dir := filepath.Join(base, b.cfg.Instance)
	f, err := openSafeDir(dir)
	if err != nil {
		return fmt.Errorf("docker backend: state folder: %w", err)
	}
	defer f.Close()
	b.stateDir = dir
	if b.lock, err = lockInstance(f, b.cfg.Instance); err != nil {
		return fmt.Errorf("docker backend: %w", err)
	}
	// Every folder on the way is root's or ours and nobody else's: plain paths below it resolve to what was checked.
	b.ctlRoot = filepath.Join(dir, "ctl")
	if err := unmountLeftovers(b.ctlRoot); err != nil {
		return fmt.Errorf("docker backend: unmount a dead executor's layers: %w", err)
	}
	if err := os.RemoveAll(b.ctlRoot); err != nil {
		return fmt.Errorf("docker backend: remove a dead executor's control folders: %w", err)
	}
	if err := os.Mkdir(b.ctlRoot, 0o700); err != nil {
		return fmt.Errorf("docker backend: control folder: %w", err)
	}
	if b.cfg.CacheHostDir == "-" {
		return nil
	}
	return b.prepareCache(filepath.Join(cmp.Or(b.cfg.CacheHostDir, base), b.cfg.Instance))
}

// prepareCache makes this workspace's cache in dir, given to the command user, and removes the caches of earlier
// workspaces of the instance (the same path, another identity or user).
func (b *dockerBackend) prepareCache(dir string) error {
	f, err := openSafeDir(dir)
	if err != nil {
		return fmt.Errorf("docker backend: cache folder: %w", err)
	}
	defer f.Close()
	fi, err := os.Stat(b.cfg.WorkspaceHostDir)
	if err != nil {
		return fmt.Errorf("docker backend: workspace: %w", err)
	}
	key, err := workspaceIdentity(b.cfg.WorkspaceHostDir, fi, b.uid, b.gid)
	if err != nil {
		return fmt.Errorf("docker backend: cache folder: %w", err)
	}
	names, _ := f.Readdirnames(-1)
	stale := slices.DeleteFunc(names, func(n string) bool { return !strings.HasPrefix(n, "cache-") || n == key })
	if len(stale) > 0 {
		// os.Root: nothing a command left in an old cache (symlinks out of it) is followed while it is removed.
		root, err := os.OpenRoot(dir)
		if err != nil {
			return fmt.Errorf("docker backend: cache folder: %w", err)
		}
		for _, n := range stale {
			if err := root.RemoveAll(n); err != nil {
				b.log.Warn("docker backend: could not remove the cache of an earlier workspace", "cache", n, "err", err)
			} else {
				b.log.Info("docker backend: removed the cache of an earlier workspace at this path (another folder or user)", "cache", n)
			}
		}
		root.Close()
	}
	if err := makeOwnedDir(f, key, b.uid, b.gid); err != nil {
		return fmt.Errorf("docker backend: cache folder: %w", err)
	}
	b.cacheDir = filepath.Join(dir, key)
	return nil
}

// slotWait is how long a command waits for the total caps to let its container start.
var slotWait = 30 * time.Second

// setSlots sizes the total cap: as many containers as fit, by their limits, in TotalMemory and TotalPIDs.
func (b *dockerBackend) setSlots(ctx context.Context) error {
	if b.cfg.TotalMemory == 0 {
		info, err := b.cli.Info(ctx, client.InfoOptions{})
		if err != nil {
			return fmt.Errorf("docker backend: engine info: %w", err)
		}
		b.cfg.TotalMemory = info.Info.MemTotal
	}
	n := int64(-1)
	if b.cfg.TotalMemory > 0 {
		n = b.cfg.TotalMemory / b.cfg.Memory
	}
	if b.cfg.TotalPIDs > 0 {
		if m := b.cfg.TotalPIDs / b.cfg.PIDs; n < 0 || m < n {
			n = m
		}
	}
	if n < 0 {
		return nil
	}
	if n < 1 {
		return fmt.Errorf("docker backend: not even one container fits the total caps (memory %d MiB, pids %d) with "+
			"its limits (memory %d MiB, pids %d): raise -total-memory-limit-mb / -total-pids-limit or lower the "+
			"per-command limits", b.cfg.TotalMemory>>20, b.cfg.TotalPIDs, b.cfg.Memory>>20, b.cfg.PIDs)
	}
	b.slots = make(chan struct{}, n)
	return nil
}

// errNoSlot is why a command could not start: the total caps were full for slotWait.
func (b *dockerBackend) errNoSlot() error {
	return fmt.Errorf("docker backend: all %d containers this executor may run at once are busy (their limits of "+
		"%d MiB and %d pids each add up to the total caps of %d MiB and %d pids); waited %s: let a command or "+
		"process end (sandbox_stop_process), or raise -total-memory-limit-mb / -total-pids-limit",
		cap(b.slots), b.cfg.Memory>>20, b.cfg.PIDs, b.cfg.TotalMemory>>20, b.cfg.TotalPIDs, slotWait)
}

// takeSlot waits for room under the total caps, until ctx is done (a done ctx: only if there is room now). queued,
// when not nil, is told whether the command waits (backend.Request.Queued), and told false once it has room.
func (b *dockerBackend) takeSlot(ctx context.Context, queued func(bool)) error {
	tell := func(waiting bool) {
		if queued != nil {
			queued(waiting)
		}
	}
	if b.slots == nil {
		tell(false)
		return nil
	}
	select {
	case b.slots <- struct{}{}:
		tell(false)
		return nil
	default:
	}
	tell(true)
	select {
	case b.slots <- struct{}{}:
		tell(false)
		return nil
	case <-ctx.Done():
		return errSlotsFull
	}
}

// HoldsBack says whether a command may wait for room under the total caps (backend.HoldsBack).
func (b *dockerBackend) HoldsBack() bool { return b.slots != nil }

var errSlotsFull = errors.New("total caps full")

func (b *dockerBackend) giveSlot() {
	if b.slots != nil {
		<-b.slots
	}
}
