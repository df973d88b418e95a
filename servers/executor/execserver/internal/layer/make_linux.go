package layer

// Making a layer, in the namespace holder, because only it has the capabilities in the sandbox's user namespace: a
// tmpfs and an overlay made with the new mount API, not attached anywhere (fsmount), so no other command's
// namespace, copied from the holder's, ever holds them. The holder sends the descriptors to the server (Open), which
// reads the upper layers from the tmpfs and hands the rest to the command's keeper to attach (AttachOrder).

import (
	"fmt"
	"strconv"

	"golang.org/x/sys/unix"
)

// Request asks the holder for one command's layer.
type Request struct {
	Workspace string   `json:"workspace"`
	Private   []string `json:"private,omitempty"` // the private folders, each an overlay of the same tmpfs
	Bytes     int64    `json:"bytes"`             // the tmpfs's size
	Inodes    int64    `json:"inodes"`            // the tmpfs's nr_inodes
}

// Reply is the holder's answer; with no error it comes with the layer's descriptors (Open).
type Reply struct {
	Error string `json:"error,omitempty"`
}

// Descriptors is how many descriptors the holder sends for a layer of private private folders: the tmpfs, the
// overlay of the workspace, the shm folder and one overlay per private folder.
func Descriptors(private int) int { return 3 + private }

// privateFolder is the tmpfs's folder of the i-th private folder's upper and work folders.
func privateFolder(i int) string { return "p" + strconv.Itoa(i) }

// Make makes one layer: the bounded tmpfs with upper/, work/ and shm/, the overlay of the workspace over it, a
// detached bind of shm/, and an overlay of each private folder over p<i>/upper and p<i>/work of the same tmpfs.
// Nothing of it is attached in the caller's namespace.
func Make(req Request) (fds []int, err error) {
	if req.Bytes <= 0 || req.Inodes <= 0 {
		return nil, fmt.Errorf("a layer needs a size and an inode count, got %d bytes and %d inodes", req.Bytes, req.Inodes)
	}
	if len(req.Private) > MaxPrivate {
		return nil, fmt.Errorf("a layer of %d private folders; at most %d", len(req.Private), MaxPrivate)
	}
	defer func() {
		if err != nil {
			for _, fd := range fds {
				unix.Close(fd)
			}
			fds = nil
		}
	}()
	var ws unix.Stat_t
	if err := unix.Stat(req.Workspace, &ws); err != nil {
		return nil, fmt.Errorf("the workspace: %w", err)
	}
	tmpfs, err := fsMount("tmpfs", map[string]string{"size": strconv.FormatInt(req.Bytes, 10),
		"nr_inodes": strconv.FormatInt(req.Inodes, 10), "mode": "0755"}, nil)
	if err != nil {
		return nil, err
	}
	fds = append(fds, tmpfs)
	// The upper folder's mode is the merged root's: the workspace's own.
	type folder struct {
		name string
		mode uint32
	}
	folders := []folder{{"upper", ws.Mode & 0o7777}, {"work", 0o700}, {"shm", 0o1777}}
	for i, dir := range req.Private {
		var st unix.Stat_t
		if err := unix.Stat(dir, &st); err != nil {
			return fds, fmt.Errorf("the private folder %s: %w", dir, err)
		}
		p := privateFolder(i)
		folders = append(folders, folder{p, 0o700}, folder{p + "/upper", st.Mode & 0o7777}, folder{p + "/work", 0o700})
	}
	for _, d := range folders {
		if err := unix.Mkdirat(tmpfs, d.name, 0o700); err != nil {
			return fds, fmt.Errorf("layer folder %s: %w", d.name, err)
		}
		if err := unix.Fchmodat(tmpfs, d.name, d.mode&^(unix.S_ISUID|unix.S_ISGID), 0); err != nil {
			return fds, fmt.Errorf("layer folder %s: %w", d.name, err)
		}
	}
	at := "/proc/self/fd/" + strconv.Itoa(tmpfs)
	overlay, err := overlayMount(req.Workspace, at+"/upper", at+"/work")
	if err != nil {
		return fds, err
	}
	fds = append(fds, overlay)
	shm, err := unix.OpenTree(tmpfs, "shm", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC)
	if err != nil {
		return fds, fmt.Errorf("layer shm: %w", err)
	}
	fds = append(fds, shm)
	for i, dir := range req.Private {
		p := at + "/" + privateFolder(i)
		o, err := overlayMount(dir, p+"/upper", p+"/work")
		if err != nil {
			return fds, fmt.Errorf("the private folder %s: %w", dir, err)
		}
		fds = append(fds, o)
	}
	return fds, nil
}

// overlayMount makes a detached overlay of lower with its upper and work folders.
func overlayMount(lower, upper, work string) (int, error) {
	// userxattr: the overlay's own marks (opaque folders) are user.overlay.* attributes, as a user namespace needs.
	// It also keeps redirects and metacopy off (the kernel refuses them beside it): a renamed folder is copied
	// whole and every file's data is in the upper layer, so the upper layer alone says what changed (wsguard reads
	// nothing else, and refuses an entry that carries either mark).
	return fsMount("overlay", map[string]string{"lowerdir": lower, "upperdir": upper, "workdir": work}, []string{"userxattr"})
}

// fsLog is what the kernel said about a failed fsconfig, read from the context's descriptor.
func fsLog(fsfd int) string {
	var msg string
	buf := make([]byte, 512)
	for {
		n, err := unix.Read(fsfd, buf)
		if err != nil || n <= 0 {
			return msg
		}
		msg += " (" + string(buf[:n]) + ")"
	}
}

// fsMount makes a detached mount of fstype with these options and flags (nosuid, nodev).
func fsMount(fstype string, opts map[string]string, flags []string) (int, error) {
	fsfd, err := unix.Fsopen(fstype, unix.FSOPEN_CLOEXEC)
	if err != nil {
		return -1, fmt.Errorf("%s layer: %w", fstype, err)
	}
	defer unix.Close(fsfd)
	for k, v := range opts {
		if err := unix.FsconfigSetString(fsfd, k, v); err != nil {
			return -1, fmt.Errorf("%s layer: option %s=%s: %w", fstype, k, v, err)
		}
	}
	for _, f := range flags {
		if err := unix.FsconfigSetFlag(fsfd, f); err != nil {
			return -1, fmt.Errorf("%s layer: option %s: %w", fstype, f, err)
		}
	}
	if err := unix.FsconfigCreate(fsfd); err != nil {
		return -1, fmt.Errorf("%s layer: create: %w%s", fstype, err, fsLog(fsfd))
	}
	fd, err := unix.Fsmount(fsfd, unix.FSMOUNT_CLOEXEC, unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV)
	if err != nil {
		return -1, fmt.Errorf("%s layer: mount: %w", fstype, err)
	}
	return fd, nil
}
