//go:build unix && !linux && !darwin

package docker

// birthTime: no portable creation time on the other BSDs here; device, inode and user key the cache.
func birthTime(path string) string { return "" }
