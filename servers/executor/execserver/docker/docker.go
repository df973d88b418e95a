package docker

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/goalbox/goalbox/pkg/protocol"
	"github.com/goalbox/goalbox/servers/executor/execserver/backend"
	"github.com/goalbox/goalbox/servers/executor/execserver/egress"
	"github.com/goalbox/goalbox/servers/executor/execserver/internal/diskcap"
	"github.com/goalbox/goalbox/servers/executor/execserver/wsguard"
	"github.com/moby/moby/client"
)

// Labels that mark the containers this backend starts. A crashed server leaves its containers behind; the next
// server over the same workspace finds them by these labels and removes them before it runs anything.
const (
	labelExecutor = "goalbox.executor"
	labelInstance = "goalbox.executor.instance"
	// labelRole tells a command's container ("command") from the backend's network holder ("network",
	// network.go).
	labelRole = "goalbox.executor.role"
	// labelOwner is the uid of the server that started the container: two servers of different users never sweep
	// each other's containers, even with the same instance name (each has its own lock: state_unix.go).
	labelOwner = "goalbox.executor.owner"
)

// Paths inside the container.
const (
	containerWorkspace = "/workspace"
	containerCache     = "/cache"
	containerShm       = "/dev/shm" // the layer's, where there is one (layer_linux.go)
)

// Defaults for Config's limits.
const (
	defaultDockerMemory    = 2 << 30   // compilers (cc1plus, the Go linker) need room
	defaultDockerPIDs      = 512       // enough for make -j and go test, far below a fork bomb's appetite
	defaultDockerTmpfsSize = 512 << 20 // go test puts its binaries in /tmp
	defaultDockerMaxCPUs   = 2.0
	defaultTotalPIDs       = 8192
)

// Config configures the docker backend. Zero values take the defaults documented on each field. The tags are the
// executor command's flags for the fields it takes as they are (package envflag); servers/executor/assemble fills
// in the workspace and the settings both backends share.
type Config struct {
	// Image every command runs in. Default DefaultImage (goalbox/executor:latest, built from
	// deploy/Dockerfile.exec). It must exist locally: the backend never pulls.
	Image string `env:"IMAGE" flag:"image" usage:"docker backend: the image every command runs in, never pulled (default goalbox/executor:latest: docker build -f deploy/Dockerfile.exec -t goalbox/executor:latest .)"`
	// Host is the Docker Engine's address (unix:///..., tcp://..., npipe://...). Default: EngineHost, which is
	// DOCKER_HOST, else the current docker context's endpoint, else the platform's default socket.
	Host string
	// WorkspaceHostDir is the workspace's real path on the Docker host, bind-mounted read-write at /workspace
	// (the server's pathguard Guard.Dir()). Required.
	WorkspaceHostDir string
	// User is the numeric "uid:gid" commands run as ("uid" alone means uid:uid). Default: the owner of
	// WorkspaceHostDir, so that files a command writes belong to the same user as the rest of the workspace and
	// stay readable and writable by the filesystem server. Root (uid 0) is refused, configured or found.
	User string `env:"DOCKER_USER" flag:"docker-user" usage:"docker backend: numeric uid[:gid] commands run as; default the workspace's owner, never root"`
	// Memory is the memory limit in bytes, swap included (swap is off). Default 2 GiB.
	Memory int64
	// PIDs limits the number of processes and threads in the container. Default 512.
	PIDs int64
	// CPUs is how many CPUs a command may use. Default: the host's CPUs, at most 2.
	CPUs float64 `env:"CPUS" flag:"cpus" usage:"docker backend: CPUs a command may use; default the host's, at most 2"`
	// TmpfsSize is the size of the tmpfs at /tmp in bytes; it counts against Memory. Default 512 MiB.
	TmpfsSize int64
	// CacheHostDir is the host folder under which the build caches (GOCACHE, npm, XDG: mounted at /cache) live
	// that survive between commands; without them every `go test` rebuilds the standard library. The cache itself
	// is CacheHostDir/<instance>/cache-<workspace device.inode>-<uid.gid>: keyed by the workspace's identity and
	// its user, so a workspace made again at the same path (perhaps by someone else) never inherits the old one's
	// cache, which is removed at the next start. Every folder on the way must be owned by root or the server's user
	// and writable by nobody else (safedir_unix.go). Default: the server's state folder (a root server's own
	// /var/cache/goalbox/docker, never $HOME; otherwise the user's cache folder, e.g. ~/.cache/goalbox/docker).
	// "-" turns the cache off.
	CacheHostDir string
	// Instance names this server's containers (label goalbox.executor.instance) and its state folder. One
	// executor per instance at a time: a second one is refused (a lock in the state folder), and what the start-up
	// sweep removes (containers of the instance, its control folders) can only belong to a dead one. Default:
	// derived from WorkspaceHostDir and the server's uid, so two servers over different workspaces, or of different
	// users, never share one.
	Instance string `env:"INSTANCE" flag:"instance" usage:"docker backend: the name of this executor's containers and state; one executor per instance at a time (default derived from the workspace's path and the server's uid)"`
	// Labels are added to every container (the backend's own labels win).
	Labels map[string]string
	// WarmPool is how many containers are kept started ahead of commands (see pool.go). 0, the default,
	// starts each command's container when the command comes.
	WarmPool int `env:"WARM_POOL" flag:"warm-pool" usage:"docker backend: containers kept started ahead of commands, each still used once"`
	// MaxWorkspaceBytes is the disk cap: a command that takes the workspace and the cache together past it is
	// killed and told why (measured as the local backend measures: package diskcap). /tmp is a tmpfs of TmpfsSize,
	// counted against Memory. Default 16 GiB, as the local backend's; -1 none.
	MaxWorkspaceBytes int64
	// MaxWorkspaceInodes caps the files, folders and links of the workspace and the cache together, at the act
	// where commands work on layers (layer_linux.go). Default 1,000,000, as the local backend's; -1 none.
	MaxWorkspaceInodes int64
	// NoWorkspaceLayer lets commands write the workspace and the cache themselves even where the server could give
	// them layers (the read-only binds, the sweep and the polled disk cap): for comparison and tests only.
	NoWorkspaceLayer bool
	// TotalMemory and TotalPIDs bound all of the backend's containers together (commands, processes and the warm
	// pool): a container is started only while the sum of the containers' memory (and pids) limits stays within
	// them; past that a command waits up to slotWait for one to end, then is refused. Defaults: the Engine's
	// memory, and 8192 pids; -1 none.
	TotalMemory int64
	TotalPIDs   int64
	// Logger receives start-up and clean-up messages. Default slog.Default().
	Logger *slog.Logger

	// stateBase replaces defaultStateBase in tests.
	stateBase string
	// Network opens the hosts Network.Allow names (-net-allow) through the egress proxy (egress.go); the
	// zero value keeps network none. Needs a root server on the Docker host: New refuses it elsewhere.
	Network egress.Config
}

// dockerBackend runs each command in a fresh, confined container. It holds no per-command state, so Run may be
// called concurrently.
type dockerBackend struct {
	cli       *client.Client
	cfg       Config
	uid, gid  int
	ws        *os.Root          // to check that a command's folder is a folder in the workspace before a container is used
	labels    map[string]string // of the command containers
	netLabels map[string]string // of the network holder
	api       string            // negotiated Engine API version
	engine    string            // Engine version, for Confinement
	namePref  string
	log       *slog.Logger
	tmpfsOpts string
	ctlRoot   string // host folder (0700) holding the per-container control folders
	stateDir  string // the instance's state folder (lock, control folders), checked by openSafeDir
	lock      *instanceLock
	cacheDir  string    // the cache folder mounted at /cache, "" when off
	wsFD      int       // the workspace opened at start: every host-side look at it goes through this (workspace_unix.go); -1 when not open
	wsID      [2]uint64 // the workspace's device and inode
	// mountVerify: the server sees into its containers and checks each one's mounts before giving it a command
	// (workspace_linux.go).
	mountVerify bool
	// skipPathCheck leaves out the check of the workspace's path before a command, for the test that shows the
	// mount verification holds on its own.
	skipPathCheck bool
	seccomp       string // the security option carrying the profile, "" for the Engine's default
	disk          *diskcap.Meter
	slots         chan struct{}              // a token per container running; nil: no total cap
	pool          *warmPool                  // nil without a warm pool
	lastProt      atomic.Pointer[protection] // the protected set of the latest command, for the warm pool
	sweepMu       sync.Mutex                 // one mode sweep of the workspace at a time
	lastSweep     time.Time                  // when the latest sweep began; under sweepMu
	net           networkHolder
	reaper        *reaper // the watchdog process (reaper.go)
	// cgroupParent is the cgroup every container is started under, limited to the total caps (cgroup_linux.go);
	// "" where the server cannot make one. cgroupDirs are its folders in the host's hierarchies.
	cgroupParent string
	cgroupDirs   []string
	// layered: each container works on a layer of the workspace and the cache (layer_linux.go); layerNote says
	// why not when it does not.
	layered       bool
	layerNote     string
	fallbackGuard wsguard.Fallback // the default guard, for a request without Apply
	cacheGuard    *wsguard.Guard   // applies the cache's layer: no protected paths, the same rules otherwise
	egress        *dockerEgress    // nil without -net-allow
	closeOnce     sync.Once
	closeErr      error
}

// New connects to the Docker Engine (Config.Host: by default as the docker CLI finds it, see EngineHost),
// checks the image exists, and removes containers left by an earlier server of the same instance.
func New(ctx context.Context, cfg Config) (backend.Backend, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	uid, gid, err := parseDockerUser(cfg.User)
	if err != nil {
		return nil, err
	}
	ws, err := os.OpenRoot(cfg.WorkspaceHostDir)
	if err != nil {
		return nil, fmt.Errorf("docker backend: open workspace: %w", err)
	}
	b := &dockerBackend{cfg: cfg, uid: uid, gid: gid, ws: ws, wsFD: -1, log: cfg.Logger, disk: diskcap.NewMeter()}
	if err := b.start(ctx); err != nil {
		b.Close()
		return nil, err
	}
	return b, nil
}

func (cfg *Config) setDefaults() error {
	cfg.Image = cmp.Or(cfg.Image, DefaultImage)
	if cfg.WorkspaceHostDir == "" || !filepath.IsAbs(cfg.WorkspaceHostDir) {
		return errors.New("docker backend: the workspace must be an absolute host path")
	}
	wsDir, err := filepath.EvalSymlinks(cfg.WorkspaceHostDir)
	if err != nil {
		return fmt.Errorf("docker backend: workspace: %w", err)
	}
	cfg.WorkspaceHostDir = wsDir
	fi, err := os.Stat(wsDir)
	if err != nil {
		return fmt.Errorf("docker backend: workspace: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("docker backend: workspace %s is not a folder", wsDir)
	}
	if cfg.User == "" {
		uid, gid, ok := fileOwner(fi)
		if !ok {
			return errors.New("docker backend: cannot find the workspace's owner; set the user explicitly")
		}
		cfg.User = fmt.Sprintf("%d:%d", uid, gid)
		if uid == 0 {
			return fmt.Errorf("docker backend: the workspace %s is owned by root and commands never run as root; "+
				"give it to an unprivileged user (chown -R 1000:1000 %s) or configure a non-root uid:gid", wsDir, wsDir)
		}
	}
	cfg.Memory = cmp.Or(cfg.Memory, defaultDockerMemory)
	cfg.PIDs = cmp.Or(cfg.PIDs, defaultDockerPIDs)
	cfg.CPUs = cmp.Or(cfg.CPUs, min(float64(runtime.NumCPU()), defaultDockerMaxCPUs))
	cfg.TmpfsSize = cmp.Or(cfg.TmpfsSize, defaultDockerTmpfsSize)
	switch {
	case cfg.Memory < 16<<20:
		return fmt.Errorf("docker backend: memory limit %d bytes is below the 16 MiB minimum", cfg.Memory)
	case cfg.PIDs < 8:
		return fmt.Errorf("docker backend: pids limit %d is below the minimum of 8", cfg.PIDs)
	case cfg.CPUs < 0.01:
		return fmt.Errorf("docker backend: cpus %g is below the minimum of 0.01", cfg.CPUs)
	case cfg.TmpfsSize < 1<<20:
		return fmt.Errorf("docker backend: tmpfs size %d bytes is below the 1 MiB minimum", cfg.TmpfsSize)
	case cfg.WarmPool < 0 || cfg.WarmPool > 16:
		return fmt.Errorf("docker backend: warm pool %d is out of range: 0 (off) to 16", cfg.WarmPool)
	}
	cfg.Instance = cmp.Or(cfg.Instance, instanceOf(wsDir, os.Geteuid()))
	if !instanceName.MatchString(cfg.Instance) {
		return fmt.Errorf("docker backend: instance %q: use letters, digits, '_', '.' and '-', starting with a letter or digit", cfg.Instance)
	}
	cfg.MaxWorkspaceBytes = cmp.Or(cfg.MaxWorkspaceBytes, diskcap.DefaultMax)
	cfg.MaxWorkspaceInodes = cmp.Or(cfg.MaxWorkspaceInodes, diskcap.DefaultMaxInodes)
	cfg.TotalPIDs = cmp.Or(cfg.TotalPIDs, defaultTotalPIDs)
	if cfg.CacheHostDir != "" && cfg.CacheHostDir != "-" && !filepath.IsAbs(cfg.CacheHostDir) {
		return errors.New("docker backend: the cache folder must be an absolute host path")
	}
	cfg.Logger = cmp.Or(cfg.Logger, slog.Default())
	return nil
}

// DefaultInstance is the instance (the goalbox.executor.instance label of its containers) of a backend over the
// workspace at dir when none is configured, for a server of the current user: a hash of the workspace's real path
// and the server's uid.
func DefaultInstance(dir string) (string, error) {
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", err
	}
	return instanceOf(real, os.Geteuid()), nil
}

func instanceOf(realDir string, uid int) string {
	sum := sha256.Sum256([]byte(realDir + "\x00" + strconv.Itoa(uid)))
	return hex.EncodeToString(sum[:6])
}

// parseDockerUser accepts "uid" or "uid:gid" (backend.ParseRunAs): names would be looked up in the image's /etc/passwd,
// which says nothing about who owns the files on the host. Root is refused.
func parseDockerUser(s string) (uid, gid int, err error) {
	uid, gid, err = backend.ParseRunAs(s)
	if err != nil {
		return 0, 0, fmt.Errorf("docker backend: %w", err)
	}
	return uid, gid, nil
}

// start takes the instance's state, connects to the engine, checks it and the image, and removes leftovers of an
// earlier server. New closes the backend when it fails.
func (b *dockerBackend) start(ctx context.Context) error {
	if err := b.openWorkspaceFD(); err != nil {
		return err
	}
	// The lock first: everything after it may remove what a dead executor of this instance left.
	if err := b.prepareState(); err != nil {
		return err
	}
	var err error
	if b.seccomp, err = seccompProfile(); err != nil {
		return fmt.Errorf("docker backend: seccomp profile: %w", err)
	}
	if b.seccomp != "" {
		b.seccomp = "seccomp=" + b.seccomp
	}
	if b.cli, err = newClient(b.cfg.Host); err != nil {
		return fmt.Errorf("docker backend: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	ping, err := b.cli.Ping(ctx, client.PingOptions{NegotiateAPIVersion: true})
	if err != nil {
		return fmt.Errorf("docker backend: the Docker Engine does not answer at %s (%v); start it (Docker Desktop, Colima, "+
			"or dockerd: scripts/setup-docker.sh on Debian), or point DOCKER_HOST at one", b.cli.DaemonHost(), err)
	}
	b.api = b.cli.ClientVersion()
	if v, err := b.cli.ServerVersion(ctx, client.ServerVersionOptions{}); err == nil {
		b.engine = v.Version
	} else {
		b.engine = "unknown (API " + ping.APIVersion + ")"
	}
	if _, err := b.cli.ImageInspect(ctx, b.cfg.Image); err != nil {
		if cerrdefs.IsNotFound(err) {
			return imageMissing(b.cfg.Image)
		}
		return fmt.Errorf("docker backend: inspect image %s: %w", b.cfg.Image, err)
	}

	if err := b.startReaper(); err != nil {
		return err
	}
	b.labels = map[string]string{}
	maps.Copy(b.labels, b.cfg.Labels)
	b.labels[labelExecutor] = "1"
	b.labels[labelInstance] = b.cfg.Instance
	b.labels[labelOwner] = strconv.Itoa(os.Geteuid())
	b.netLabels = maps.Clone(b.labels)
	b.labels[labelRole] = roleCommand
	b.netLabels[labelRole] = roleNetwork
	b.namePref = "goalbox-exec-" + b.cfg.Instance + "-"
	b.tmpfsOpts = fmt.Sprintf("rw,exec,nosuid,nodev,mode=1777,size=%d", b.cfg.TmpfsSize)

	n, err := b.removeLeftovers(ctx)
	if err != nil {
		return err
	}
	if n > 0 {
		b.log.Warn("docker backend removed containers left by an earlier server", "count", n, "instance", b.cfg.Instance)
	}
	if err := b.setSlots(ctx); err != nil {
		return err
	}
	if parent, why := b.setupTotalsCgroup(ctx); why != nil {
		b.log.Info("docker backend: the total caps are kept by counting containers only: no cgroup above them", "reason", why)
	} else {
		b.cgroupParent = parent
	}
	if err := b.startNetwork(ctx); err != nil {
		return err
	}
	b.mountVerify = b.probeMountVerify(ctx, b.net.current())
	if err := b.startLayers(ctx); err != nil {
		return err
	}
	if err := b.startEgress(ctx); err != nil {
		return err
	}
	if b.cfg.WarmPool > 0 {
		b.startPool()
	}
	return nil
}

// removeLeftovers force-removes every container of this instance and server user, network holders included. It
// runs before the backend serves and with the instance's lock held, so none of them can be a command of this
// server or of another live one: they are a dead executor's.
func (b *dockerBackend) removeLeftovers(ctx context.Context) (int, error) {
	list, err := b.cli.ContainerList(ctx, client.ContainerListOptions{
		All: true,
		Filters: make(client.Filters).Add("label", labelExecutor+"=1", labelInstance+"="+b.cfg.Instance,
			labelOwner+"="+strconv.Itoa(os.Geteuid())),
	})
	if err != nil {
		return 0, fmt.Errorf("docker backend: list leftover containers: %w", err)
	}
	for _, c := range list.Items {
		if _, err := b.cli.ContainerRemove(ctx, c.ID, client.ContainerRemoveOptions{Force: true}); err != nil && !cerrdefs.IsNotFound(err) {
			return 0, fmt.Errorf("docker backend: remove leftover container %.12s: %w", c.ID, err)
		}
	}
	return len(list.Items), nil
}

func (b *dockerBackend) Name() string { return "docker" }

func (b *dockerBackend) Confinement() protocol.Confinement {
	cache := ""
	if b.cacheDir != "" {
		cache = containerCache
	}
	maxContainers := -1
	if b.slots != nil {
		maxContainers = cap(b.slots)
	}
	var env []string
	for _, kv := range b.containerConfig().Env {
		name, _, _ := strings.Cut(kv, "=")
		env = append(env, name)
	}
	return protocol.Confinement{
		Egress:         b.egress.health(),
		Network:        b.network(),
		Capabilities:   protocol.CapabilitiesNone,
		WorkspaceGuard: b.workspaceGuard(),
		DockerConfinement: &protocol.DockerConfinement{
			BackendName:          "docker",
			Engine:               b.engine,
			APIVersion:           b.api,
			Image:                b.cfg.Image,
			User:                 fmt.Sprintf("%d:%d", b.uid, b.gid),
			Workspace:            containerWorkspace,
			ReadOnlyRoot:         true,
			TmpBytes:             b.cfg.TmpfsSize,
			CacheDir:             cache,
			NoNewPrivileges:      true,
			MemoryBytes:          b.cfg.Memory,
			PidsLimit:            b.cfg.PIDs,
			CPUs:                 b.cfg.CPUs,
			FreshContainer:       true,
			WarmPool:             b.cfg.WarmPool,
			LeftoverLabel:        labelInstance + "=" + b.cfg.Instance,
			Instance:             b.cfg.Instance,
			Env:                  env,
			ProcessContainment:   protocol.IsolationPIDNamespace,
			Seccomp:              seccompReport,
			ModeSweep:            true,
			Protected:            b.protectedMode(),
			DiskCapBytes:         b.cfg.MaxWorkspaceBytes,
			MaxContainers:        maxContainers,
			TotalMemoryBytes:     b.cfg.TotalMemory,
			TotalPidsLimit:       b.cfg.TotalPIDs,
			WatchdogGraceSeconds: int(watchdogGrace.Seconds()),
		},
	}
}

// Close stops the warm pool, removes its containers and the network holder, and releases the client. It may be called more than once.
func (b *dockerBackend) Close() error {
	b.closeOnce.Do(func() { b.closeErr = b.close() })
	return b.closeErr
}

func (b *dockerBackend) close() error {
	b.closePool()
	b.closeNetwork()
	b.egress.close()
	b.reaper.close()
	b.removeTotalsCgroup()
	var err error
	b.fallbackGuard.Close()
	if b.cacheGuard != nil {
		b.cacheGuard.Close()
	}
	if b.ctlRoot != "" {
		err = errors.Join(unmountLeftovers(b.ctlRoot), os.RemoveAll(b.ctlRoot))
	}
	if b.wsFD >= 0 {
		closeFD(b.wsFD)
	}
	err = errors.Join(err, b.lock.release())
	if b.cli != nil {
		err = errors.Join(err, b.cli.Close())
	}
	if b.ws != nil {
		err = errors.Join(err, b.ws.Close())
	}
	return err
}

// instanceName is what a container name (which carries the instance) allows.
var instanceName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)

// containerName is unique per command and carries the instance, so `docker ps` shows whose container it is.
func (b *dockerBackend) containerName() string {
	var r [6]byte
	_, _ = rand.Read(r[:])
	return b.namePref + hex.EncodeToString(r[:])
}
