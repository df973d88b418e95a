package local

import (
	"os"
	"path/filepath"

	"github.com/goalbox/goalbox/servers/executor/execserver/egress"
	"strconv"
	"strings"
)

// Config configures the local backend. The tags are the executor command's flags for the fields it takes as they
// are (package envflag); servers/executor/assemble fills in the workspace and the settings both backends share.
type Config struct {
	// Workspace is the workspace's real host path (pathguard.Guard.Dir()).
	Workspace string
	// CacheDir holds the commands' private home, temp folders and build caches, outside the workspace, in a
	// folder of each workspace's own (ws-<hash of its real path>). Default: the user cache folder +
	// "/goalbox-exec" (e.g. ~/.cache/goalbox-exec), or /var/cache/goalbox-exec for a root server.
	CacheDir string
	// SharedCacheDir, when set, holds the build caches (GOCACHE, GOMODCACHE, npm, pip, cargo, gradle) instead of
	// the workspace's own folder: an explicit opt-in to share them between workspaces (the benchmark's grader does,
	// so that every Go exercise does not rebuild the standard library). Whatever one workspace's commands write
	// there, the others' commands may run. HOME and temp stay private.
	SharedCacheDir string
	// RunAs is the numeric "uid[:gid]" commands run as on the host; root is refused. Default: the workspace's
	// owner when that is not root; else DefaultRunAsUID, and the workspace is given to that user. A server that is
	// not root always runs commands as its own user.
	RunAs string `env:"RUN_AS" flag:"run-as" usage:"local backend, root server: numeric uid[:gid] commands run as; default the workspace's owner, else 65532 (the workspace is given to it); never root"`
	// NoNamespaces forces the fallback without PID, mount and network namespaces (a process group, a subreaper
	// and Landlock's network rules), as when the server runs where namespaces are not permitted.
	NoNamespaces bool `env:"NO_NAMESPACES" flag:"no-namespaces" usage:"local backend: do not use PID/mount/network namespaces"`
	// NoLandlock turns Landlock off (for comparison and debugging only; the server warns).
	NoLandlock bool
	// ExtraReadDirs are more folders commands may read and execute from, besides the system and the toolchains
	// found on PATH.
	ExtraReadDirs []string
	// MemoryLimit caps each process's data segment (RLIMIT_DATA) and, where the server may create a memory cgroup,
	// all of a command's processes together, in bytes. 0 means DefaultMemoryLimit; -1 none.
	MemoryLimit int64
	// PidsLimit caps the processes and threads of one command (pids cgroup, where the server may create one).
	// 0 means DefaultPidsLimit; -1 none.
	PidsLimit int
	// TotalMemoryLimit caps the memory of all of the backend's commands together, in bytes (the memory cgroup the
	// per-command ones sit in). 0 means half of the machine's memory; -1 none.
	TotalMemoryLimit int64
	// TotalPidsLimit caps the processes and threads of all of the backend's commands together. 0 means
	// DefaultTotalPidsLimit; -1 none.
	TotalPidsLimit int
	// MaxWorkspaceBytes caps the disk space of the workspace and the private home and temp folders together; a
	// command that takes them past it is killed (checked every half second: see diskcap.go). 0 means
	// DefaultMaxWorkspaceBytes; -1 none.
	MaxWorkspaceBytes int64
	// Network opens the network to the hosts Network.Allow names (-net-allow), through the egress proxy, the
	// only way out; the zero value keeps commands without network. Namespace mode only: New refuses it in the
	// fallback, which has no network namespace to confine it in.
	Network egress.Config
	// FileSizeLimit caps the size of any file a command writes (RLIMIT_FSIZE), in bytes. 0 means
	// DefaultFileSizeLimit; -1 none.
	FileSizeLimit int64
	// MaxWorkspaceInodes caps the files, folders and links of the workspace and the private home, temp and cache
	// folders together: each command's layer is made with what is left (layer_linux.go). 0 means
	// DefaultMaxWorkspaceInodes; -1 none.
	MaxWorkspaceInodes int64
	// NoWorkspaceLayer lets commands of the namespace mode write the workspace itself, as before the workspace
	// guard: for comparison only (the attack tests' positive controls).
	NoWorkspaceLayer bool
}

// Defaults for Config.
const (
	DefaultMemoryLimit   = 8 << 30
	DefaultFileSizeLimit = 4 << 30
	maxOpenFiles         = 1 << 16
	// DefaultPidsLimit is how many processes and threads one command may have at once: plenty for make -j, go
	// test and jest workers, far below what a fork bomb wants.
	DefaultPidsLimit = 1024
	// DefaultTotalPidsLimit is how many processes and threads all of one executor's commands may have together.
	DefaultTotalPidsLimit = 4096
)

// defaultTotalMemory is the memory all of one executor's commands may use together: half of the machine's.
func defaultTotalMemory() int64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err == nil {
				return kb << 10 / 2
			}
		}
	}
	return 0
}

// systemReadDirs are the system folders every command may read and execute from. /proc shows only the command's
// own processes in namespace mode; elsewhere reading another process's environment is stopped by the dropped
// capabilities and by Landlock's ptrace rule.
var systemReadDirs = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt", "/proc", "/sys", "/dev"}

// sandboxDevices are the device files a command may open, read and write: nothing else under /dev (no disk, no
// console, no other terminal), though it may list /dev.
var sandboxDevices = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty", "/dev/ptmx"}

// etcHidden are the entries of /etc a command may not read: the root user owns them, and a command runs as the
// server's user, root included, so only Landlock keeps it out. Everything else in /etc is readable.
var etcHidden = map[string]bool{
	"shadow": true, "shadow-": true, "gshadow": true, "gshadow-": true, "ssh": true, "sudoers": true, "sudoers.d": true,
	"security": true, "docker": true, "containerd": true, "goalbox": true, "credstore": true, "credstore.encrypted": true,
}

// etcReadable lists the readable entries of /etc as folders and files, for Landlock rules.
func etcReadable() (dirs, files []string) {
	ents, err := os.ReadDir("/etc")
	if err != nil {
		return nil, nil
	}
	add := func(p string) {
		if isDir(p) {
			dirs = append(dirs, p)
		} else {
			files = append(files, p)
		}
	}
	for _, e := range ents {
		switch p := filepath.Join("/etc", e.Name()); {
		case etcHidden[e.Name()]:
		case e.Name() == "ssl":
			// /etc/ssl/private holds keys; certs and openssl.cnf are what commands need.
			add(filepath.Join(p, "certs"))
			add(filepath.Join(p, "openssl.cnf"))
		default:
			add(p)
		}
	}
	return dirs, files
}

// defaultCacheDir is the user's cache folder, or /var/cache for a root server: commands run as another user, who
// must pass through every folder on the way (in the fallback mode, where no mount namespace can bridge /root).
func defaultCacheDir() string {
	if os.Geteuid() == 0 {
		return "/var/cache/goalbox-exec"
	}
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "goalbox-exec")
	}
	return filepath.Join(os.TempDir(), "goalbox-exec")
}
