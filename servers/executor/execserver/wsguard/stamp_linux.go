package wsguard

import (
	"io/fs"
	"syscall"
)

// stampOf is fi's stamp; the zero stamp (never settled) where stat gives none.
func stampOf(fi fs.FileInfo) stamp {
	if fi == nil {
		return stamp{}
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return stamp{}
	}
	return stamp{dev: int64(st.Dev), ino: int64(st.Ino), size: st.Size, mtime: st.Mtim.Nano(), ctime: st.Ctim.Nano(), mode: fi.Mode()}
}
