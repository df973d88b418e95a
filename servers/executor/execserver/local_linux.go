package execserver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// killGrace is how long Run waits for output still in the pipes after the command's PID 1 or init exited.
const killGrace = 2 * time.Second

// initKillGrace is how long a child init (fallback mode) gets to kill its descendants after it was told to, before
// it is killed itself. It normally takes milliseconds; on a loaded machine dying processes take longer to let go of
// their children.
const initKillGrace = 10 * time.Second

// localBackend runs commands on this machine: from the launcher thread into fresh PID namespaces where namespaces
// are permitted (launcher_linux.go), else through a re-executed child init (childinit_linux.go).
type localBackend struct {
	workspace string
	dirs      sandboxDirs
	env       []string
	rules     sandboxRules
	rlimits   []rlimitV
	landlock  bool
	launcher  *nsLauncher  // nil in fallback mode
	inits     *initPool    // fallback mode: child inits ready to run a command
	pids      *cgroupLimit // nil where no pids cgroup can be made
	pidsNote  string       // why there is no process limit
	mem       *cgroupLimit // nil where no memory cgroup can be made
	memNote   string       // why there is no memory limit per command
	applied   *appliedConfinement
	logger    *slog.Logger
}

// NewLocalBackend prepares the local backend and proves it by running one command. When namespaces cannot be
// created here, it falls back to a subreaper child init, and logs that loudly.
func NewLocalBackend(cfg LocalConfig, logger *slog.Logger) (Backend, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Workspace == "" || !filepath.IsAbs(cfg.Workspace) {
		return nil, fmt.Errorf("local backend: the workspace must be an absolute path, got %q", cfg.Workspace)
	}
	if cfg.CacheDir == "" {
		cfg.CacheDir = defaultCacheDir()
	}
	cacheDir, err := filepath.Abs(cfg.CacheDir)
	if err != nil {
		return nil, fmt.Errorf("local backend: cache dir: %w", err)
	}
	if err := os.MkdirAll(cacheDir, 0o700); err != nil {
		return nil, fmt.Errorf("local backend: cache dir: %w", err)
	}
	if real := realPath(cacheDir); real != "" {
		cacheDir = real
	}
	if within(cacheDir, cfg.Workspace) || within(cfg.Workspace, cacheDir) {
		return nil, fmt.Errorf("local backend: the cache dir %s and the workspace must not contain each other", cacheDir)
	}
	var id [6]byte
	_, _ = rand.Read(id[:])
	b := &localBackend{
		workspace: cfg.Workspace,
		dirs:      newSandboxDirs(cacheDir, hex.EncodeToString(id[:])),
		landlock:  !cfg.NoLandlock,
		logger:    logger,
	}
	if err := b.dirs.create(); err != nil {
		return nil, fmt.Errorf("local backend: %w", err)
	}
	b.env = commandEnv(b.dirs, os.Getenv)
	etcDirs, etcFiles := etcReadable()
	b.rules = sandboxRules{
		ReadDirs:  slices.Concat(systemReadDirs, etcDirs, toolchainRoots(b.env, os.Getenv("HOME")), cfg.ExtraReadDirs),
		ReadFiles: etcFiles,
		WriteDirs: []string{cfg.Workspace, b.dirs.Home, b.dirs.Tmp, b.dirs.Cache},
	}
	b.rlimits = rlimitsFor(cfg)

	b.pids, b.pidsNote = cgroupFor("pids", hex.EncodeToString(id[:]), int64(cfg.PidsLimit), DefaultPidsLimit,
		"a fork bomb runs until the timeout")
	b.mem, b.memNote = cgroupFor("memory", hex.EncodeToString(id[:]), cfg.MemoryLimit, DefaultMemoryLimit,
		"memory is limited per process only (RLIMIT_DATA)")
	if !cfg.NoNamespaces {
		nsRules := b.rules
		nsRules.PrivateShm = true
		l, err := newNSLauncher(nsRules, b.landlock, b.dirs.Tmp, slices.Concat(nsRules.WriteDirs, nsRules.ReadDirs))
		if err == nil {
			b.launcher = l
			b.applied = l.applied
		} else {
			logger.Warn("LOCAL BACKEND WITHOUT NAMESPACES: cannot create mount/network/PID namespaces here; "+
				"falling back to a subreaper init per command, network confined by seccomp and Landlock", "error", err)
		}
	}
	if b.launcher == nil {
		b.inits = &initPool{spawn: b.spawnInit}
		b.rules.NetHandled = true
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
	if b.launcher == nil {
		b.applied = applied
	}
	b.logConfinement()
	return b, nil
}

// cgroupFor makes a controller's limit (limit 0 means def, negative none) or says why there is none.
func cgroupFor(controller, instance string, limit, def int64, without string) (*cgroupLimit, string) {
	if limit < 0 {
		return nil, "none (turned off)"
	}
	if limit == 0 {
		limit = def
	}
	c, err := newCgroupLimit(controller, instance, limit)
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
	for _, c := range []*cgroupLimit{b.pids, b.mem} {
		if c == nil {
			continue
		}
		r, err := c.place(pid)
		if err != nil {
			release()
			return nil, err
		}
		releases = append(releases, r)
	}
	return release, nil
}

func rlimitsFor(cfg LocalConfig) []rlimitV {
	r := []rlimitV{{"core", 0}, {"nofile", maxOpenFiles}}
	switch {
	case cfg.MemoryLimit == 0:
		r = append(r, rlimitV{"data", DefaultMemoryLimit})
	case cfg.MemoryLimit > 0:
		r = append(r, rlimitV{"data", uint64(cfg.MemoryLimit)})
	}
	switch {
	case cfg.FileSizeLimit == 0:
		r = append(r, rlimitV{"fsize", DefaultFileSizeLimit})
	case cfg.FileSizeLimit > 0:
		r = append(r, rlimitV{"fsize", uint64(cfg.FileSizeLimit)})
	}
	return r
}

// probe runs `true`; in fallback mode it returns what the child init applied.
func (b *localBackend) probe() (*appliedConfinement, error) {
	var applied *appliedConfinement
	req := Request{Command: "true", Dir: ".", Timeout: 30 * time.Second, Stdout: io.Discard, Stderr: io.Discard}
	var res Result
	var err error
	if b.launcher != nil {
		res, err = b.runNamespaced(context.Background(), req)
	} else {
		res, err = b.runWithInit(context.Background(), req, &applied)
	}
	if err != nil {
		return nil, err
	}
	if res.ExitCode != 0 || (b.launcher == nil && applied == nil) {
		return nil, fmt.Errorf("the probe command `true` ended with exit code %d", res.ExitCode)
	}
	return applied, nil
}

func (b *localBackend) Name() string { return "local" }

func (b *localBackend) Close() error {
	if b.launcher != nil {
		b.launcher.close()
	}
	if b.inits != nil {
		b.inits.close()
	}
	for _, c := range []*cgroupLimit{b.pids, b.mem} {
		if c != nil {
			c.close()
		}
	}
	return os.RemoveAll(b.dirs.Tmp)
}

func (b *localBackend) Run(ctx context.Context, req Request) (Result, error) {
	if b.launcher != nil {
		return b.runNamespaced(ctx, req)
	}
	return b.runWithInit(ctx, req, nil)
}

// runNamespaced runs req from the launcher thread in a fresh PID namespace. Killing its PID 1 kills the namespace.
func (b *localBackend) runNamespaced(ctx context.Context, req Request) (Result, error) {
	goR, goW, err := os.Pipe()
	if err != nil {
		return Result{}, err
	}
	defer goW.Close()
	cmd := &exec.Cmd{
		Path:       "/bin/sh",
		Args:       []string{"sh", "-c", nsInitScript, "sh", req.Command},
		Env:        b.env,
		Dir:        filepath.Join(b.workspace, filepath.FromSlash(req.Dir)),
		Stdout:     req.Stdout,
		Stderr:     req.Stderr,
		ExtraFiles: []*os.File{goR},
		WaitDelay:  killGrace,
		// A session of its own: kill(0) from the command must not reach the server's process group, and without a
		// controlling terminal the command cannot inject input into the server's (TIOCSTI).
		SysProcAttr: &syscall.SysProcAttr{
			Cloneflags: syscall.CLONE_NEWPID,
			Setsid:     true,
			Pdeathsig:  syscall.SIGKILL,
		},
	}
	if req.Stdin != "" {
		cmd.Stdin = strings.NewReader(req.Stdin)
	}
	err = b.launcher.start(cmd)
	goR.Close()
	if err != nil {
		return Result{}, fmt.Errorf("start the sandbox: %w", err)
	}
	// The rlimits are set from here, on the namespace's PID 1, before it may start the command: they are per
	// process, and setting them on the launcher thread would set them on the whole server.
	for _, r := range b.rlimits {
		lim := unix.Rlimit{Cur: r.Value, Max: r.Value}
		var old unix.Rlimit
		if unix.Prlimit(cmd.Process.Pid, rlimitByName[r.Name], nil, &old) == nil && old.Max < lim.Max {
			lim = unix.Rlimit{Cur: old.Max, Max: old.Max} // lower only, never raise
		}
		if err := unix.Prlimit(cmd.Process.Pid, rlimitByName[r.Name], &lim, nil); err != nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			return Result{}, fmt.Errorf("set rlimit %s: %w", r.Name, err)
		}
	}
	release, err := b.placeInCgroups(cmd.Process.Pid)
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return Result{}, fmt.Errorf("cgroup limits: %w", err)
	}
	defer release()
	_, _ = goW.Write([]byte("go\n"))
	goW.Close()

	killed, timedOut, _ := b.wait(ctx, cmd, req.Timeout, func() { _ = cmd.Process.Kill() })
	if killed {
		return Result{ExitCode: -1, TimedOut: timedOut}, nil
	}
	ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if !ok || ws.Signaled() {
		return Result{ExitCode: -1}, nil
	}
	return Result{ExitCode: ws.ExitStatus()}, nil
}

// wait waits for cmd, killing it with kill on timeout or when ctx is done.
func (b *localBackend) wait(ctx context.Context, cmd *exec.Cmd, timeout time.Duration, kill func()) (killed, timedOut bool, err error) {
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case err = <-done:
		return false, false, err
	case <-ctx.Done():
	case <-timer.C:
		timedOut = true
	}
	kill()
	return true, timedOut, <-done
}

// Confinement describes what is in force: in namespace mode what the launcher thread set up, in fallback mode what
// the probe command's init reported.
func (b *localBackend) Confinement() map[string]any {
	a := b.applied
	mode := "pid-namespace"
	network := "private network namespace: loopback only, no route out"
	procs := "a fresh PID namespace per command; killing its PID 1 kills every process in it"
	if b.launcher == nil {
		mode = "subreaper-init (NO namespaces)"
		procs = "a subreaper init per command kills every descendant; seccomp (and Landlock's signal scoping, where present) keeps " +
			"the command from signalling its init or the server, and from ptrace"
		switch {
		case a.Seccomp && a.LandlockNet:
			network = "no Internet sockets (seccomp: socket(AF_INET/AF_INET6) and io_uring refused) and Landlock: no TCP connect or bind"
		case a.Seccomp:
			network = "no Internet sockets (seccomp: socket(AF_INET/AF_INET6) and io_uring refused)"
		case a.LandlockNet:
			network = "Landlock only: no TCP connect or bind (UDP and MPTCP are NOT restricted)"
		default:
			network = "NOT CONFINED"
		}
	}
	landlock := a.Landlock
	if a.Landlock == "enforced" {
		landlock = fmt.Sprintf("enforced (ABI %d)", a.LandlockABI)
	}
	names := make([]string, 0, len(b.env))
	for _, kv := range b.env {
		k, _, _ := strings.Cut(kv, "=")
		names = append(names, k)
	}
	caps := "none: bounding set emptied, secure bits locked (no capabilities for root at exec), ambient cleared, no_new_privs"
	switch {
	case !a.CapsDropped:
		caps = "NOT DROPPED"
	case b.launcher == nil && !a.BoundingDropped:
		caps = "effective, permitted, inheritable and ambient cleared, no_new_privs; bounding set kept (no CAP_SETPCAP)"
	case b.launcher == nil:
		caps = "none: all sets cleared, bounding set emptied, secure bits locked, no_new_privs"
	}
	rl := map[string]uint64{}
	for _, r := range b.rlimits {
		// Limits are only lowered: where the server's own hard limit is lower, that is what commands get.
		rl[r.Name] = r.Value
		var own unix.Rlimit
		if unix.Getrlimit(rlimitByName[r.Name], &own) == nil && own.Max < r.Value {
			rl[r.Name] = own.Max
		}
	}
	if b.launcher == nil {
		rl = a.Rlimits
	}
	var readDirs []string
	for _, d := range b.rules.ReadDirs {
		if !strings.HasPrefix(d, "/etc/") {
			readDirs = append(readDirs, d)
		}
	}
	readDirs = append(readDirs, "/etc (but not shadow, gshadow, ssh, sudoers, ssl/private, docker, ...)")
	hidden := []string{}
	if a.PrivateProc {
		hidden = append(hidden, "/proc shows only the command's own processes (hidepid=invisible)")
	}
	if a.MountNamespace {
		hidden = append(hidden, "/run and /var/run are empty (no host sockets)", "/dev/shm is private")
	}
	if a.PrivateTmp {
		hidden = append(hidden, "/tmp is the private temp folder")
	}
	return map[string]any{
		"mode":          mode,
		"processes":     procs,
		"network":       network,
		"landlock":      landlock,
		"landlock_ipc":  a.LandlockScoped,
		"write_dirs":    b.rules.WriteDirs,
		"read_dirs":     readDirs,
		"hidden":        hidden,
		"capabilities":  caps,
		"rlimits":       rl,
		"process_limit": b.processLimit(),
		"memory_limit":  b.memoryLimit(),
		"env_allowlist": names,
		"warnings":      a.Warnings,
	}
}

func (b *localBackend) processLimit() string {
	if b.pids == nil {
		return b.pidsNote
	}
	return fmt.Sprintf("%d processes and threads per command (pids cgroup)", b.pids.limit)
}

func (b *localBackend) memoryLimit() string {
	if b.mem == nil {
		return b.memNote
	}
	return fmt.Sprintf("%d MiB for all of a command's processes together (memory cgroup)", b.mem.limit>>20)
}

func (b *localBackend) logConfinement() {
	c := b.Confinement()
	b.logger.Info("local backend confinement", "mode", c["mode"], "processes", c["processes"], "network", c["network"],
		"landlock", c["landlock"], "capabilities", c["capabilities"], "rlimits", c["rlimits"], "process_limit", c["process_limit"],
		"memory_limit", c["memory_limit"],
		"write_dirs", b.rules.WriteDirs,
		"env", c["env_allowlist"])
	if b.launcher == nil {
		b.logger.Warn("NO NAMESPACES: commands run under a subreaper init per command (slower: a re-exec each); " +
			"/proc shows host processes, host sockets under /run stay reachable, /tmp is the host's (not writable)")
	}
	if b.applied.Landlock != "enforced" {
		b.logger.Warn("NO LANDLOCK: commands can read and write anywhere the server's user can", "landlock", b.applied.Landlock)
	}
	if b.pids == nil {
		b.logger.Warn("NO PROCESS LIMIT: " + b.pidsNote)
	}
	if b.mem == nil {
		b.logger.Warn("NO MEMORY LIMIT PER COMMAND: " + b.memNote)
	}
	for _, w := range b.applied.Warnings {
		b.logger.Warn("confinement: " + w)
	}
}
