package protocol

// What each server's health endpoint (HealthPath) reports about itself, besides the serving state that mcpserve
// adds ("status", "sessions", "connections"). The endpoint is open to whoever reaches the port: the workspace
// appears as clients see it (the advertised root), never by its host path.

// FilesystemHealth is the filesystem server's report: what it serves and its limits.
type FilesystemHealth struct {
	Server         string           `json:"server"`
	Version        string           `json:"version"`
	Workspace      string           `json:"workspace"`
	AdvertisedRoot string           `json:"advertised_root"`
	Tools          []string         `json:"tools"`
	Limits         FilesystemLimits `json:"limits"`
	// Protected are the protected project files in force, as patterns (pathguard.Protection): paths, at any depth
	// of the workspace, that no tool may create, change, move or delete. Never null; empty when none.
	Protected []string `json:"protected"`
}

// FilesystemLimits are the filesystem server's limits; 0 or -1 for MaxWorkspaceBytes is no disk cap.
type FilesystemLimits struct {
	MaxFileBytes        int64 `json:"max_file_bytes"`
	MaxWriteBytes       int64 `json:"max_write_bytes"`
	MaxReadLines        int   `json:"max_read_lines"`
	MaxReadContentBytes int   `json:"max_read_content_bytes"`
	MaxBinaryReadBytes  int64 `json:"max_binary_read_bytes"`
	MaxListEntries      int   `json:"max_list_entries"`
	MaxListDepth        int   `json:"max_list_depth"`
	MaxSearchResults    int   `json:"max_search_results"`
	MaxTreeDepth        int   `json:"max_tree_depth"`
	MaxTreeEntries      int   `json:"max_tree_entries"`
	MaxWorkspaceBytes   int64 `json:"max_workspace_bytes"`
}

// ExecutorHealth is the executor's report: its backend, the confinement in force and its limits.
type ExecutorHealth struct {
	Server    string `json:"server"`
	Version   string `json:"version"`
	Workspace string `json:"workspace"`
	Backend   string `json:"backend"`
	// BackendChoice is how Backend was chosen: "auto" (the executor chose it: -backend auto, the default) or
	// "explicit" (named by -backend); BackendRule the step of the choice that chose it. BackendReason says why
	// this backend, in words a person can check.
	BackendChoice  string        `json:"backend_choice,omitempty"`
	BackendRule    BackendRule   `json:"backend_rule,omitempty"`
	BackendReason  string        `json:"backend_reason,omitempty"`
	Confinement    Confinement   `json:"confinement"`
	Policy         CommandPolicy `json:"policy"`
	TimeoutDefault int           `json:"timeout_default"` // seconds
	TimeoutMax     int           `json:"timeout_max"`     // seconds
	OutputCap      int           `json:"output_cap"`      // bytes of each of stdout and stderr
	MaxConcurrent  int           `json:"max_concurrent"`
	// FullOutputs is the store that keeps truncated streams whole, as MCP resources.
	FullOutputs FullOutputsHealth `json:"full_outputs"`
	// ProcessBuffers is what the background processes' ring buffers hold, all sessions together.
	ProcessBuffers ProcessBuffersHealth `json:"process_buffers"`
}

// ProcessBuffersHealth is the state of the processes' ring buffers.
type ProcessBuffersHealth struct {
	Total int `json:"total"` // bytes they may hold together
	Bytes int `json:"bytes"` // bytes they hold now beyond the 4 KiB every buffer has outside the total
}

// FullOutputsHealth is the state of the executor's store of full outputs.
type FullOutputsHealth struct {
	Budget   int64 `json:"budget"`   // bytes each session may keep; 0 when none are kept
	Total    int64 `json:"total"`    // bytes all sessions together may keep
	Sessions int   `json:"sessions"` // sessions holding outputs
	Bytes    int64 `json:"bytes"`    // held by all of them, counted in the store's 64 KiB blocks
}

// CommandPolicy is the executor's allow and deny patterns (RE2); Active is false when there are none.
type CommandPolicy struct {
	Active bool     `json:"active"`
	Allow  []string `json:"allow,omitempty"`
	Deny   []string `json:"deny,omitempty"`
}

// Confinement is what confinement is in force for commands, as typed values (confinement.go): the same values
// choose the backend (execserver/backends), fill /healthz and the start-up log, and are what tests check. Network
// and Capabilities are reported by every backend; the rest by the backend it names, so exactly one of Local and
// Docker is set. Its JSON is one flat object. The only free text in it is for people (Warnings, notes, Summary):
// no decision reads it (TestConfinementDecisionsReadNoText).
type Confinement struct {
	Network      NetworkConfinement `json:"network"`
	Capabilities Capabilities       `json:"capabilities"`
	// Egress is the egress proxy (-net-allow), nil when commands have no network.
	Egress *EgressHealth `json:"egress,omitempty"`
	// Sandbox is the same policy as data: what a command's world is built from, and which promises hold.
	Sandbox *SandboxPolicy `json:"sandbox,omitempty"`
	// WorkspaceGuard is how commands change the workspace (workspaceguard.go); nil where the backend does not say.
	WorkspaceGuard *WorkspaceGuard `json:"workspace_guard,omitempty"`
	*LocalConfinement
	*DockerConfinement
}

// WithoutNamespaces says commands run without namespaces of their own: the local backend's fallback (a Docker
// container always has them).
func (c Confinement) WithoutNamespaces() bool {
	return c.LocalConfinement != nil && c.Mode != IsolationPIDNamespace
}

// SandboxPolicy is the policy a backend applies to every command, as data a program can check.
type SandboxPolicy struct {
	Summary    string   `json:"summary"` // one line for people
	Root       RootKind `json:"root"`
	ReadPaths  []string `json:"read_paths"`  // read and execute, as commands see them
	WritePaths []string `json:"write_paths"` // read, write and execute, as commands see them
	// Protected are the protected project paths (patterns matched at any depth of the workspace), and
	// ProtectedEnforcement how they are kept.
	Protected            []string             `json:"protected"`
	ProtectedEnforcement ProtectedEnforcement `json:"protected_enforcement"`
	User                 string               `json:"user"` // uid:gid commands run as, on the host
	Network              SandboxNetwork       `json:"network"`
	// Properties are the confinement promises of SECURITY.md's table, each with whether it holds here.
	Properties []Property `json:"properties"`
}

// Property is one confinement promise and whether it holds on this backend and mode. Names are stable keys: see
// SECURITY.md's properties table, which names the test of each. Note is for people.
type Property struct {
	Name  string `json:"name"`
	Holds bool   `json:"holds"`
	Note  string `json:"note,omitempty"`
}

// LocalConfinement is the local backend's part of Confinement.
type LocalConfinement struct {
	// Mode is the namespace mode (IsolationPIDNamespace) or the fallback without namespaces
	// (IsolationSubreaperInit).
	Mode        ProcessIsolation `json:"mode"`
	Landlock    LandlockState    `json:"landlock"`
	LandlockABI int              `json:"landlock_abi,omitempty"` // when enforced
	LandlockIPC bool             `json:"landlock_ipc"`           // Landlock's signal and abstract socket scoping
	WriteDirs   []string         `json:"write_dirs"`
	// ReadDirs are read and execute; /etc is one of them, its secrets (shadow, gshadow, ssh, sudoers, ssl/private,
	// docker, ...) masked.
	ReadDirs     []string          `json:"read_dirs"`
	Hidden       []Hidden          `json:"hidden"`
	Rlimits      map[string]uint64 `json:"rlimits"`
	ProcessLimit CgroupLimit       `json:"process_limit"` // processes and threads (pids cgroup)
	MemoryLimit  CgroupLimit       `json:"memory_limit"`  // bytes of all of a command's processes (memory cgroup)
	EnvAllowlist []string          `json:"env_allowlist"`
	Warnings     []string          `json:"warnings"` // for people
}

// DockerConfinement is the Docker backend's part of Confinement.
type DockerConfinement struct {
	BackendName  string `json:"backend"` // "docker"
	Engine       string `json:"engine"`
	APIVersion   string `json:"api_version"`
	Image        string `json:"image"`
	User         string `json:"user"`      // uid:gid
	Workspace    string `json:"workspace"` // inside the container
	ReadOnlyRoot bool   `json:"read_only_root"`
	TmpBytes     int64  `json:"tmp_bytes"` // /tmp is a tmpfs of this size
	// CacheDir is the build cache inside the container, kept between commands and keyed by the workspace's
	// device, inode and user; "" when off.
	CacheDir        string  `json:"cache_dir"`
	NoNewPrivileges bool    `json:"no_new_privileges"`
	MemoryBytes     int64   `json:"memory_bytes"`
	Swap            bool    `json:"swap"`
	PidsLimit       int64   `json:"pids_limit"`
	CPUs            float64 `json:"cpus"`
	// FreshContainer: one container per command, always removed.
	FreshContainer bool `json:"fresh_container"`
	WarmPool       int  `json:"warm_pool"`
	// LeftoverLabel is the label by which the containers a dead executor left are removed on start, under the
	// instance's lock (one executor per instance).
	LeftoverLabel string `json:"leftover_label"`
	Instance      string `json:"instance"`
	// Env are the variables set beside the image's defaults; none of the server's.
	Env                []string         `json:"env"`
	ProcessContainment ProcessIsolation `json:"process_containment"`
	Seccomp            SeccompProfile   `json:"seccomp"`
	// ModeSweep: after each command the set-user-id, set-group-id and world-write bits are cleared in the workspace.
	ModeSweep bool                 `json:"mode_sweep"`
	Protected ProtectedEnforcement `json:"protected"`
	// DiskCapBytes caps the workspace and the cache together (-1: none).
	DiskCapBytes int64 `json:"disk_cap_bytes,omitempty"`
	// MaxContainers is how many containers the total caps admit at once (-1: no total cap), from
	// TotalMemoryBytes and TotalPidsLimit.
	MaxContainers    int   `json:"max_containers,omitempty"`
	TotalMemoryBytes int64 `json:"total_memory_bytes,omitempty"`
	TotalPidsLimit   int64 `json:"total_pids_limit,omitempty"`
	// WatchdogGraceSeconds is how long after its timeout timeout(1) in each container kills a command whose
	// executor died; the network holder and waiting pool containers end when the server's attachment does.
	WatchdogGraceSeconds int `json:"watchdog_grace_seconds"`
}

// EgressHealth is the executor's egress proxy: what commands may reach, and its limits.
type EgressHealth struct {
	Allow              []string `json:"allow"`         // -net-allow entries, canonical
	DefaultPorts       []int    `json:"default_ports"` // ports a host entry without :port opens
	Proxy              string   `json:"proxy"`         // where commands reach it (HTTP_PROXY, without credentials)
	MaxConns           int      `json:"max_conns"`     // all commands together
	MaxConnsPerCommand int      `json:"max_conns_per_command"`
	IdleTimeoutSeconds int      `json:"idle_timeout_seconds"`
	MaxBytesPerCommand int64    `json:"max_bytes_per_command"` // 0: none
	ActiveConns        int      `json:"active_conns"`
	Denied             int64    `json:"denied"` // refusals since start
	// Secrets are the -secret names and the hosts each is sent to ("TOKEN@api.example.com"); never a value.
	Secrets []string `json:"secrets,omitempty"`
}
