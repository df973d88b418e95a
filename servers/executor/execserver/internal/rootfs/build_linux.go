package rootfs

// Building the root, in the holder: as the run-as user it opens every bind's source (Open), then, root of its user
// namespace, it carries the plan out in its own mount namespace (Build) and pivots into the result.

import (
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// Open opens the sources of ops' binds before anything is mounted (a tmpfs over one of their folders would hide
// it); a source it cannot open is a warning, and its bind is left out.
func Open(ops []Op) (sources map[string]*os.File, warnings []string) {
	sources = map[string]*os.File{}
	for _, op := range ops {
		// Only a bind opens its Source; a symlink's Source is the link's text.
		if op.Kind != "bind" || sources[op.Source] != nil {
			continue
		}
		f, err := os.OpenFile(op.Source, unix.O_PATH|unix.O_CLOEXEC, 0)
		if err != nil {
			warnings = append(warnings, fmt.Sprintf("%s is not reachable for commands: %v", op.Source, err))
			continue
		}
		sources[op.Source] = f
	}
	return sources, warnings
}

// Build carries ops out with the sources Open opened. A tmpfs or a link it cannot make is a warning (the command
// lacks a convenience); any other step that fails stops it.
func Build(ops []Op, sources map[string]*os.File) (warnings []string, err error) {
	staging := ""
	for _, op := range ops {
		if op.Kind == "bind" && sources[op.Source] == nil {
			continue
		}
		err := op.apply(sources[op.Source], staging)
		switch op.Kind {
		case "root":
			staging = op.Target
		case "pivot":
			staging = ""
		}
		if err != nil {
			if op.Kind == "tmpfs" || op.Kind == "symlink" {
				warnings = append(warnings, err.Error())
				continue
			}
			return warnings, err
		}
	}
	return warnings, nil
}

func (op Op) apply(src *os.File, staging string) error {
	target := op.Target
	if staging != "" {
		target = filepath.Join(staging, op.Target)
	}
	switch op.Kind {
	case "private":
		if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
			return fmt.Errorf("make mounts private: %w", err)
		}
	case "root":
		if err := unix.Mount("tmpfs", op.Target, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "size=1m,mode=755"); err != nil {
			return fmt.Errorf("could not make the new root at %s: %w", op.Target, err)
		}
	case "tmpfs":
		if err := os.MkdirAll(target, 0o755); err != nil {
			return err
		}
		if err := unix.Mount("tmpfs", target, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, op.Opts); err != nil {
			return fmt.Errorf("could not put a tmpfs over %s: %w", op.Target, err)
		}
	case "devpts":
		if err := os.MkdirAll(target, 0o755); err != nil {
			return err
		}
		if err := unix.Mount("devpts", target, "devpts", unix.MS_NOSUID|unix.MS_NOEXEC, "newinstance,ptmxmode=0666,mode=0620"); err != nil {
			return fmt.Errorf("could not mount a devpts of its own at %s: %w", op.Target, err)
		}
	case "dir":
		return os.MkdirAll(target, 0o755)
	case "file":
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return err
		}
		return os.WriteFile(target, nil, 0o444)
	case "symlink":
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return err
		}
		return os.Symlink(op.Source, target)
	case "bind":
		return bindInto(src, target, op.Write, op.Device)
	case "pivot":
		return pivotInto(op.Target)
	default:
		return fmt.Errorf("unknown mount step %q", op.Kind)
	}
	return nil
}

// bindInto binds the tree src is open on at target (its mountpoint made first), read-only unless write, nosuid,
// nodev unless device. The new mount API sets the flags on the clone before it is attached, so no moment exists
// where the bind is writable, and the flags the host set (locked in a user namespace) are kept, not restated.
func bindInto(src *os.File, target string, write, device bool) error {
	fi, err := src.Stat()
	if err != nil {
		return err
	}
	if fi.IsDir() {
		if err := os.MkdirAll(target, 0o755); err != nil {
			return fmt.Errorf("bind %s: %w", target, err)
		}
	} else {
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return fmt.Errorf("bind %s: %w", target, err)
		}
		if f, err := os.OpenFile(target, os.O_CREATE|os.O_RDONLY, 0o644); err == nil {
			f.Close()
		}
	}
	tree, err := unix.OpenTree(int(src.Fd()), "", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_EMPTY_PATH|unix.AT_RECURSIVE)
	if err != nil {
		return fmt.Errorf("bind %s: clone: %w", target, err)
	}
	defer unix.Close(tree)
	attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_NOSUID}
	if !device {
		attr.Attr_set |= unix.MOUNT_ATTR_NODEV
	}
	if !write {
		attr.Attr_set |= unix.MOUNT_ATTR_RDONLY
	}
	if err := unix.MountSetattr(tree, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, &attr); err != nil {
		return fmt.Errorf("bind %s: set flags: %w", target, err)
	}
	if err := unix.MoveMount(tree, "", unix.AT_FDCWD, target, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		return fmt.Errorf("bind %s: attach: %w", target, err)
	}
	return nil
}

// pivotInto makes the staging folder the root of the holder's mount namespace (every command joins it), detaches
// the host's tree below it, and makes the root's own tmpfs read-only, so commands cannot add names to / either.
func pivotInto(staging string) error {
	if err := unix.Chdir(staging); err != nil {
		return fmt.Errorf("pivot: %w", err)
	}
	if err := unix.PivotRoot(".", "."); err != nil {
		return fmt.Errorf("pivot_root: %w", err)
	}
	if err := unix.Unmount(".", unix.MNT_DETACH); err != nil {
		return fmt.Errorf("detach the host's root: %w", err)
	}
	if err := unix.Chdir("/"); err != nil {
		return err
	}
	attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}
	if err := unix.MountSetattr(unix.AT_FDCWD, "/", 0, &attr); err != nil {
		return fmt.Errorf("make the new root read-only: %w", err)
	}
	return nil
}
