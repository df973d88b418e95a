package local

// The holder's mount plan, worked out by the server, which can see every path: what to hide from commands, and
// how to let the run-as user reach the folders it needs when a folder on the way is closed to it (a toolchain in
// /root/.pyenv behind /root's 0700, a workspace made by root under a 0700 test folder). Such a folder is covered by
// an empty tmpfs and the needed paths under it are bound back at their own paths, so commands find everything where
// the server's configuration says it is and nothing else of that folder.

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
)

// mountPlan is the holder's plan and what the server noticed while making it.
type mountPlan struct {
	ops      []mountOp
	warnings []string
}

func (p *mountPlan) bind(src, target string) {
	p.ops = append(p.ops, mountOp{Kind: "bind", Source: src, Target: target})
}

// planMounts builds the holder's plan: no propagation to the host; empty /run and /var/run (the host's sockets);
// a private /dev/shm; the private temp folder over /tmp, with needed paths under /tmp bound back; closed folders on
// the way to needed paths bridged; the writable folders nosuid.
func planMounts(uid, gid int, tmp string, writeDirs, needed []string) *mountPlan {
	p := &mountPlan{ops: []mountOp{{Kind: "private"}}}
	all := slices.Concat(writeDirs, needed)
	for _, m := range []struct{ dir, opts string }{{"/run", "size=1m,mode=755"}, {"/var/run", "size=1m,mode=755"}, {"/dev/shm", "size=64m,mode=1777"}} {
		if fi, err := os.Lstat(m.dir); err != nil || !fi.IsDir() || coversAny(m.dir, all) {
			continue
		}
		p.ops = append(p.ops, mountOp{Kind: "tmpfs", Target: m.dir, Opts: m.opts})
	}

	var underTmp []string
	bridges := map[string][]string{} // closed folder → needed paths under it
	for _, n := range all {
		if _, err := os.Stat(n); err != nil {
			continue
		}
		if n == "/tmp" {
			p.warnings = append(p.warnings, "/tmp itself is a needed path: it stays the host's")
			continue
		}
		if strings.HasPrefix(n, "/tmp/") {
			underTmp = append(underTmp, n)
			continue
		}
		if c := closedAncestor(n, uid, gid); c != "" {
			bridges[c] = append(bridges[c], n)
		}
	}
	if !slices.Contains(all, "/tmp") {
		p.bind(tmp, "/tmp")
		for _, n := range outermost(underTmp) {
			p.bind(n, n)
		}
	}
	closed := make([]string, 0, len(bridges))
	for c := range bridges {
		closed = append(closed, c)
	}
	sort.Strings(closed)
	for _, c := range closed {
		p.ops = append(p.ops, mountOp{Kind: "tmpfs", Target: c, Opts: "size=1m,mode=755"})
		for _, n := range outermost(bridges[c]) {
			p.bind(n, n)
		}
	}
	// /etc's secrets (etcHidden) are masked here, so that Landlock may grant /etc as one folder: a ruleset of
	// every readable entry of /etc is some hundred rules, built for every command.
	for name := range etcHidden {
		e := filepath.Join("/etc", name)
		switch fi, err := os.Lstat(e); {
		case err != nil:
		case fi.IsDir():
			p.ops = append(p.ops, mountOp{Kind: "tmpfs", Target: e, Opts: "size=16k,mode=755"})
		case fi.Mode().IsRegular():
			p.bind("/dev/null", e)
		}
	}
	if isDir("/etc/ssl/private") {
		p.ops = append(p.ops, mountOp{Kind: "tmpfs", Target: "/etc/ssl/private", Opts: "size=16k,mode=755"})
	}
	for _, w := range writeDirs {
		p.ops = append(p.ops, mountOp{Kind: "nosuid", Target: w})
	}
	for _, n := range needed {
		if isDir(n) && !accessible(n, uid, gid) {
			p.warnings = append(p.warnings, fmt.Sprintf("%s is not readable by the run-as user %d:%d", n, uid, gid))
		}
	}
	return p
}

// closedAncestor is the outermost folder above p (not p itself) that uid:gid may not pass through, or "".
func closedAncestor(p string, uid, gid int) string {
	parts := strings.Split(strings.TrimPrefix(filepath.Clean(p), "/"), "/")
	for i := 1; i < len(parts); i++ {
		a := "/" + strings.Join(parts[:i], "/")
		if !searchable(a, uid, gid) {
			return a
		}
	}
	return ""
}

// searchable reports whether uid:gid (no supplementary groups) may pass through folder dir.
func searchable(dir string, uid, gid int) bool { return permits(dir, uid, gid, 0o1) }

// accessible reports whether uid:gid may read p (and pass through it, when it is a folder).
func accessible(p string, uid, gid int) bool {
	fi, err := os.Stat(p)
	if err != nil {
		return true // missing: nothing to warn about
	}
	if fi.IsDir() {
		return permits(p, uid, gid, 0o5)
	}
	return permits(p, uid, gid, 0o4)
}

func permits(p string, uid, gid int, want os.FileMode) bool {
	if uid == 0 {
		return true
	}
	fi, err := os.Stat(p)
	if err != nil {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return true
	}
	perm := fi.Mode().Perm()
	switch {
	case int(st.Uid) == uid:
		perm >>= 6
	case int(st.Gid) == gid:
		perm >>= 3
	}
	return perm&want == want
}

// outermost keeps the paths that no other path of the list contains.
func outermost(paths []string) []string {
	var out []string
	for _, p := range paths {
		inner := false
		for _, q := range paths {
			if q != p && within(p, q) {
				inner = true
				break
			}
		}
		if !inner && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out
}
