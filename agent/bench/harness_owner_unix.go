//go:build unix

package bench

import (
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// shareHarnessDir gives .goalbox/ and what is in it to the exercise folder's owner. A root executor hands the
// workspace to the user its commands run as when the sandbox opens; the harness is written later, by this process,
// and the test process must be able to remove the nonce and write the epilogue there. Nothing changes when this
// process is not root (it could not, and its files are then the commands' user's already).
func shareHarnessDir(ws Workspace) error {
	if os.Geteuid() != 0 {
		return nil
	}
	info, err := os.Lstat(ws.Dir())
	if err != nil {
		return err
	}
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok || st.Uid == 0 {
		return nil
	}
	return filepath.WalkDir(filepath.Join(ws.Dir(), harnessDir), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, int(st.Uid), int(st.Gid))
	})
}
