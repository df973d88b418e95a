package local

// Each command's own layer (the workspace guard, package wsguard): in the namespace mode a command never writes the
// workspace. It sees the workspace as an overlay whose lower layer is the workspace and whose upper layer lies in a
// tmpfs of its own, bounded in bytes and in inodes when it is made; its /dev/shm is a folder of that same tmpfs. When
// the command ends (and every wsguard.ApplyEvery while it runs) the server applies the upper layer to the workspace
// through pathguard, never the command; when it ends, the tmpfs goes with it.
//
// The holder makes the layer, because only it has the capabilities in the sandbox's user namespace: a tmpfs and an
// overlay made with the new mount API, not attached anywhere (fsmount), so no other command's namespace, copied
// from the holder's, ever holds them. It sends the server three descriptors over a socket of their own
// (SCM_RIGHTS): the tmpfs (the server reads the upper layer from it), the overlay and the tmpfs's shm folder. The
// keeper attaches the last two at the workspace and at /dev/shm in its own mount namespace, a copy of the holder's
// (nsfork_linux.go, step stepAttach), before PID 1 is forked. Whatever was mounted below the workspace in the
// holder's namespace is under the overlay, out of the command's sight.

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// holderLayerEnv tells the holder the descriptor of its layer socket.
const holderLayerEnv = "GOALBOX_HOLDER_LAYER"

// layerRequest asks the holder for one command's layer.
type layerRequest struct {
	Workspace string `json:"workspace"`
	Bytes     int64  `json:"bytes"`  // the tmpfs's size
	Inodes    int64  `json:"inodes"` // the tmpfs's nr_inodes
}

// layerReply is the holder's answer; with no error it carries the three descriptors.
type layerReply struct {
	Error string `json:"error,omitempty"`
}

// layerMounts are how many mounts the keeper attaches a layer's mounts, in the order the holder sends them after the tmpfs:
// the overlay over the workspace, the shm folder over /dev/shm. The workspace's path is the policy's Dir.
const layerMounts = 2

// commandLayer is the server's handle on one command's layer.
type commandLayer struct {
	tmpfs   *os.File // the tmpfs: upper/, work/ and shm/
	overlay *os.File // a detached mount, attached by the keeper at the workspace
	shm     *os.File // a detached mount of tmpfs's shm/, attached by the keeper at /dev/shm
	// baseInodes is what the tmpfs held when it came: its folders and the overlay's own in work/.
	baseInodes uint64
	// overCap, when not empty, is the note for a command whose layer was made at a cap (overCapNote).
	overCap string
}

// upper is the path of the upper layer, for the server: through its descriptor of the tmpfs.
func (l *commandLayer) upper() string {
	return "/proc/self/fd/" + strconv.Itoa(int(l.tmpfs.Fd())) + "/upper"
}

// shmPath and overlayPath name the layer's mounts through this process's descriptors (for Landlock's rules).
func (l *commandLayer) shmPath() string { return "/proc/self/fd/" + strconv.Itoa(int(l.shm.Fd())) }
func (l *commandLayer) overlayPath() string {
	return "/proc/self/fd/" + strconv.Itoa(int(l.overlay.Fd()))
}

// mounts are the descriptors the keeper attaches, in nsForkArgs.attach's order.
func (l *commandLayer) mounts() []*os.File { return []*os.File{l.overlay, l.shm} }

// release closes the attached mounts' descriptors once the keeper has them; the tmpfs stays for the apply.
func (l *commandLayer) release() {
	if l == nil {
		return
	}
	for _, f := range []**os.File{&l.overlay, &l.shm} {
		if *f != nil {
			(*f).Close()
			*f = nil
		}
	}
}

func (l *commandLayer) close() {
	if l == nil {
		return
	}
	l.release()
	l.tmpfs.Close()
}

// layer asks the holder for a layer of the workspace bounded by bytes and inodes.
func (h *holder) layer(workspace string, bytes, inodes int64) (*commandLayer, error) {
	req, err := json.Marshal(layerRequest{Workspace: workspace, Bytes: bytes, Inodes: inodes})
	if err != nil {
		return nil, err
	}
	buf, fds, err := h.layers.call("layers", req, nil, 1+layerMounts)
	if err != nil {
		return nil, err
	}
	var rep layerReply
	if err := json.Unmarshal(buf, &rep); err != nil || rep.Error != "" || len(fds) != 1+layerMounts {
		for _, f := range fds {
			unix.Close(f)
		}
		if err == nil && rep.Error == "" {
			err = fmt.Errorf("the namespace holder sent %d descriptors for a layer", len(fds))
		} else if rep.Error != "" {
			err = errors.New(rep.Error)
		}
		return nil, fmt.Errorf("the command's layer: %w", err)
	}
	l := &commandLayer{tmpfs: os.NewFile(uintptr(fds[0]), "layer"), overlay: os.NewFile(uintptr(fds[1]), "overlay"),
		shm: os.NewFile(uintptr(fds[2]), "shm")}
	l.baseInodes = l.usedInodes()
	return l, nil
}

// serveLayers runs in the holder: one layer per request, until the socket closes.
func serveLayers() {
	serveHolderConn(holderLayerEnv, 0, func(buf []byte, _ []int) ([]byte, []int) {
		var req layerRequest
		fds, err := []int(nil), json.Unmarshal(buf, &req)
		if err == nil {
			fds, err = makeLayer(req)
		}
		rep := layerReply{}
		if err != nil {
			rep.Error = err.Error()
		}
		b, _ := json.Marshal(rep)
		return b, fds
	})
}

// makeLayer makes one layer: the bounded tmpfs with upper/, work/ and shm/, the overlay of the workspace over it,
// and a detached bind of shm/. Nothing of it is attached in the holder's namespace.
func makeLayer(req layerRequest) (fds []int, err error) {
	if req.Bytes <= 0 || req.Inodes <= 0 {
		return nil, fmt.Errorf("a layer needs a size and an inode count, got %d bytes and %d inodes", req.Bytes, req.Inodes)
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
	for _, d := range []struct {
		name string
		mode uint32
	}{{"upper", ws.Mode & 0o7777}, {"work", 0o700}, {"shm", 0o1777}} {
		if err := unix.Mkdirat(tmpfs, d.name, 0o700); err != nil {
			return fds, fmt.Errorf("layer folder %s: %w", d.name, err)
		}
		if err := unix.Fchmodat(tmpfs, d.name, d.mode&^(unix.S_ISUID|unix.S_ISGID), 0); err != nil {
			return fds, fmt.Errorf("layer folder %s: %w", d.name, err)
		}
	}
	at := "/proc/self/fd/" + strconv.Itoa(tmpfs)
	// userxattr: the overlay's own marks (opaque folders) are user.overlay.* attributes, as a user namespace needs.
	// It also keeps redirects and metacopy off (the kernel refuses them beside it): a renamed folder is copied
	// whole and every file's data is in the upper layer, so the upper layer alone says what changed (wsguard reads
	// nothing else, and refuses an entry that carries either mark).
	overlay, err := fsMount("overlay", map[string]string{"lowerdir": req.Workspace, "upperdir": at + "/upper",
		"workdir": at + "/work"}, []string{"userxattr"})
	if err != nil {
		return fds, err
	}
	fds = append(fds, overlay)
	shm, err := unix.OpenTree(tmpfs, "shm", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC)
	if err != nil {
		return fds, fmt.Errorf("layer shm: %w", err)
	}
	fds = append(fds, shm)
	return fds, nil
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
