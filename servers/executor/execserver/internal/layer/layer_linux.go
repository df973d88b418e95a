package layer

// The server's handle on one command's layer: the tmpfs it reads the upper layers from, and the detached mounts it
// hands to the command's keeper.

import (
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// Layer is one command's layer, held by descriptor.
type Layer struct {
	tmpfs   *os.File   // the tmpfs: upper/, work/, shm/ and p<i>/{upper,work} per private folder
	overlay *os.File   // a detached mount, attached by the keeper at the workspace
	shm     *os.File   // a detached mount of tmpfs's shm/, attached by the keeper at /dev/shm
	private []*os.File // detached overlays of the private folders, attached by the keeper at their paths
	// baseInodes is what the tmpfs held when it came: its folders and the overlay's own in work/.
	baseInodes uint64
	// OverCap, when not empty, is the note for a command whose layer was made at a cap (Room).
	OverCap string
}

// Open takes the descriptors Make made (sent over by the holder), in Make's order.
func Open(fds []int) *Layer {
	l := &Layer{tmpfs: os.NewFile(uintptr(fds[0]), "layer"), overlay: os.NewFile(uintptr(fds[1]), "overlay"),
		shm: os.NewFile(uintptr(fds[2]), "shm")}
	for i, fd := range fds[3:] {
		l.private = append(l.private, os.NewFile(uintptr(fd), "private-"+strconv.Itoa(i)))
	}
	l.baseInodes = l.usedInodes()
	return l
}

// fdPath names a descriptor of this process as a path.
func fdPath(f *os.File) string { return "/proc/self/fd/" + strconv.Itoa(int(f.Fd())) }

// Upper is the path of the workspace's upper layer, for the server: through its descriptor of the tmpfs.
func (l *Layer) Upper() string { return fdPath(l.tmpfs) + "/upper" }

// PrivateUpper is the upper layer of the i-th private folder.
func (l *Layer) PrivateUpper(i int) string {
	return fdPath(l.tmpfs) + "/" + privateFolder(i) + "/upper"
}

// PrivatePaths name the private folders' overlays through this process's descriptors (for Landlock's rules).
func (l *Layer) PrivatePaths() []string {
	paths := make([]string, len(l.private))
	for i, f := range l.private {
		paths[i] = fdPath(f)
	}
	return paths
}

// ShmPath and OverlayPath name the layer's mounts through this process's descriptors (for Landlock's rules).
func (l *Layer) ShmPath() string     { return fdPath(l.shm) }
func (l *Layer) OverlayPath() string { return fdPath(l.overlay) }

// Mounts are the descriptors the keeper attaches, in the order AttachOrder numbers them.
func (l *Layer) Mounts() []*os.File { return append([]*os.File{l.overlay, l.shm}, l.private...) }

// Release closes the attached mounts' descriptors once the keeper has them; the tmpfs stays for the apply.
func (l *Layer) Release() {
	if l == nil {
		return
	}
	for _, f := range l.Mounts() {
		if f != nil {
			f.Close()
		}
	}
	l.overlay, l.shm, l.private = nil, nil, nil
}

// Close releases the layer whole; its tmpfs goes when the last mount of it does.
func (l *Layer) Close() {
	if l == nil {
		return
	}
	l.Release()
	l.tmpfs.Close()
}

// usedInodes is what the layer's tmpfs holds, counted by the kernel.
func (l *Layer) usedInodes() uint64 {
	var st unix.Statfs_t
	if err := unix.Fstatfs(int(l.tmpfs.Fd()), &st); err != nil {
		return ^uint64(0)
	}
	return st.Files - st.Ffree
}

// Holds reports whether the command put anything in its layer (or its /dev/shm).
func (l *Layer) Holds() bool { return l.usedInodes() > l.baseInodes }
