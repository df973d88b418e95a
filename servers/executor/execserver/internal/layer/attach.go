package layer

// Where the keeper attaches a layer's mounts, in its own mount namespace (a copy of the holder's) before the
// command's PID 1 is forked: the overlay at the workspace, the shm folder at /dev/shm, each private folder's
// overlay at its path. Whatever was mounted below those paths in the holder's namespace is under the layer, out of
// the command's sight, unless it is kept (AttachOrder's keeps).

import (
	"slices"
	"strconv"
	"strings"
)

// Private is a private folder each command sees as an overlay of its own layer: Dir is its path, on the host and
// in the holder's namespace alike (bound there at its own path); Also is a second path it is bound at in the
// holder's namespace (temp, at /tmp), which the keeper binds the same overlay at, or "".
type Private struct {
	Dir  string `json:"dir"`
	Also string `json:"also,omitempty"`
}

// MaxPrivate are home, temp and cache.
const MaxPrivate = 3

// MaxMounts are the most mounts the keeper attaches for a layer, in the order Layer.Mounts gives them: the
// overlay over the workspace, the shm folder over /dev/shm, then one overlay per private folder (MountCount).
const MaxMounts = 2 + MaxPrivate

// MountCount is how many mounts a layer of private private folders has.
func MountCount(private int) int { return 2 + private }

// Attach is one mount of a layer the keeper attaches: the FD-th of Layer.Mounts at At, or (FD -1) a bind of what
// an earlier one attached at From, or (FD -2) a kept mount parked at From (KeepAt), moved back to At.
type Attach struct {
	At, From string
	FD       int
}

// AttachOrder is the order the keeper attaches the layer of workspace dir and private folders in: by path, so
// that a mount is attached before any below it (the holder's namespace has them nested when the private folders or
// the workspace lie under /tmp, as a test's do: temp's overlay at /tmp would otherwise cover the others). A folder
// bound at two paths has its overlay attached at the first and bound at the second. The mounts the layer would
// cover (keeps) are put back from where the keeper parked them (KeepAt), in the same order.
func AttachOrder(dir string, private []Private, keeps []string) []Attach {
	list := []Attach{{At: dir, FD: 0}, {At: "/dev/shm", FD: 1}}
	for i, l := range private {
		list = append(list, Attach{At: l.Dir, FD: 2 + i})
		if l.Also != "" {
			list = append(list, Attach{At: l.Also, FD: 2 + i})
		}
	}
	for i, k := range keeps {
		list = append(list, Attach{At: k, FD: -2, From: KeepAt(i)})
	}
	slices.SortStableFunc(list, func(a, b Attach) int { return strings.Compare(a.At, b.At) })
	first := map[int]string{}
	for i, a := range list {
		if a.FD < 0 {
			continue
		}
		if at, seen := first[a.FD]; seen {
			list[i].FD, list[i].From = -1, at
		} else {
			first[a.FD] = a.At
		}
	}
	return list
}

// AttachPoints are where the layer of workspace dir and private folders mounts things.
func AttachPoints(dir string, private []Private) []string {
	at := []string{dir, "/dev/shm"}
	for _, l := range private {
		at = append(at, l.Dir)
		if l.Also != "" {
			at = append(at, l.Also)
		}
	}
	return at
}

// KeepStash is the folder of the minimal root where the keeper parks the mounts its layer would cover, one entry
// each (KeepAt), made by the holder's mount plan; empty again once they are put back.
const KeepStash = "/.goalbox-layer-keep"

// KeepAt is where the i-th kept mount is parked.
func KeepAt(i int) string { return KeepStash + "/" + strconv.Itoa(i) }

// Dirs are the private folders' paths, in order.
func Dirs(private []Private) []string {
	dirs := make([]string, len(private))
	for i, l := range private {
		dirs[i] = l.Dir
	}
	return dirs
}
