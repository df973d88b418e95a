package execserver

import (
	"os"
	"time"
)

// dirStamp on Windows has no inode or change time to offer: the modification time stands in, and the cache is
// keyed by it alone (the executor's commands run in Docker there, never on the host).
func dirStamp(p string) (ino uint64, ctime time.Time, ok bool) {
	fi, err := os.Lstat(p)
	if err != nil || !fi.IsDir() {
		return 0, time.Time{}, false
	}
	return 0, fi.ModTime(), true
}
