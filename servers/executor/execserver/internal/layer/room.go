// Package layer is each command's writable layer of the workspace guard (package wsguard): how it is built, how
// large it may be, and how it is applied back. A command never writes the workspace: it writes an overlay whose
// upper layer lies in a tmpfs of its own, bounded in bytes and inodes when it is made, and the server applies that
// upper layer through wsguard while the command runs and when it ends.
//
// Both backends size their layers here (Room). The local backend's layers are made in its namespace holder, as
// detached mounts (Make) that the server holds by descriptor (Layer) and the keeper attaches (AttachOrder); its
// private home, temp and cache folders are overlays of the same tmpfs, applied back by PrivateGuards. The docker
// backend mounts its layers on the host itself (its layer_linux.go) and shares the sizing only. Where no layer can
// be made, the holder makes the protected paths read-only binds instead (Protect).
package layer

import (
	"fmt"

	"github.com/goalbox/goalbox/servers/executor/execserver/internal/diskcap"
)

// BytesFloor and InodesFloor are the least a layer is made with: below them a command is refused as over the cap
// rather than started to fail on its first write.
const (
	BytesFloor  = 1 << 20
	InodesFloor = 64
)

// Room is the size of a layer made now: what the caps (maxBytes and maxInodes; 0 or less for none, then the
// defaults) leave of the folders dirs hold, measured (a walk), at least the floor. At the floor it comes with the
// note the command finds at the end of its stderr: it can delete files (and clean a cache) but add almost nothing.
// Refusing it instead would lock out the cleanup of a full cache, which no tool reaches. what names the folders in
// that note.
func Room(dirs []string, maxBytes, maxInodes int64, what string) (bytes, inodes int64, note string) {
	used, usedInodes := diskcap.UsageInodes(dirs...)
	bytes, inodes = int64(diskcap.DefaultMax), int64(diskcap.DefaultMaxInodes)
	if maxBytes > 0 {
		bytes = maxBytes - used
	}
	if maxInodes > 0 {
		inodes = maxInodes - usedInodes
	}
	if bytes >= BytesFloor && inodes >= InodesFloor {
		return bytes, inodes, ""
	}
	note = fmt.Sprintf("\n[goalbox: %s were at the executor's cap when this command started "+
		"(%d of %d bytes, %d of %d files and folders): it could delete files but write at most %d bytes and %d files (ENOSPC past them); "+
		"delete files to make room (the filesystem server's delete tool works too)]\n",
		what, used, maxBytes, usedInodes, maxInodes, BytesFloor, InodesFloor)
	return BytesFloor, InodesFloor, note
}
