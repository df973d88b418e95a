package docker

import (
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
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/goalbox/goalbox/pkg/protocol"
	"github.com/goalbox/goalbox/servers/executor/execserver"
	"github.com/goalbox/goalbox/servers/executor/execserver/egress"
	"github.com/moby/moby/client"
)

// Labels that mark the containers this backend starts. A crashed server leaves its containers behind; the next
// server over the same workspace finds them by these labels and removes them before it runs anything.
const (
	labelExecutor = "goalbox.executor"
	labelInstance = "goalbox.executor.instance"
	// labelRole tells a command's container ("command") from the backend's network holder ("network",
	// docker_network.go).
	labelRole = "goalbox.executor.role"
)

// Paths inside the container.
const (
	containerWorkspace = "/workspace"
	containerCache     = "/cache"
)

// Defaults for Config's limits.
const (
	defaultDockerMemory    = 2 << 30   // compilers (cc1plus, the Go linker) need room
	defaultDockerPIDs      = 512       // enough for make -j and go test, far below a fork bomb's appetite
	defaultDockerTmpfsSize = 512 << 20 // go test puts its binaries in /tmp
	defaultDockerMaxCPUs   = 2.0
)

// Config configures the docker backend. Zero values take the defaults documented on each field.
type Config struct {
	// Image every command runs in. Default DefaultImage (goalbox/executor:latest, built from
	// deploy/Dockerfile.exec). It must exist locally: the backend never pulls.
	Image string
	// Host is the Docker Engine's address (unix:///..., tcp://..., npipe://...). Default: EngineHost, which is
	// DOCKER_HOST, else the current docker context's endpoint, else the platform's default socket.
	Host string
	// WorkspaceHostDir is the workspace's real path on the Docker host, bind-mounted read-write at /workspace
	// (the server's pathguard Guard.Dir()). Required.
	WorkspaceHostDir string
	// User is the numeric "uid:gid" commands run as ("uid" alone means uid:uid). Default: the owner of
	// WorkspaceHostDir, so that files a command writes belong to the same user as the rest of the workspace and
	// stay readable and writable by the filesystem server. Root (uid 0) is refused, configured or found.
	User string
	// Memory is the memory limit in bytes, swap included (swap is off). Default 2 GiB.
	Memory int64
	// PIDs limits the number of processes and threads in the container. Default 512.
	PIDs int64
	// CPUs is how many CPUs a command may use. Default: the host's CPUs, at most 2.
	CPUs float64
	// TmpfsSize is the size of the tmpfs at /tmp in bytes; it counts against Memory. Default 512 MiB.
	TmpfsSize int64
	// CacheHostDir is a host folder mounted at /cache for build caches (GOCACHE, npm, XDG) that survive between
	// commands; without it every `go test` rebuilds the standard library. Default: a folder under the user's cache
	// folder named for the instance, created on start and given to User. "-" turns the cache off.
	CacheHostDir string
	// Instance names this server's containers (label goalbox.executor.instance); containers with the same
	// instance left by an earlier server are removed on start. Default: derived from WorkspaceHostDir, so two
	// servers over different workspaces never remove each other's containers.
	Instance string
	// Labels are added to every container (the backend's own labels win).
	Labels map[string]string
	// WarmPool is how many containers are kept started ahead of commands (see docker_pool.go). 0, the default,
	// starts each command's container when the command comes.
	WarmPool int
	// Logger receives start-up and clean-up messages. Default slog.Default().
	Logger *slog.Logger
	// Network opens the hosts Network.Allow names (-net-allow) through the egress proxy (docker_egress.go); the
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
	ctlRoot   string    // host folder (0700) holding the per-container control folders
	pool      *warmPool // nil without a warm pool
	net       networkHolder
	egress    *dockerEgress // nil without -net-allow
	closeOnce sync.Once
	closeErr  error
}

// New connects to the Docker Engine (Config.Host: by default as the docker CLI finds it, see EngineHost),
// checks the image exists, and removes containers left by an earlier server of the same instance.
func New(ctx context.Context, cfg Config) (execserver.Backend, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	uid, gid, err := parseDockerUser(cfg.User)
	if err != nil {
		return nil, err
	}
	if err := prepareCacheDir(cfg.CacheHostDir, uid, gid); err != nil {
		return nil, err
	}
	ws, err := os.OpenRoot(cfg.WorkspaceHostDir)
	if err != nil {
		return nil, fmt.Errorf("docker backend: open workspace: %w", err)
	}
	cli, err := newClient(cfg.Host)
	if err != nil {
		ws.Close()
		return nil, fmt.Errorf("docker backend: %w", err)
	}
	b := &dockerBackend{cli: cli, cfg: cfg, uid: uid, gid: gid, ws: ws, log: cfg.Logger}
	if err := b.start(ctx); err != nil {
		b.Close()
		return nil, err
	}
	return b, nil
}

func (cfg *Config) setDefaults() error {
	if cfg.Image == "" {
		cfg.Image = DefaultImage
	}
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
	if cfg.Memory == 0 {
		cfg.Memory = defaultDockerMemory
	}
	if cfg.PIDs == 0 {
		cfg.PIDs = defaultDockerPIDs
	}
	if cfg.CPUs == 0 {
		cfg.CPUs = min(float64(runtime.NumCPU()), defaultDockerMaxCPUs)
	}
	if cfg.TmpfsSize == 0 {
		cfg.TmpfsSize = defaultDockerTmpfsSize
	}
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
	if cfg.Instance == "" {
		cfg.Instance = instanceOf(wsDir)
	}
	if !instanceName.MatchString(cfg.Instance) {
		return fmt.Errorf("docker backend: instance %q: use letters, digits, '_', '.' and '-', starting with a letter or digit", cfg.Instance)
	}
	if cfg.CacheHostDir == "" {
		dir, err := os.UserCacheDir()
		if err != nil {
			return fmt.Errorf("docker backend: no cache folder (%v); set one or turn the cache off with \"-\"", err)
		}
		cfg.CacheHostDir = filepath.Join(dir, "goalbox", "docker-cache", cfg.Instance)
	}
	if cfg.CacheHostDir != "-" && !filepath.IsAbs(cfg.CacheHostDir) {
		return errors.New("docker backend: the cache folder must be an absolute host path")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return nil
}

// DefaultInstance is the instance (the goalbox.executor.instance label of its containers) of a backend over the
// workspace at dir when none is configured: a hash of the workspace's real path.
func DefaultInstance(dir string) (string, error) {
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", err
	}
	return instanceOf(real), nil
}

func instanceOf(realDir string) string {
	sum := sha256.Sum256([]byte(realDir))
	return hex.EncodeToString(sum[:6])
}

// parseDockerUser accepts "uid" or "uid:gid" (execserver.ParseRunAs): names would be looked up in the image's /etc/passwd,
// which says nothing about who owns the files on the host. Root is refused.
func parseDockerUser(s string) (uid, gid int, err error) {
	uid, gid, err = execserver.ParseRunAs(s)
	if err != nil {
		return 0, 0, fmt.Errorf("docker backend: %w", err)
	}
	return uid, gid, nil
}

// prepareCacheDir makes the cache folder and gives it to the command user, who must be able to write in it.
func prepareCacheDir(dir string, uid, gid int) error {
	if dir == "-" {
		return nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("docker backend: cache folder: %w", err)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("docker backend: cache folder: %w", err)
	}
	if ouid, ogid, ok := fileOwner(fi); ok && hasChown && (ouid != uid || ogid != gid) {
		if err := os.Chown(dir, uid, gid); err != nil {
			return fmt.Errorf("docker backend: give the cache folder %s to %d:%d: %w", dir, uid, gid, err)
		}
	}
	return nil
}

// start checks the engine and the image, and removes leftovers of an earlier server.
func (b *dockerBackend) start(ctx context.Context) error {
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

	b.labels = maps.Clone(b.cfg.Labels)
	if b.labels == nil {
		b.labels = map[string]string{}
	}
	b.labels[labelExecutor] = "1"
	b.labels[labelInstance] = b.cfg.Instance
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
	if b.ctlRoot, err = os.MkdirTemp("", b.ctlPrefix()); err != nil {
		return fmt.Errorf("docker backend: control folder: %w", err)
	}
	if err := b.startNetwork(ctx); err != nil {
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

// removeLeftovers force-removes every container of this instance, network holders included. It runs before the
// backend serves, so none of them can be a command of this server.
func (b *dockerBackend) removeLeftovers(ctx context.Context) (int, error) {
	list, err := b.cli.ContainerList(ctx, client.ContainerListOptions{
		All:     true,
		Filters: make(client.Filters).Add("label", labelExecutor+"=1", labelInstance+"="+b.cfg.Instance),
	})
	if err != nil {
		return 0, fmt.Errorf("docker backend: list leftover containers: %w", err)
	}
	for _, c := range list.Items {
		if _, err := b.cli.ContainerRemove(ctx, c.ID, client.ContainerRemoveOptions{Force: true}); err != nil && !cerrdefs.IsNotFound(err) {
			return 0, fmt.Errorf("docker backend: remove leftover container %.12s: %w", c.ID, err)
		}
	}
	// Their control folders (see docker_container.go) went with the crash too.
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), b.ctlPrefix()+"*"))
	for _, d := range dirs {
		if err := os.RemoveAll(d); err != nil {
			b.log.Warn("docker backend: remove leftover control folder", "err", err)
		}
	}
	return len(list.Items), nil
}

func (b *dockerBackend) Name() string { return "docker" }

func (b *dockerBackend) Confinement() protocol.Confinement {
	cache := "off"
	if b.cfg.CacheHostDir != "-" {
		cache = containerCache
	}
	return protocol.Confinement{
		Egress:       b.egress.health(),
		Network:      b.networkTextFor(),
		Capabilities: "all dropped",
		DockerConfinement: &protocol.DockerConfinement{
			BackendName:        "docker",
			Engine:             b.engine,
			APIVersion:         b.api,
			Image:              b.cfg.Image,
			User:               fmt.Sprintf("%d:%d", b.uid, b.gid),
			Workspace:          containerWorkspace,
			ReadOnlyRoot:       true,
			Tmp:                fmt.Sprintf("tmpfs, %d MiB", b.cfg.TmpfsSize>>20),
			Cache:              cache,
			NoNewPrivileges:    true,
			MemoryBytes:        b.cfg.Memory,
			Swap:               "off",
			PidsLimit:          b.cfg.PIDs,
			CPUs:               b.cfg.CPUs,
			FreshContainer:     "one per command, always removed",
			WarmPool:           b.cfg.WarmPool,
			LeftoverCleanup:    "on start, by label " + labelInstance + "=" + b.cfg.Instance,
			Instance:           b.cfg.Instance,
			Environment:        "image defaults plus HOME, TMPDIR and cache variables; none of the server's",
			ProcessContainment: "PID namespace: every process dies with the container",
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
	var err error
	if b.ctlRoot != "" {
		err = os.RemoveAll(b.ctlRoot)
	}
	if b.cli != nil {
		err = errors.Join(err, b.cli.Close())
	}
	if b.ws != nil {
		err = errors.Join(err, b.ws.Close())
	}
	return err
}

// ctlPrefix names the host folders that hold this instance's control folders. '=' cannot occur in an instance, so
// one instance's prefix never matches another's ("x=" against "x-y=").
func (b *dockerBackend) ctlPrefix() string { return "goalbox-docker-" + b.cfg.Instance + "=" }

// instanceName is what a container name (which carries the instance) allows.
var instanceName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)

// containerName is unique per command and carries the instance, so `docker ps` shows whose container it is.
func (b *dockerBackend) containerName() string {
	var r [6]byte
	_, _ = rand.Read(r[:])
	return b.namePref + hex.EncodeToString(r[:])
}
