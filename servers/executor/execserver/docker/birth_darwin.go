package docker

import (
	"strconv"

	"golang.org/x/sys/unix"
)

// birthTime is the folder's creation time in nanoseconds, or "" when it cannot be read.
func birthTime(path string) string {
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		return ""
	}
	return strconv.FormatInt(st.Btim.Nano(), 10)
}
