package docker

import (
	"strconv"

	"golang.org/x/sys/unix"
)

// birthTime is the folder's creation time in nanoseconds (statx), or "" where the filesystem keeps none.
func birthTime(path string) string {
	var stx unix.Statx_t
	if err := unix.Statx(unix.AT_FDCWD, path, unix.AT_SYMLINK_NOFOLLOW, unix.STATX_BTIME, &stx); err != nil || stx.Mask&unix.STATX_BTIME == 0 {
		return ""
	}
	return strconv.FormatInt(stx.Btime.Sec*1_000_000_000+int64(stx.Btime.Nsec), 10)
}
