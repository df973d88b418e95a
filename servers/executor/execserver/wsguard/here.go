package wsguard

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"syscall"

	"github.com/goalbox/goalbox/pkg/pathguard"
)

// here is the pair of folders an apply is in: the layer's folder rel and the workspace's, each opened once for the
// entries it applies between two subfolders rather than walked to again for each (the layer's entries are then
// one system call each to describe, the workspace's writes skip the walk and the folder's checks:
// pathguard.Folder). Both open lazily and close before a subfolder is entered, so an apply holds a few descriptors
// whatever the depth.
type here struct {
	a   *apply
	rel string

	layer    *os.Root // the layer's folder, nil until needed
	layerDir *os.File // the same, for the kernel calls by descriptor (otherLayerMarks)
	layerErr error

	ws     *pathguard.Folder // the workspace's folder, nil until needed or when it cannot be opened
	wsDone bool              // ws was tried
}

func (h *here) openLayer() error {
	if h.layer != nil || h.layerErr != nil {
		return h.layerErr
	}
	r, err := h.a.layer.OpenRoot(h.rel)
	if err != nil {
		h.layerErr = err
		return err
	}
	d, err := r.Open(".")
	if err != nil {
		r.Close()
		h.layerErr = err
		return err
	}
	h.layer, h.layerDir = r, d
	return nil
}

// close closes both folders; the next call that needs one opens it again.
func (h *here) close() {
	if h.layer != nil {
		h.layerDir.Close()
		h.layer.Close()
		h.layer, h.layerDir = nil, nil
	}
	h.layerErr = nil
	if h.ws != nil {
		h.ws.Close()
		h.ws = nil
	}
	h.wsDone = false
}

func (h *here) layerLstat(name string) (fs.FileInfo, error) {
	if err := h.openLayer(); err != nil {
		return nil, err
	}
	return h.layer.Lstat(name)
}

func (h *here) layerReadlink(name string) (string, error) {
	if err := h.openLayer(); err != nil {
		return "", err
	}
	return h.layer.Readlink(name)
}

// otherLayerMarks reports whether the layer's entry name holds an overlay redirect or metacopy mark.
func (h *here) otherLayerMarks(name string) bool {
	return h.openLayer() == nil && otherLayerMarks(h.layerDir, name)
}

// openLayerFile opens the layer's regular file name for reading: without blocking on a FIFO a running command put
// there since it was described (a blocked apply would hold the workspace's guard), and refused unless the opened
// descriptor is a regular file.
func (h *here) openLayerFile(name string) (*os.File, error) {
	if err := h.openLayer(); err != nil {
		return nil, err
	}
	f, err := h.layer.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, err
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		f.Close()
		if err == nil {
			err = fmt.Errorf("it changed to a %s while it was applied; nothing was written", pathguard.TypeName(fi.Mode()))
		}
		return nil, err
	}
	return f, nil
}

// wsFolder is the workspace's folder opened for writes of its entries, nil when it cannot be (then each entry is
// applied by its path, which says why where it matters).
func (h *here) wsFolder() *pathguard.Folder {
	if !h.wsDone {
		h.wsDone = true
		h.ws, _ = h.a.g.OpenFolder(h.rel)
	}
	return h.ws
}

// wsLstat describes the workspace's entry name: from the opened folder, or by its path when that cannot be opened.
func (h *here) wsLstat(name string) (fs.FileInfo, error) {
	if ws := h.wsFolder(); ws != nil {
		return ws.Lstat(name)
	}
	_, fi, err := h.a.g.Lstat(path.Join(h.rel, name))
	return fi, err
}
