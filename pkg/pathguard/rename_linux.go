//go:build linux

package pathguard

import "syscall"

// renameAcross renames name in the folder a to newname in the folder b with renameat(2), both named by their
// handles, so that no path from the workspace is resolved again between the check of both folders and the rename.
func renameAcross(a root, name string, b root, newname string) error {
	fa, err := a.Open(".")
	if err != nil {
		return err
	}
	defer fa.Close()
	fb, err := b.Open(".")
	if err != nil {
		return err
	}
	defer fb.Close()
	return syscall.Renameat(int(fa.Fd()), name, int(fb.Fd()), newname)
}

// canRenameAcross is whether renameAcross works on this platform.
const canRenameAcross = true
