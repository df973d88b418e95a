package pathguard

import (
	"os"
	"strconv"
)

// currentPath is where the open folder f is now, as an absolute host path: the kernel's path of its descriptor
// (/proc/self/fd/N), which follows every rename of the folder or of a folder above it, and ends in " (deleted)" once
// it is removed.
func currentPath(f *os.File) (string, bool) {
	p, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(int(f.Fd())))
	return p, err == nil
}
