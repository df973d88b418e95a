package local

// The disk cap of the local backend: while a command runs, the server measures the workspace and the private home,
// temp and build cache folders, plus the files the backend's running commands deleted but hold open, every
// diskCheckEvery, and kills the command when together they pass the cap (package diskcap, which the docker backend
// shares). RLIMIT_FSIZE still bounds each file between two checks. A cache shared between workspaces on purpose
// (SharedCacheDir) is not counted.

import (
	"fmt"

	"github.com/goalbox/goalbox/servers/executor/execserver/internal/diskcap"
)

// DefaultMaxWorkspaceBytes is the default disk cap: 16 GiB for the workspace, home and temp together.
const DefaultMaxWorkspaceBytes = diskcap.DefaultMax

// DefaultMaxWorkspaceInodes is the default inode cap: files, folders and links of the workspace and the private
// home, temp and cache folders together.
const DefaultMaxWorkspaceInodes = diskcap.DefaultMaxInodes

// diskCheckEvery is how often a running command's disk use is measured.
const diskCheckEvery = diskcap.CheckEvery

type diskMeter = diskcap.Meter

var (
	diskUsage    = diskcap.Usage
	newDiskMeter = diskcap.NewMeter
)

// diskCapNote is what a command killed by the disk cap finds at the end of its stderr.
func diskCapNote(used, limit int64) string {
	return fmt.Sprintf("\n[goalbox: the command was killed: the workspace, home, temp and cache folders and deleted files still open use %d bytes, past the disk cap of %d bytes (-max-workspace-bytes)]\n", used, limit)
}
