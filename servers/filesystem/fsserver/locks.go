package fsserver

import (
	"hash/maphash"
	"path"
	"slices"
)

// The tools that change files take the locks of the names they change, so that an edit's read-modify-write cannot
// lose a concurrent write, edit, move or delete of the same file made through this server. A lock is keyed on the
// folder (by device and inode) and the name in it, after following a final symlink, so every spelling of one file
// takes the same lock: its own path, a symlink to it, a path through a symlinked folder. Writes replace a file by
// renaming a new one over the same name in the same folder, so the key outlives them. Not serialized: changes made
// outside this server (commands run by the executor), and the files inside a folder that is moved or deleted as a
// whole. Atomic renames already keep every reader from seeing a torn file.

// lockFiles takes the locks of the workspace paths ps and returns what releases them. Each path locks the entry it
// names and, when that is a symlink, the file it leads to: an edit through a symlink and a move of that symlink
// then wait for each other too.
func (s *Filesystem) lockFiles(ps ...string) (unlock func()) {
	var keys []string
	for _, p := range ps {
		rel, err := s.g.Clean(p)
		if err != nil {
			continue // refused before it touches anything
		}
		keys = append(keys, s.nameKey(rel))
		if target, err := s.g.WriteTarget(rel); err == nil && target != rel {
			keys = append(keys, s.nameKey(target))
		}
	}
	return s.lockKeys(keys)
}

// nameKey names the entry rel: its folder by device and inode, and its name. A folder that does not exist (yet)
// is named by its path, and so is every folder on Windows, where a stat gives no key (locks_windows.go): there two
// spellings of one file through a symlinked folder take different locks.
func (s *Filesystem) nameKey(rel string) string {
	dir, name := path.Split(rel)
	if _, fi, err := s.g.Stat(dir); err == nil {
		if id, ok := folderID(fi); ok {
			return id + "/" + name
		}
	}
	return "path:" + rel
}

// lockKeys locks the stripes of keys, in stripe order and each once, so two calls that share stripes cannot
// deadlock.
func (s *Filesystem) lockKeys(keys []string) (unlock func()) {
	var stripes []int
	for _, k := range keys {
		stripes = append(stripes, int(maphash.String(s.seed, k)%uint64(len(s.locks))))
	}
	slices.Sort(stripes)
	stripes = slices.Compact(stripes)
	for _, i := range stripes {
		s.locks[i].Lock()
	}
	return func() {
		for _, i := range stripes {
			s.locks[i].Unlock()
		}
	}
}
