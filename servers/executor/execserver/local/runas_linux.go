package local

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/goalbox/goalbox/servers/executor/execserver/backend"
)

// chooseRunAs decides who commands run as on the host: never uid or gid 0. A server that is not root can only run
// them as itself. A root server uses cfg.RunAs, else the workspace's owner, else (root owns the workspace)
// DefaultRunAsUID; handOver is true when the workspace must be given to that user so that its commands can write.
func chooseRunAs(cfg Config) (uid, gid int, handOver bool, err error) {
	euid, egid := os.Geteuid(), os.Getegid()
	if euid != 0 {
		if cfg.RunAs != "" {
			u, g, err := backend.ParseRunAs(cfg.RunAs)
			if err != nil {
				return 0, 0, false, fmt.Errorf("local backend: -run-as: %w", err)
			}
			if u != euid || g != egid {
				return 0, 0, false, fmt.Errorf("local backend: -run-as %s needs a root server; this one runs as %d:%d and runs commands as itself", cfg.RunAs, euid, egid)
			}
		}
		if egid == 0 {
			return 0, 0, false, errors.New("local backend: the server's group is root (gid 0) and commands would run with it; start the server with an unprivileged group")
		}
		return euid, egid, false, nil
	}
	fi, err := os.Stat(cfg.Workspace)
	if err != nil {
		return 0, 0, false, fmt.Errorf("local backend: workspace: %w", err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0, false, errors.New("local backend: cannot find the workspace's owner")
	}
	if cfg.RunAs != "" {
		uid, gid, err = backend.ParseRunAs(cfg.RunAs)
		if err != nil {
			return 0, 0, false, fmt.Errorf("local backend: -run-as: %w", err)
		}
		return uid, gid, st.Uid == 0, nil
	}
	if st.Uid != 0 {
		gid = int(st.Gid)
		if gid == 0 {
			gid = int(st.Uid)
		}
		return int(st.Uid), gid, false, nil
	}
	return DefaultRunAsUID, DefaultRunAsUID, true, nil
}

// refuseHandOver says why a root-owned workspace must not be given to the run-as user, or returns nil: the
// filesystem's root and its top-level folders are the system's (sudo executor -workspace /tmp would hand over
// every root-owned file of every program's temporary folder), and so is a folder every user may write in (sticky or
// world-writable: /var/tmp, /dev/shm). The hand-over changes what it finds; these hold what is not the workspace's.
func refuseHandOver(workspace string) error {
	abs, err := filepath.Abs(workspace)
	if err != nil {
		return err
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return err
	}
	why := ""
	switch {
	case filepath.Dir(abs) == abs || filepath.Dir(abs) == "/":
		why = "the filesystem's root or one of its top-level folders"
	case fi.Mode()&os.ModeSticky != 0 || fi.Mode().Perm()&0o002 != 0:
		why = "a folder every user may write in (" + fi.Mode().String() + ")"
	}
	if why == "" {
		return nil
	}
	return fmt.Errorf("the workspace %s belongs to root and is %s: a root server runs commands as another user and "+
		"would have to give it, and every root-owned file in it, to that user; use a folder of the workspace's own "+
		"(mkdir /srv/goalbox-ws), owned by the user commands should run as, or by root for the server to hand over", abs, why)
}

// handOverTree gives dir and everything in it that root owns to uid:gid, so that commands running as that user
// can use it. Only entries owned by root change: files of other users keep their owner.
func handOverTree(dir string, uid, gid int) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Uid == 0 {
			return os.Lchown(p, uid, gid)
		}
		return nil
	})
}

// ownTree gives dir and everything in it to uid:gid unless dir is theirs already: the private home, temp and cache
// folders, which only commands write.
func ownTree(dir string, uid, gid int) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) == uid && int(st.Gid) == gid {
		return nil
	}
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, gid)
	})
}
