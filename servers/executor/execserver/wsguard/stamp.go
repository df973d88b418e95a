package wsguard

import (
	"io/fs"
	"time"
)

// stamp is what stat says of a file that any change of its content changes: its identity, size, mode, and its
// modification and status-change times. The status-change time (ctime) is set by the kernel on every write,
// truncate, rename or attribute change, to the time of that change, and no process can set it back, so two equal
// stamps taken at different times mean the same file with the same bytes — provided no change can have landed in
// the same clock tick as the first stamp's times (the kernel's file times are coarse, a few milliseconds), which
// settled checks.
type stamp struct {
	dev, ino, size, mtime, ctime int64
	mode                         fs.FileMode
}

// settleTime is how far in the past a stamp's times must be, when it is taken, for a later change to be sure to
// give the file other times: far above the kernel's tick, and above a small step back of the clock.
var settleTime = time.Second

// settled reports whether the stamp was taken after settleTime had passed since the file's last change, at or after
// the apply that began at start: see stamp.
func (s stamp) settled(start time.Time) bool {
	limit := start.Add(-settleTime).UnixNano()
	return s.ctime != 0 && s.ctime < limit && s.mtime < limit
}
