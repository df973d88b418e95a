package assemble

import (
	"time"

	"github.com/goalbox/goalbox/servers/executor/execserver"
	"github.com/goalbox/goalbox/servers/executor/execserver/docker"
	"github.com/goalbox/goalbox/servers/executor/execserver/local"
)

// Options are everything an executor is built from, in parts. The tags are the executor command's flags and
// environment variables (package envflag), which bind to these fields in place, so the command and an embedder
// fill the same value. The defaults are set where each part is used (execserver.Config's fill, the backends'
// own), never here: a zero field means its default.
type Options struct {
	// Backend is where commands run: backends.Auto (also when empty), backends.Local or backends.Docker.
	Backend string `env:"BACKEND" flag:"backend" usage:"where commands run: auto (local where it confines with namespaces, else docker when a Docker Engine answers, else local's fallback where it still confines; see /healthz backend_reason), local or docker (default auto)"`
	// RequireNamespaces refuses to start rather than run commands in the local backend's fallback.
	RequireNamespaces bool `env:"REQUIRE_NAMESPACES" flag:"require-namespaces" usage:"refuse to start rather than run commands without namespaces of their own (the local backend's fallback, where user namespaces are not allowed); docker's containers have theirs"`
	// Serving is the tools' own settings: timeouts, output caps and budgets, concurrency, processes, resource links,
	// the quarantine. New sets its Policy, Protection (unless given) and backend choice.
	Serving execserver.Config
	// Policy is which commands may run at all.
	Policy Policy
	// Protection adjusts the protected project files, unless Serving.Protection is given.
	Protection Protection
	// CacheDir is the folder of the commands' private home, temp and build caches (local) or build caches (docker),
	// outside the workspace; empty is each backend's default. New sets Local.CacheDir and Docker.CacheHostDir to it.
	CacheDir string `env:"CACHE_DIR" flag:"cache-dir" usage:"folder for the commands' private home, temp and build caches, outside the workspace"`
	// Limits are the caps on commands, which both backends take.
	Limits Limits
	// Network is what commands may reach, through the egress proxy; both backends take it.
	Network Network
	// Local configures the local backend. New fills in its workspace, CacheDir, Limits and Network.
	Local local.Config
	// Docker configures the docker backend. New fills in its workspace, CacheDir, Limits, Network and logger.
	Docker docker.Config
}

// Policy is the commands refused before they run (execserver.Policy).
type Policy struct {
	// Allow and Deny are RE2 patterns; in the environment one per line (patterns may hold commas).
	Allow []string `env:"ALLOW" envSeparator:"\n" flag:"allow" flagList:"repeat" usage:"RE2 pattern a command must match to run; repeatable (in the environment one per line)"`
	Deny  []string `env:"DENY" envSeparator:"\n" flag:"deny" flagList:"repeat" usage:"RE2 pattern that refuses a command; repeatable, wins over -allow (in the environment one per line)"`
}

// Protection adjusts the protected project files (pathguard.ParseProtection); the flags' usage is pathguard's,
// shared by every command that has them (ProtectDocs).
type Protection struct {
	Protect   []string `env:"PROTECT" envSeparator:"," flag:"protect" flagList:"repeat"`
	Unprotect []string `env:"UNPROTECT" envSeparator:"," flag:"unprotect" flagList:"repeat"`
}

// Limits are the caps on commands, in the flags' units; 0 takes each backend's default, -1 (where a backend has
// it) none.
type Limits struct {
	PIDs int `env:"PIDS_LIMIT" flag:"pids-limit" usage:"processes and threads per command: local backend a pids cgroup where available (default 1024, -1 for none), docker the container's pids limit (default 512)"`
	// MemoryMB: the local backend caps each process (RLIMIT_DATA) and each command (memory cgroup); docker the
	// container, swap off.
	MemoryMB int64 `env:"MEMORY_LIMIT_MB" flag:"memory-limit-mb" usage:"memory limit in MiB: local backend per process (RLIMIT_DATA) and per command (memory cgroup where available), default 8192, -1 for none; docker the container's limit, swap off (default 2048)"`
	// TotalMemoryMB and TotalPIDs bound all of the backend's commands together.
	TotalMemoryMB int64 `env:"TOTAL_MEMORY_LIMIT_MB" flag:"total-memory-limit-mb" usage:"memory in MiB of all commands together: local backend a parent memory cgroup, where available (default half the machine's); docker the sum of the containers' limits (default the Engine's memory); -1 for none"`
	TotalPIDs     int   `env:"TOTAL_PIDS_LIMIT" flag:"total-pids-limit" usage:"processes and threads of all commands together: local backend a parent pids cgroup, where available (default 4096); docker the sum of the containers' limits (default 8192); -1 for none"`
	// MaxWorkspaceBytes is the disk cap of the workspace and what else commands write on the host.
	MaxWorkspaceBytes int64 `env:"MAX_WORKSPACE_BYTES" flag:"max-workspace-bytes" usage:"disk cap of the workspace and the commands' private home and temp (local) or cache (docker) together; a command that passes it is killed; default 16 GiB, -1 for none"`
	// MaxWorkspaceInodes is the inode cap of the same folders, held at the act where commands work on a layer.
	MaxWorkspaceInodes int64 `env:"MAX_WORKSPACE_INODES" flag:"max-workspace-inodes" usage:"files, folders and links the workspace and the commands' private home, temp and cache may hold together; a command's layer is made with what is left, so creating one past it fails with ENOSPC; at least 1000, default 1000000, -1 for none"`
}

// minWorkspaceInodes is the least inode cap accepted: below it every command would start on its layer's floor
// (64 inodes) after the first few.
const minWorkspaceInodes = 1000

// Network is the commands' network (package execserver/egress): none unless Allow names hosts.
type Network struct {
	Allow              string        `env:"NET_ALLOW" flag:"net-allow" usage:"comma-separated hosts (registry.npmjs.org), *.domains, either with :port (default ports 80 and 443), and CIDRs (any port) commands may reach through the executor's egress proxy, the only way out; empty: no network (local backend, namespace mode)"`
	MaxConns           int           `env:"NET_MAX_CONNS" flag:"net-max-conns" usage:"with -net-allow: proxy connections of all commands together (default 256)"`
	MaxConnsPerCommand int           `env:"NET_MAX_CONNS_PER_COMMAND" flag:"net-max-conns-per-command" usage:"with -net-allow: proxy connections of one command or process at once (default 64)"`
	IdleTimeout        time.Duration `env:"NET_IDLE_TIMEOUT" flag:"net-idle-timeout" usage:"with -net-allow: a proxy connection idle both ways this long is closed (default 2m)"`
	MaxBytes           int64         `env:"NET_MAX_BYTES" flag:"net-max-bytes" usage:"with -net-allow: bytes one command or process moves through the proxy, both ways (default 4 GiB, -1 for none)"`
	// Secrets are NAME=SOURCE@HOST[,HOST...] (egress.ParseSecret).
	Secrets []string `env:"SECRET" envSeparator:"\n" flag:"secret" flagList:"repeat" usage:"NAME=SOURCE@HOST[,HOST...], repeatable (in the environment one per line): commands see NAME as a placeholder, which the egress proxy replaces by the value of SOURCE (env:VAR or file:PATH of the server's) only in HTTPS requests to HOST"`
	// UpstreamCA is a PEM file's path.
	UpstreamCA string `env:"UPSTREAM_CA" flag:"upstream-ca" usage:"PEM file of CAs trusted, beside the host's, for the upstreams of -secret hosts (a private registry, tests)"`
}
