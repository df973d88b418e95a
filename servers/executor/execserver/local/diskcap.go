package local

// The disk cap of the local backend: while a command runs, the server measures the workspace and the command's
// private home and temp folders every diskCheckEvery, and kills the command when together they pass the cap
// (package diskcap, which the docker backend shares). RLIMIT_FSIZE still bounds each file between two checks.
// Build caches are not counted: they are shared, kept, and pruned by their own tools.

import (
	"fmt"

	"github.com/goalbox/goalbox/servers/executor/execserver/internal/diskcap"
)

// DefaultMaxWorkspaceBytes is the default disk cap: 16 GiB for the workspace, home and temp together.
const DefaultMaxWorkspaceBytes = diskcap.DefaultMax

// diskCheckEvery is how often a running command's disk use is measured.
const diskCheckEvery = diskcap.CheckEvery

type diskMeter = diskcap.Meter

var (
	diskUsage    = diskcap.Usage
	newDiskMeter = diskcap.NewMeter
	watchDisk    = diskcap.Watch
)

// diskCapNote is what a command killed by the disk cap finds at the end of its stderr.
func diskCapNote(used, limit int64) string {
	return fmt.Sprintf("\n[goalbox: the command was killed: the workspace, home and temp folders use %d bytes, past the disk cap of %d bytes (-max-workspace-bytes)]\n", used, limit)
}
