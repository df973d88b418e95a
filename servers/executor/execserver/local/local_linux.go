package local

import (
	"cmp"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/goalbox/goalbox/pkg/protocol"
	"github.com/goalbox/goalbox/servers/executor/execserver/backend"
	"github.com/goalbox/goalbox/servers/executor/execserver/egress"
	"github.com/goalbox/goalbox/servers/executor/execserver/internal/cgroup"
	"github.com/goalbox/goalbox/servers/executor/execserver/internal/confine"
	"github.com/goalbox/goalbox/servers/executor/execserver/internal/diskcap"
	"github.com/goalbox/goalbox/servers/executor/execserver/internal/landlock"
	"github.com/goalbox/goalbox/servers/executor/execserver/internal/layer"
	"github.com/goalbox/goalbox/servers/executor/execserver/internal/proctree"
	"github.com/goalbox/goalbox/servers/executor/execserver/internal/readypool"
	"github.com/goalbox/goalbox/servers/executor/execserver/internal/rootfs"
	"github.com/goalbox/goalbox/servers/executor/execserver/internal/seccomp"
	"github.com/goalbox/goalbox/servers/executor/execserver/wsguard"
	"golang.org/x/sys/unix"
)

// killGrace is how long Run waits for output still in the pipes after the command's PID 1 or init exited.
const killGrace = 2 * time.Second

// localBackend runs commands on this machine as an unprivileged user: forked into namespaces of their own inside
// the holder's user namespace where user namespaces are permitted (nsfork_linux.go, holder_linux.go), else
// through a re-executed child init (package childinit).
type localBackend struct {
	workspace   string
	protectGen  atomic.Int64 // counts the holder's new read-only mounts (protect_linux.go)
	dirs        sandboxDirs
	policy      commandPolicy // what each command's sandbox is: decided in New, read-only after it
	maxDisk     int64         // disk cap of the workspace, home and temp together (0: none)
	disk        *diskMeter
	ns          *nsSandbox                   // the namespace mode's holder (policy.Isolation says the mode)
	nsPool      *readypool.Pool[*nsPrepared] // namespace mode: sandboxes ready for their command
	inits       *readypool.Pool[*initProc]   // fallback mode: child inits ready to run a command
	pids        *cgroup.Limit                // nil where no pids cgroup can be made
	pidsNote    string                       // why there is no process limit
	mem         *cgroup.Limit                // nil where no memory cgroup can be made
	memNote     string                       // why there is no memory limit per command
	applied     *confine.Applied
	rootPaths   [2][]string  // namespace mode: the minimal root's read-only and read-write paths (package rootfs)
	running     sync.Map     // pid → struct{}: the keeper or init of every command running now (the disk cap's scan)
	sharedCache bool         // the build cache is shared between workspaces (Config.SharedCacheDir)
	egress      *egressState // nil without -net-allow (egress_linux.go)
	logger      *slog.Logger
	// Each command's own layer of the workspace (policy.Layer; layer_linux.go, layerrun_linux.go).
	noLayer       bool                 // Config.NoWorkspaceLayer
	layerNote     string               // why commands get no layer, when they do not
	maxInodes     int64                // inode cap of the workspace, home, temp and cache together (0: none)
	fallbackGuard wsguard.Fallback     // for requests without Apply (defaultApply)
	privateGuards *layer.PrivateGuards // apply the private folders' layers, in policy.PrivateLayers' order
}

// New prepares the local backend and proves it by running one command. When namespaces cannot be
// created here, it falls back to a subreaper child init, and logs that loudly.
func New(cfg Config, logger *slog.Logger) (backend.Backend, error) {
	logger = cmp.Or(logger, slog.New(slog.DiscardHandler))
	if cfg.Workspace == "" || !filepath.IsAbs(cfg.Workspace) {
		return nil, fmt.Errorf("local backend: the workspace must be an absolute path, got %q", cfg.Workspace)
	}
	cacheDir, err := filepath.Abs(cmp.Or(cfg.CacheDir, defaultCacheDir()))
	if err != nil {
		return nil, fmt.Errorf("local backend: cache dir: %w", err)
	}
	// Open to pass through (0711), not to list: each workspace's folder inside is its run-as user's, 0700.
	if err := os.MkdirAll(cacheDir, 0o711); err != nil {
		return nil, fmt.Errorf("local backend: cache dir: %w", err)
	}
	if os.Geteuid() == 0 {
		_ = os.Chmod(cacheDir, 0o711)
	}
	if real := realPath(cacheDir); real != "" {
		cacheDir = real
	}
	if rootfs.Within(cacheDir, cfg.Workspace) || rootfs.Within(cfg.Workspace, cacheDir) {
		return nil, fmt.Errorf("local backend: the cache dir %s and the workspace must not contain each other", cacheDir)
	}
	uid, gid, handOver, err := chooseRunAs(cfg)
	if err != nil {
		return nil, err
	}
	if handOver {
		if err := refuseHandOver(cfg.Workspace); err != nil {
			return nil, fmt.Errorf("local backend: %w", err)
		}
	}
	// Descriptors the server inherited (a shell's `exec 7<secret`, a supervisor's sockets) must not reach a
	// command. Go opens its own close-on-exec; this marks the inherited ones too, for every child the server starts.
	if err := unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC); err != nil {
		logger.Warn("cannot mark inherited descriptors close-on-exec", "error", err)
	}
	var id [6]byte
	_, _ = rand.Read(id[:])
	b := &localBackend{
		workspace:   cfg.Workspace,
		dirs:        newSandboxDirs(cacheDir, cfg.Workspace, cfg.SharedCacheDir, instanceLabel(id)),
		sharedCache: cfg.SharedCacheDir != "",
		policy:      commandPolicy{Dir: cfg.Workspace, UID: uid, GID: gid, DropGroups: os.Geteuid() == 0, Landlock: protocol.LandlockOff},
		maxDisk:     totalLimit(cfg.MaxWorkspaceBytes, DefaultMaxWorkspaceBytes),
		maxInodes:   totalLimit(cfg.MaxWorkspaceInodes, DefaultMaxWorkspaceInodes),
		noLayer:     cfg.NoWorkspaceLayer,
		disk:        newDiskMeter(),
		logger:      logger,
	}
	removeStaleInstances(filepath.Dir(b.dirs.Tmp), logger)
	if err := b.dirs.create(); err != nil {
		return nil, fmt.Errorf("local backend: %w", err)
	}
	if os.Geteuid() == 0 {
		if handOver {
			logger.Info("the workspace belongs to root: giving it to the run-as user", "uid", uid, "gid", gid)
			if err := handOverTree(cfg.Workspace, uid, gid); err != nil {
				return nil, fmt.Errorf("local backend: giving the workspace to the run-as user %d:%d: %w", uid, gid, err)
			}
		}
		for _, d := range []string{filepath.Dir(filepath.Dir(b.dirs.Tmp)), b.dirs.Home, b.dirs.Tmp, b.dirs.Cache} {
			if err := ownTree(d, uid, gid); err != nil {
				return nil, fmt.Errorf("local backend: giving %s to the run-as user: %w", d, err)
			}
		}
	}
	b.policy.Env = commandEnv(b.dirs, os.Getenv)
	etcDirs, etcFiles := etcReadable()
	b.policy.Rules = landlock.Rules{
		ReadDirs:  slices.Concat(systemReadDirs, etcDirs, toolchainRoots(b.policy.Env, os.Getenv("HOME")), cfg.ExtraReadDirs),
		ReadFiles: etcFiles,
		WriteDirs: []string{cfg.Workspace, b.dirs.Home, b.dirs.Tmp, b.dirs.Cache},
		Devices:   sandboxDevices,
	}
	b.policy.Rlimits = rlimitsFor(cfg)
	if !cfg.NoLandlock {
		b.policy.Landlock = protocol.LandlockUnavailable
		if _, ok := landlock.ABI(); ok {
			b.policy.Landlock = protocol.LandlockEnforced
		}
	}

	b.pids, b.pidsNote = cgroupFor("pids", instanceLabel(id), int64(cfg.PidsLimit), DefaultPidsLimit,
		totalLimit(int64(cfg.TotalPidsLimit), DefaultTotalPidsLimit), "a fork bomb runs until the timeout", logger)
	b.mem, b.memNote = cgroupFor("memory", instanceLabel(id), cfg.MemoryLimit, DefaultMemoryLimit,
		totalLimit(cfg.TotalMemoryLimit, defaultTotalMemory()), "memory is limited per process only (RLIMIT_DATA)", logger)
	if b.pids == nil && cfg.PidsLimit >= 0 {
		// No pids cgroup (an ordinary user, a container): RLIMIT_NPROC bounds processes instead. The kernel
		// counts them per user and user namespace, so in the namespace mode the limit holds for all of this
		// backend's commands together, and in the fallback for all processes of the run-as user.
		limit := uint64(cmp.Or(cfg.PidsLimit, DefaultPidsLimit))
		b.policy.Rlimits = append(b.policy.Rlimits, confine.Rlimit{Name: "nproc", Value: limit})
		b.pidsNote = fmt.Sprintf("no pids cgroup here; RLIMIT_NPROC %d for all of this executor's commands together (namespace mode) "+
			"or all processes of the run-as user (fallback)", limit)
	}
	if b.egress, err = newEgress(cfg.Network, logger); err != nil {
		return nil, err
	}
	if err := b.egressTrust(cacheDir, instanceLabel(id)); err != nil {
		b.egress.close()
		return nil, err
	}
	var nsErr error
	if !cfg.NoNamespaces {
		b.ns, nsErr = b.startNamespaces()
		if nsErr != nil {
			logger.Warn("LOCAL BACKEND WITHOUT NAMESPACES: cannot create a user namespace and the others in it here; "+
				"falling back to a subreaper init per command, network confined by seccomp and Landlock", "error", nsErr)
		}
	}
	if !b.policy.namespaced() && b.egress != nil {
		b.egress.close()
		if nsErr == nil {
			nsErr = errors.New("namespaces turned off (-no-namespaces)")
		}
		return nil, fmt.Errorf("local backend: %s; namespaces: %v", errEgressFallback, nsErr)
	}
	if !b.policy.namespaced() {
		// Without a mount namespace nothing bridges a closed folder: the run-as user must reach every writable
		// folder itself. Say which one it cannot, rather than fail on a bare EACCES.
		for _, d := range b.policy.Rules.WriteDirs {
			if c := rootfs.ClosedAncestor(d, uid, gid); c != "" {
				return nil, fmt.Errorf("local backend: commands run as %d:%d, who cannot pass through %s on the way to %s; "+
					"without namespaces every folder on the way must be open to that user (chmod o+x), or choose -run-as / -cache-dir", uid, gid, c, d)
			}
		}
		b.policy.Isolation, b.policy.Seccomp, b.policy.Rules.NetHandled = protocol.IsolationSubreaperInit, seccomp.Policy{Fallback: true}, true
		if err := b.policy.validate(); err != nil {
			return nil, fmt.Errorf("local backend: %w", err)
		}
		b.inits = readypool.New(initPoolSize, b.spawnInit, (*initProc).discard)
		// Commands run as the server's user with nothing between them but Landlock and seccomp: make the server's
		// /proc files (environ, mem) root's, so that not even a command of the same user may read them.
		if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
			logger.Warn("cannot make the server undumpable", "error", err)
		}
	}
	applied, err := b.probe()
	if err != nil {
		_ = b.Close()
		return nil, fmt.Errorf("local backend: cannot run a command: %w", err)
	}
	if !b.policy.namespaced() {
		b.applied = applied
	}
	b.logConfinement()
	return b, nil
}

// totalLimit is a configured total (0: def, negative: none, which is 0 here).
func totalLimit(v, def int64) int64 {
	if v < 0 {
		return 0
	}
	return cmp.Or(v, def)
}

// cgroupFor makes a controller's limit (limit 0 means def, negative none), with total on the backend's parent
// cgroup, or says why there is none.
func cgroupFor(controller, instance string, limit, def, total int64, without string, logger *slog.Logger) (*cgroup.Limit, string) {
	if limit < 0 {
		return nil, "none (turned off)"
	}
	limit = cmp.Or(limit, def)
	c, err := cgroup.New(cgroup.Config{Controller: controller, Instance: instance, PerCommand: limit, Total: total,
		InstanceDead: instanceDead, Logger: logger})
	if err != nil {
		return nil, fmt.Sprintf("none: cannot create a %s cgroup here (%v); %s", controller, err, without)
	}
	return c, ""
}

// placeInCgroups puts pid into a fresh cgroup of each limit; the returned function removes them afterwards.
func (b *localBackend) placeInCgroups(pid int) (func(), error) {
	var releases []func()
	release := func() {
		for _, r := range releases {
			r()
		}
	}
	for _, c := range []*cgroup.Limit{b.pids, b.mem} {
		if c == nil {
			continue
		}
		r, err := c.Place(pid)
		if err != nil {
			release()
			return nil, err
		}
		releases = append(releases, r)
	}
	return release, nil
}

func rlimitsFor(cfg Config) []confine.Rlimit {
	r := []confine.Rlimit{{Name: "core", Value: 0}, {Name: "nofile", Value: maxOpenFiles}}
	// A limit of 0 is the default, a negative one none.
	if cfg.MemoryLimit >= 0 {
		r = append(r, confine.Rlimit{Name: "data", Value: uint64(cmp.Or(cfg.MemoryLimit, DefaultMemoryLimit))})
	}
	if cfg.FileSizeLimit >= 0 {
		r = append(r, confine.Rlimit{Name: "fsize", Value: uint64(cmp.Or(cfg.FileSizeLimit, DefaultFileSizeLimit))})
	}
	return r
}

// probe runs `true`; in fallback mode it returns what the child init applied.
func (b *localBackend) probe() (*confine.Applied, error) {
	var applied *confine.Applied
	req := backend.Request{Command: "true", Dir: ".", Timeout: 30 * time.Second, Stdout: io.Discard, Stderr: io.Discard}
	var res backend.Result
	var err error
	if b.policy.namespaced() {
		res, err = b.runNamespaced(context.Background(), req)
	} else {
		res, err = b.runWithInit(context.Background(), req, &applied)
	}
	if err != nil {
		return nil, err
	}
	if res.ExitCode != 0 || (!b.policy.namespaced() && applied == nil) {
		return nil, fmt.Errorf("the probe command `true` ended with exit code %d", res.ExitCode)
	}
	return applied, nil
}

func (b *localBackend) Name() string { return "local" }

func (b *localBackend) Close() error {
	if b.nsPool != nil {
		b.nsPool.Close()
	}
	if b.ns != nil {
		b.ns.close()
	}
	b.egress.close()
	b.privateGuards.Close() // the field stays: a command still ending reads it
	if b.inits != nil {
		b.inits.Close()
	}
	for _, c := range []*cgroup.Limit{b.pids, b.mem} {
		if c != nil {
			c.Close()
		}
	}
	return os.RemoveAll(b.dirs.Tmp)
}

// startNamespaces starts the holder and prepares the per-command fork: the namespace mode.
func (b *localBackend) startNamespaces() (*nsSandbox, error) {
	if d, err := unix.PrctlRetInt(unix.PR_GET_DUMPABLE, 0, 0, 0, 0); err == nil && d == 0 && os.Geteuid() != 0 {
		// A fallback backend in this process made it undumpable: its children's uid_map then belongs to root.
		return nil, errors.New("the process is undumpable (another backend in it runs in the fallback mode), so it cannot map a user namespace")
	}
	// The namespace mode's policy: the holder masks /etc's secrets, so /etc is one folder here (the fallback
	// lists its entries one by one); the network is the namespace's, so Landlock and seccomp leave it alone.
	p := b.policy
	p.Isolation = protocol.IsolationPIDNamespace
	rules := &p.Rules
	rules.ReadDirs = slices.DeleteFunc(slices.Clone(rules.ReadDirs), func(d string) bool { return strings.HasPrefix(d, "/etc/") })
	rules.ReadDirs = append(rules.ReadDirs, "/etc")
	rules.ReadFiles = slices.DeleteFunc(slices.Clone(rules.ReadFiles), func(f string) bool { return strings.HasPrefix(f, "/etc/") })
	p.PrivateLayers = b.privateLayers()
	if err := p.validate(); err != nil {
		return nil, err
	}
	plan := rootfs.New(rootfs.Layout{UID: p.UID, GID: p.GID, Tmp: b.dirs.Tmp, ReadDirs: rules.ReadDirs, ReadFiles: rules.ReadFiles,
		WriteDirs: rules.WriteDirs, Devices: sandboxDevices, EtcHidden: etcHidden})
	p.LayerKeeps = layerKeeps(&p, plan)
	plan.Ops = slices.Insert(plan.Ops, len(plan.Ops)-1, layerKeepOps(p.LayerKeeps, plan)...) // before the pivot
	thread := newForkThread()
	h, err := startHolder(thread, plan.Ops, &p, b.egress != nil)
	if err != nil {
		thread.close()
		return nil, err
	}
	ns := &nsSandbox{holder: h, thread: thread, policy: &p}
	if err := b.egress.attach(h.egress); err != nil {
		ns.close()
		return nil, err
	}
	b.rootPaths = plan.Paths()
	rules.ShmDir, rules.DevDir, rules.PtsDir = h.root("/dev/shm"), h.root("/dev"), h.root("/dev/pts")
	p.Layer = b.probeLayers(h, layer.Dirs(p.PrivateLayers)) // a layer per command is the namespace mode's only: the policy stays valid
	if p.Layer {
		if b.privateGuards, err = layer.OpenPrivate(layer.Dirs(p.PrivateLayers)); err != nil {
			ns.close()
			return nil, fmt.Errorf("the private folders' guards: %w", err)
		}
	}
	abi, _ := landlock.ABI()
	b.applied = &confine.Applied{
		PIDNamespace: true, MountNamespace: true, NetworkNamespace: true, PrivateProc: true, PrivateTmp: true,
		NoNewPrivs: true, Seccomp: true, CapsDropped: true, BoundingDropped: true, Rlimits: map[string]uint64{},
		Warnings: slices.Concat(plan.Warnings, h.warnings), Landlock: p.Landlock,
	}
	if p.Landlock == protocol.LandlockEnforced {
		b.applied.LandlockABI, b.applied.LandlockScoped = abi, abi >= 6
	}
	fallback := b.policy
	b.policy, b.ns = p, ns
	b.nsPool = readypool.New(nsPoolSize, func() (*nsPrepared, error) { return b.prepareNamespaced(ns) }, (*nsPrepared).discard)
	if _, err := b.probe(); err != nil {
		b.nsPool.Close()
		b.policy, b.ns, b.nsPool = fallback, nil, nil
		b.privateGuards.Close()
		b.privateGuards = nil
		ns.close()
		return nil, err
	}
	return ns, nil
}

// diskDirs are what the disk cap counts: every folder a command can keep bytes in — the workspace, its private
// home, temp and build cache. A cache shared on purpose between workspaces (SharedCacheDir: the benchmark's
// grader) is not this workspace's to count.
func (b *localBackend) diskDirs() []string {
	if b.sharedCache {
		return []string{b.workspace, b.dirs.Home, b.dirs.Tmp}
	}
	return []string{b.workspace, b.dirs.Home, b.dirs.Tmp, b.dirs.Cache}
}

// armDisk arms the disk cap's watch of a command about to start (diskcap.Meter.Arm): before it can write.
func (b *localBackend) armDisk() diskcap.Armed { return b.disk.Arm(b.maxDisk, b.diskDirs()) }

// watchDisk watches the disk cap for one command, armed before it started: its folders, and the deleted-but-open
// files of every command of this backend running now (their space is this workspace's too, and no folder shows it).
func (b *localBackend) watchDisk(ctx context.Context, armed diskcap.Armed, root int, kill func()) (stop func() (bool, int64)) {
	b.running.Store(root, struct{}{})
	stopWatch := armed.Watch(ctx, b.openDeleted, kill)
	return func() (bool, int64) {
		b.running.Delete(root)
		return stopWatch()
	}
}

// openDeleted is what the running commands' processes hold in files they deleted.
func (b *localBackend) openDeleted() int64 {
	var roots []int
	b.running.Range(func(k, _ any) bool { roots = append(roots, k.(int)); return true })
	return diskcap.OpenDeleted(roots, proctree.Children)
}

// diskKilled finishes a result for a command the disk cap killed: exit code -1 and a note at the end of stderr.
func diskKilled(req backend.Request, used, limit int64) backend.Result {
	_, _ = io.WriteString(req.Stderr, diskCapNote(used, limit))
	return backend.Result{ExitCode: -1}
}

func (b *localBackend) Run(ctx context.Context, req backend.Request) (backend.Result, error) {
	if b.policy.namespaced() {
		b.applyProtected(req)
		return b.runNamespaced(ctx, req)
	}
	return b.runWithInit(ctx, req, nil)
}

// Confinement describes what is in force: in namespace mode what the backend set up, in fallback mode what
// the probe command's init reported.
func (b *localBackend) Confinement() protocol.Confinement {
	a := b.applied
	return protocol.Confinement{
		Egress:       b.egress.health(),
		Network:      b.network(),
		Capabilities: b.capabilities(),
		LocalConfinement: &protocol.LocalConfinement{
			Mode:         b.mode(),
			Landlock:     a.Landlock,
			LandlockABI:  a.LandlockABI,
			LandlockIPC:  a.LandlockScoped,
			WriteDirs:    b.policy.Rules.WriteDirs,
			ReadDirs:     b.readDirs(),
			Hidden:       b.hidden(),
			Rlimits:      b.appliedRlimits(),
			ProcessLimit: cgroupReport(b.pids, b.pidsNote),
			MemoryLimit:  cgroupReport(b.mem, b.memNote),
			EnvAllowlist: b.envNames(),
			Warnings:     a.Warnings,
		},
		Sandbox:        b.sandboxPolicy(),
		WorkspaceGuard: b.workspaceGuard(),
	}
}

// cgroupReport is a cgroup's limit, or why there is none (c nil).
func cgroupReport(c *cgroup.Limit, why string) protocol.CgroupLimit {
	if c == nil {
		return protocol.CgroupLimit{Note: why}
	}
	return protocol.CgroupLimit{PerCommand: c.PerCommand(), Total: c.Total()}
}

func (b *localBackend) mode() protocol.ProcessIsolation {
	if !b.policy.namespaced() {
		return protocol.IsolationSubreaperInit
	}
	return protocol.IsolationPIDNamespace
}

func (b *localBackend) network() protocol.NetworkConfinement {
	a := b.applied
	switch {
	case b.policy.namespaced() && b.egress != nil:
		return protocol.NetworkEgressProxy
	case b.policy.namespaced():
		return protocol.NetworkPrivateLoopback
	case a.Seccomp && a.LandlockNet:
		return protocol.NetworkSeccompLandlock
	case a.Seccomp:
		return protocol.NetworkSeccomp
	case a.LandlockNet:
		return protocol.NetworkLandlockTCP
	}
	return protocol.NetworkUnconfined
}

func (b *localBackend) capabilities() protocol.Capabilities {
	a := b.applied
	switch {
	case !a.CapsDropped:
		return protocol.CapabilitiesKept
	case !b.policy.namespaced() && !a.BoundingDropped:
		return protocol.CapabilitiesBoundingKept
	}
	return protocol.CapabilitiesNone
}

// appliedRlimits are the limits commands get: in fallback mode what the child init reported; else the configured
// ones, lowered where the server's own hard limit is lower (limits are only ever lowered).
func (b *localBackend) appliedRlimits() map[string]uint64 {
	if !b.policy.namespaced() {
		return b.applied.Rlimits
	}
	rl := map[string]uint64{}
	for _, r := range b.policy.Rlimits {
		rl[r.Name] = r.Value
		var own unix.Rlimit
		if unix.Getrlimit(confine.RlimitByName[r.Name], &own) == nil && own.Max < r.Value {
			rl[r.Name] = own.Max
		}
	}
	return rl
}

// readDirs are the read folders with /etc as one, once (the fallback's policy lists its entries one by one, the
// namespace mode's has /etc itself).
func (b *localBackend) readDirs() []string {
	var dirs []string
	for _, d := range b.policy.Rules.ReadDirs {
		if d != "/etc" && !strings.HasPrefix(d, "/etc/") {
			dirs = append(dirs, d)
		}
	}
	return append(dirs, "/etc")
}

func (b *localBackend) hidden() []protocol.Hidden {
	a := b.applied
	hidden := []protocol.Hidden{}
	if b.policy.namespaced() || a.PrivateProc {
		hidden = append(hidden, protocol.HiddenProcesses)
	}
	if a.MountNamespace {
		hidden = append(hidden, protocol.HiddenHostTree, protocol.HiddenShm)
	}
	if a.PrivateTmp {
		hidden = append(hidden, protocol.HiddenTmp)
	}
	return hidden
}

// envNames are the names of the variables commands get (the allowlist).
func (b *localBackend) envNames() []string {
	names := make([]string, 0, len(b.policy.Env))
	for _, kv := range b.policy.Env {
		k, _, _ := strings.Cut(kv, "=")
		names = append(names, k)
	}
	if b.egress != nil {
		names = append(names, egress.ProxyVars...)
	}
	return names
}

func (b *localBackend) logConfinement() {
	c := b.Confinement()
	b.logger.Info("local backend confinement", "mode", c.Mode, "network", c.Network,
		"landlock", c.Landlock, "landlock_abi", c.LandlockABI, "capabilities", c.Capabilities, "rlimits", c.Rlimits, "process_limit", c.ProcessLimit,
		"memory_limit", c.MemoryLimit, "write_dirs", c.WriteDirs, "env", c.EnvAllowlist)
	if !b.policy.namespaced() {
		b.logger.Warn("NO NAMESPACES: commands run under a subreaper init per command (slower: a re-exec each); " +
			"/proc shows host processes, host sockets under /run stay reachable, /tmp is the host's (not writable)")
	}
	if b.applied.Landlock != protocol.LandlockEnforced {
		b.logger.Warn("NO LANDLOCK: commands can read and write anywhere the server's user can", "landlock", b.applied.Landlock)
	}
	if b.pids == nil && !slices.ContainsFunc(b.policy.Rlimits, func(r confine.Rlimit) bool { return r.Name == "nproc" }) {
		b.logger.Warn("NO PROCESS LIMIT: " + b.pidsNote)
	}
	if b.mem == nil {
		b.logger.Warn("NO MEMORY LIMIT PER COMMAND: " + b.memNote)
	}
	for _, w := range b.applied.Warnings {
		b.logger.Warn("confinement: " + w)
	}
}
