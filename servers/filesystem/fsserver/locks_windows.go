//go:build windows

package fsserver

import "io/fs"

// folderID has no key to give on Windows: a FileInfo keeps its volume and file index private (os.SameFile compares
// them but exposes neither), so nameKey names the folder by its path.
func folderID(fi fs.FileInfo) (string, bool) { return "", false }
