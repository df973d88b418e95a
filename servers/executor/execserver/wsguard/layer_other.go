//go:build !linux

package wsguard

import (
	"io/fs"
	"os"
)

// Where there are no overlays, no layer has whiteouts, opaque folders or other marks.
func isWhiteout(fs.FileInfo) bool           { return false }
func isOpaque(*os.File) bool                { return false }
func otherLayerMarks(*os.File, string) bool { return false }
