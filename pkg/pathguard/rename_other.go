//go:build !linux

package pathguard

import "errors"

// renameAcross is renameat(2) between two folder handles, which Go's standard library offers only on Linux; see
// rename_linux.go. Elsewhere a move between two folders names its paths from the workspace (a documented limit).
func renameAcross(a root, name string, b root, newname string) error {
	return errors.New("renameat between folder handles is not available on this platform")
}

const canRenameAcross = false
