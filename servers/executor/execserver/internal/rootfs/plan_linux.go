package rootfs

// The plan: the root every command of the namespace mode sees. It is built from what the policy
// allows, never by hiding things from the host's tree: an empty tmpfs becomes the root, and only the allowed paths
// are bound into it, at their own paths — the system and toolchain folders and /etc read-only, the workspace and the
// private home, temp and cache folders read-write (nosuid, nodev), a /dev of a few devices, and under /proc each
// command's own procfs. Nothing else exists there: no host socket, file or folder outside the policy can be named,
// whatever its permissions (Landlock does not govern connect() on a pathname socket, so hiding is the only defence
// against one). The folders on the way to an allowed path are the tmpfs's own, open to pass through, so a toolchain
// behind a closed folder (/root/.pyenv behind /root's 0700) is reachable without opening anything else of it.
//
// The server works the plan out (New), because it can see every path; the holder carries it out (build_linux.go).

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
)

// Plan is the holder's plan and what the server noticed while making it.
type Plan struct {
	Ops      []Op
	Warnings []string
}

// Op is one step of the plan. Targets are paths as commands see them; until the pivot the holder builds them
// under the staging folder.
type Op struct {
	// Kind is "private" (stop propagation to and from the host), "root" (an empty tmpfs at Target, the staging
	// folder of the new root), "bind" (Source onto Target, its mountpoint made first), "tmpfs" (an empty tmpfs at
	// Target), "devpts" (a new devpts instance at Target), "dir" (an empty folder), "file" (an empty file),
	// "symlink" (a link at Target whose text is Source) or "pivot" (make the staging folder Target the root, detach
	// the old one, and make the root itself read-only).
	Kind   string `json:"kind"`
	Target string `json:"target"`
	// Source is opened before any mount is made, so a tmpfs over one of its folders does not hide it. A bind
	// source must be a mount of the holder's own namespace, so the server cannot open it for the holder.
	Source string `json:"source,omitempty"`
	Opts   string `json:"opts,omitempty"`   // tmpfs: mount options
	Write  bool   `json:"write,omitempty"`  // bind: read-write (else read-only)
	Device bool   `json:"device,omitempty"` // bind: device files may be opened (else nodev)
}

// Layout is what the root holds: the run-as user (warned about what it cannot read), the private temp folder bound
// at /tmp, the folders and files read-only and read-write, the devices, and the entries of /etc masked.
type Layout struct {
	UID, GID                       int
	Tmp                            string
	ReadDirs, ReadFiles, WriteDirs []string
	Devices                        []string
	EtcHidden                      map[string]bool
}

// staging is where the holder builds the new root before it pivots into it. Any folder works: every source is
// opened before the tmpfs covers it.
const staging = "/tmp"

// hiddenReadDirs are read folders of the policy that the minimal root leaves out or builds itself: /proc is each
// command's own, /dev is made of the allowed devices, /sys is absent (it would show the host's network interfaces,
// MAC addresses and DMI data), and /opt is not a system folder (toolchains in it are bound by their own roots).
var hiddenReadDirs = []string{"/proc", "/sys", "/dev", "/opt"}

// New plans the minimal root of in: read folders and files read-only, write folders read-write, the private temp
// folder at /tmp, a built /dev, an empty /proc, /etc with its secrets masked, and the top-level links of a
// merged-/usr system (/bin → usr/bin) as links.
func New(in Layout) *Plan {
	uid, gid, tmp, readDirs, readFiles, writeDirs := in.UID, in.GID, in.Tmp, in.ReadDirs, in.ReadFiles, in.WriteDirs
	p := &Plan{Ops: []Op{{Kind: "private"}, {Kind: "root", Target: staging}}}
	type bind struct {
		src, target string
		write       bool
	}
	var binds []bind
	links := map[string]string{} // top-level links, made after the binds so that no bind is made through one
	for _, d := range readDirs {
		if slices.Contains(hiddenReadDirs, d) {
			continue
		}
		fi, err := os.Lstat(d)
		switch {
		case err != nil:
			continue
		case fi.Mode()&os.ModeSymlink != 0 && filepath.Dir(d) == "/":
			// /bin → usr/bin on a merged-/usr system: the same link, leading into the bound /usr.
			if text, err := os.Readlink(d); err == nil {
				links[d] = text
			}
			continue
		}
		binds = append(binds, bind{src: d, target: d})
	}
	for _, f := range readFiles {
		binds = append(binds, bind{src: f, target: f})
	}
	for _, w := range writeDirs {
		binds = append(binds, bind{src: w, target: w, write: true})
	}
	if !slices.Contains(writeDirs, "/tmp") {
		binds = append(binds, bind{src: tmp, target: "/tmp", write: true})
	}
	// Parents before children; a read-only path inside another read-only one is already there.
	slices.SortFunc(binds, func(a, b bind) int { return strings.Compare(a.target, b.target) })
	var done []bind
	for _, b := range binds {
		if _, err := os.Stat(b.src); err != nil {
			continue
		}
		covered := slices.ContainsFunc(done, func(o bind) bool {
			return !o.write && !b.write && o.src == o.target && b.src == b.target && Within(b.target, o.target)
		})
		if covered || slices.ContainsFunc(done, func(o bind) bool { return o.target == b.target }) {
			continue
		}
		done = append(done, b)
		p.Ops = append(p.Ops, Op{Kind: "bind", Source: b.src, Target: b.target, Write: b.write})
		if !accessible(b.src, uid, gid) {
			p.Warnings = append(p.Warnings, fmt.Sprintf("%s is not readable by the run-as user %d:%d", b.src, uid, gid))
		}
	}

	for _, l := range slices.Sorted(maps.Keys(links)) {
		if !slices.ContainsFunc(done, func(b bind) bool { return Within(b.target, l) }) {
			p.Ops = append(p.Ops, Op{Kind: "symlink", Target: l, Source: links[l]})
		}
	}

	// /dev: the allowed devices, the host's pseudo-terminals, a private /dev/shm and the usual links.
	// /proc: the host's, bound here only so that each command's PID 1 may mount a procfs of its own over it. The
	// kernel lets a user namespace mount a procfs only where one is already fully visible in its mount namespace;
	// PID 1 mounts its own before it executes anything, so no command ever sees the host's.
	p.Ops = append(p.Ops, Op{Kind: "dir", Target: "/dev"}, Op{Kind: "bind", Source: "/proc", Target: "/proc", Write: true})
	for _, d := range in.Devices {
		if _, err := os.Stat(d); err == nil && d != "/dev/ptmx" {
			p.Ops = append(p.Ops, Op{Kind: "bind", Source: d, Target: d, Write: true, Device: true})
		}
	}
	// Pseudo-terminals of their own: a fresh devpts instance, /dev/ptmx leading into it. Binding the host's
	// /dev/pts would let a command open the terminals of the server's user (a user-started executor's own shell)
	// and write into them.
	p.Ops = append(p.Ops, Op{Kind: "devpts", Target: "/dev/pts"}, Op{Kind: "symlink", Target: "/dev/ptmx", Source: "pts/ptmx"})
	p.Ops = append(p.Ops, Op{Kind: "tmpfs", Target: "/dev/shm", Opts: "size=64m,mode=1777"})
	for link, text := range map[string]string{"/dev/fd": "/proc/self/fd", "/dev/stdin": "/proc/self/fd/0",
		"/dev/stdout": "/proc/self/fd/1", "/dev/stderr": "/proc/self/fd/2"} {
		p.Ops = append(p.Ops, Op{Kind: "symlink", Target: link, Source: text})
	}

	// /etc's secrets (etcHidden) are masked inside the bound /etc, so that Landlock may grant /etc as one folder:
	// a ruleset of every readable entry of /etc is some hundred rules, built for every command.
	if slices.ContainsFunc(done, func(b bind) bool { return b.target == "/etc" }) {
		for name := range in.EtcHidden {
			e := filepath.Join("/etc", name)
			switch fi, err := os.Lstat(e); {
			case err != nil:
			case fi.IsDir():
				p.Ops = append(p.Ops, Op{Kind: "tmpfs", Target: e, Opts: "size=16k,mode=755"})
			case fi.Mode().IsRegular():
				p.Ops = append(p.Ops, Op{Kind: "bind", Source: "/dev/null", Target: e})
			}
		}
		if fi, err := os.Stat("/etc/ssl/private"); err == nil && fi.IsDir() {
			p.Ops = append(p.Ops, Op{Kind: "tmpfs", Target: "/etc/ssl/private", Opts: "size=16k,mode=755"})
		}
	}
	p.Ops = append(p.Ops, Op{Kind: "pivot", Target: staging})
	return p
}

// ClosedAncestor is the outermost folder above p (not p itself) that uid:gid may not pass through, or "". Outside
// the minimal root (the fallback mode) such a folder keeps the run-as user from p; in it, it is the tmpfs's own.
func ClosedAncestor(p string, uid, gid int) string {
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

// accessible reports whether uid:gid may read p (and pass through it, when it is a folder). The folders on the way
// do not matter: in the minimal root they are the tmpfs's own.
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

// Paths are the plan's read-only and read-write binds, as commands see them (devices and /proc left out).
func (p *Plan) Paths() (ro [2][]string) {
	for _, op := range p.Ops {
		if op.Kind != "bind" || op.Device || op.Target == "/proc" || op.Source == "/dev/null" {
			continue
		}
		if op.Write {
			ro[1] = append(ro[1], op.Target)
		} else {
			ro[0] = append(ro[0], op.Target)
		}
	}
	return ro
}

// Within reports whether p is dir or inside it.
func Within(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, strings.TrimSuffix(dir, "/")+"/")
}
