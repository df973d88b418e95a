//go:build !linux

package diskcap

// unlockedUsage and OpenDeleted need Linux's /proc and O_PATH; elsewhere (the docker backend's server on macOS and
// Windows) an unreadable folder is not counted.
func unlockedUsage(string) int64 { return 0 }

// OpenDeleted counts nothing off Linux.
func OpenDeleted([]int, func(int) []int) int64 { return 0 }
