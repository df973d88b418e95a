package diskcap

// What a walk of the folders cannot see: a folder its owner made unreadable, and a file deleted while a process
// still holds it open (its blocks stay allocated until the last descriptor closes). Both were ways to keep bytes
// past the cap: `mkdir locked && exec 3>locked/big && chmod 000 locked` and `open; unlink; write` in a long-lived
// process.

import (
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// unlockedUsage counts the folder p, which could not be read, when it belongs to the server's user: its mode gets
// the owner's read and search bits for the count and is put back after. It goes through a descriptor opened without
// following a symlink, so a link swapped in is never changed.
func unlockedUsage(p string) int64 {
	fd, err := unix.Open(p, unix.O_PATH|unix.O_NOFOLLOW|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || int(st.Uid) != os.Geteuid() {
		return 0
	}
	self := "/proc/self/fd/" + strconv.Itoa(fd)
	mode := st.Mode & 0o7777
	if err := unix.Chmod(self, mode|0o500); err != nil {
		return 0
	}
	defer func() { _ = unix.Chmod(self, mode) }()
	return Usage(self + "/") // the slash: walk the folder the descriptor names, not the link
}

// OpenDeleted is the space held by regular files that the processes below the given roots (and the roots) keep
// open after deleting them: found through /proc/<pid>/fd, counted once per inode.
func OpenDeleted(roots []int, children func(int) []int) int64 {
	var total int64
	seen := map[[2]uint64]bool{}
	pending := append([]int(nil), roots...)
	for n := 0; len(pending) > 0 && n < 100_000; n++ {
		pid := pending[len(pending)-1]
		pending = append(pending[:len(pending)-1], children(pid)...)
		dir := "/proc/" + strconv.Itoa(pid) + "/fd"
		ents, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, e := range ents {
			var st unix.Stat_t
			if unix.Stat(filepath.Join(dir, e.Name()), &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || st.Nlink != 0 {
				continue
			}
			key := [2]uint64{uint64(st.Dev), st.Ino}
			if !seen[key] {
				seen[key] = true
				total += st.Blocks * 512
			}
		}
	}
	return total
}
