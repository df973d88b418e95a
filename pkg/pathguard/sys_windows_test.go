//go:build windows

package pathguard

import (
	"errors"
	"io/fs"
)

// Windows has no FIFOs or device nodes in a folder, and no link count in a FileInfo: the helpers say so, and the
// tests that need them skip or fail on it. The suite is run on Linux; on Windows it is compiled by go vet.

func mkfifoAt(p string, mode uint32) error { return errors.ErrUnsupported }

func mknodNull(p string) error { return errors.ErrUnsupported }

func linkCount(fi fs.FileInfo) uint64 { return 0 }
