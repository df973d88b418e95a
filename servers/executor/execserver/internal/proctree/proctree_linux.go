// Package proctree walks a process tree through /proc: a process's live children, its parent and state, and a
// signal to every descendant. The local backend uses it to stop and kill what a command leaves behind (every
// process stays below a PID namespace's init or a subreaper, orphans included) and to find what its processes hold
// open.
package proctree

import (
	"os"
	"strconv"
	"strings"
	"syscall"
)

// Children lists the live children of process pid, from /proc/<pid>/task/<tid>/children (orphans are reparented
// to one of a subreaper's threads), falling back to a scan of /proc where that file is missing.
func Children(pid int) []int {
	base := "/proc/" + strconv.Itoa(pid) + "/task"
	tasks, err := os.ReadDir(base)
	if err != nil {
		return scanChildren(pid)
	}
	var kids []int
	for _, t := range tasks {
		b, err := os.ReadFile(base + "/" + t.Name() + "/children")
		if err != nil {
			return scanChildren(pid)
		}
		for _, f := range strings.Fields(string(b)) {
			if k, err := strconv.Atoi(f); err == nil && !isZombie(k) {
				kids = append(kids, k)
			}
		}
	}
	return kids
}

func isZombie(pid int) bool {
	_, state, ok := Stat(pid)
	return !ok || state == "Z"
}

// Stat reads the parent pid and the state (R, S, Z, ...) of a process from /proc/<pid>/stat.
func Stat(pid int) (ppid int, state string, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, "", false
	}
	// The command name in parentheses may hold spaces and parentheses; the fields after the last ")" are fixed.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, "", false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 2 {
		return 0, "", false
	}
	ppid, _ = strconv.Atoi(f[1])
	return ppid, f[0], true
}

// scanChildren lists the live processes whose parent is pid by reading every /proc/<pid>/stat.
func scanChildren(pid int) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var kids []int
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if ppid, state, ok := Stat(p); ok && ppid == pid && state != "Z" {
			kids = append(kids, p)
		}
	}
	return kids
}

// Signal sends sig to every descendant of process root but root and skip (0: none skipped), depth first. Two
// passes catch most children forked meanwhile.
func Signal(root, skip int, sig syscall.Signal) {
	for range 2 {
		pending := Children(root)
		for len(pending) > 0 {
			p := pending[len(pending)-1]
			pending = pending[:len(pending)-1]
			if p != skip {
				_ = syscall.Kill(p, sig)
			}
			pending = append(pending, Children(p)...)
		}
	}
}
