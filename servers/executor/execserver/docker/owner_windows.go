package docker

import "io/fs"

// fileOwner: Windows files have no numeric uid and gid.
func fileOwner(fs.FileInfo) (uid, gid int, ok bool) { return 0, 0, false }

// defaultUserWithoutOwner is the command user on Windows, whose files have no numeric owner: Docker Desktop shares
// a Windows folder with every container user read-write, so any unprivileged uid works; 1000 is the first
// ordinary user of Debian-based images.
const defaultUserWithoutOwner = "1000:1000"

// mkfifo: Windows has no FIFOs, so a command cannot be asked to end with SIGTERM there; a stop kills it (the
// container, SIGKILL) after its grace.
func mkfifo(string, uint32) error { return errNoFIFO }
