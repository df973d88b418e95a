package execserver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// killGrace is how long a child init without a PID namespace gets to kill its descendants after it was told to,
// before it is killed itself; and how long Run waits for output still in the pipes after the init exited.
const killGrace = 2 * time.Second

// namespaceFlags are the namespaces each command gets when the server may create them.
const namespaceFlags = syscall.CLONE_NEWPID | syscall.CLONE_NEWNS | syscall.CLONE_NEWNET | syscall.CLONE_NEWIPC

// localBackend runs commands on this machine, each through a child init (childinit_linux.go) that confines it.
type localBackend struct {
	workspace  string
	dirs       sandboxDirs
	env        []string
	readDirs   []string
	readFiles  []string
	writeDirs  []string
	rlimits    []rlimitV
	namespaces bool
	landlock   bool
	applied    *appliedConfinement
	logger     *slog.Logger
}

// NewLocalBackend prepares the local backend and proves it by running one command: what that command's init
// reports is what Confinement says. When namespaces cannot be created here, it falls back to a process group and a
// subreaper, and logs that loudly.
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
		workspace:  cfg.Workspace,
		dirs:       newSandboxDirs(cacheDir, hex.EncodeToString(id[:])),
		namespaces: !cfg.NoNamespaces,
		landlock:   !cfg.NoLandlock,
		logger:     logger,
	}
	if err := b.dirs.create(); err != nil {
		return nil, fmt.Errorf("local backend: %w", err)
	}
	b.env = commandEnv(b.dirs, os.Getenv)
	etcDirs, etcFiles := etcReadable()
	b.readDirs = slices.Concat(systemReadDirs, etcDirs, toolchainRoots(b.env, os.Getenv("HOME")), cfg.ExtraReadDirs)
	b.readFiles = etcFiles
	b.writeDirs = []string{cfg.Workspace, b.dirs.Home, b.dirs.Tmp, b.dirs.Cache}
	b.rlimits = rlimitsFor(cfg)

	applied, err := b.probe()
	if err != nil && b.namespaces {
		logger.Warn("LOCAL BACKEND WITHOUT NAMESPACES: cannot create PID/mount/network namespaces here; "+
			"falling back to a process group and a subreaper init, network confined by Landlock only", "error", err)
		b.namespaces = false
		applied, err = b.probe()
	}
	if err != nil {
		_ = b.Close()
		return nil, fmt.Errorf("local backend: cannot run a command: %w", err)
	}
	b.applied = applied
	b.logConfinement()
	return b, nil
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

// probe runs `true` and returns what its init applied.
func (b *localBackend) probe() (*appliedConfinement, error) {
	var applied *appliedConfinement
	res, err := b.run(context.Background(), Request{Command: "true", Dir: ".", Timeout: 30 * time.Second, Stdout: io.Discard, Stderr: io.Discard}, &applied)
	if err != nil {
		return nil, err
	}
	if res.ExitCode != 0 || applied == nil {
		return nil, fmt.Errorf("the probe command `true` ended with exit code %d", res.ExitCode)
	}
	return applied, nil
}

func (b *localBackend) Name() string { return "local" }

func (b *localBackend) Close() error { return os.RemoveAll(b.dirs.Tmp) }

func (b *localBackend) Run(ctx context.Context, req Request) (Result, error) {
	return b.run(ctx, req, nil)
}

func (b *localBackend) run(ctx context.Context, req Request, applied **appliedConfinement) (Result, error) {
	dir := filepath.Join(b.workspace, filepath.FromSlash(req.Dir))
	ctlR, ctlW, err := os.Pipe()
	if err != nil {
		return Result{}, err
	}
	repR, repW, err := os.Pipe()
	if err != nil {
		ctlR.Close()
		ctlW.Close()
		return Result{}, err
	}
	cmd := &exec.Cmd{
		// The server's own binary, whatever its name; the init in it takes over when argv[0] is initArg0.
		Path:       "/proc/self/exe",
		Args:       []string{initArg0},
		Env:        b.env,
		Dir:        dir,
		Stdout:     req.Stdout,
		Stderr:     req.Stderr,
		ExtraFiles: []*os.File{ctlR, repW},
		WaitDelay:  killGrace,
		SysProcAttr: &syscall.SysProcAttr{
			Setpgid:   true,
			Pdeathsig: syscall.SIGKILL,
		},
	}
	if req.Stdin != "" {
		cmd.Stdin = strings.NewReader(req.Stdin)
	}
	if b.namespaces {
		cmd.SysProcAttr.Cloneflags = namespaceFlags
	}
	err = cmd.Start()
	ctlR.Close()
	repW.Close()
	if err != nil {
		ctlW.Close()
		repR.Close()
		return Result{}, fmt.Errorf("start the sandbox: %w", err)
	}

	reports := make(chan initReport, 4)
	go func() {
		defer close(reports)
		defer repR.Close()
		dec := json.NewDecoder(repR)
		for {
			var r initReport
			if dec.Decode(&r) != nil {
				return
			}
			reports <- r
		}
	}()
	cfg := initConfig{
		Command: req.Command, Dir: dir, Env: b.env, Namespaces: b.namespaces, Landlock: b.landlock,
		ReadDirs: b.readDirs, ReadFiles: b.readFiles, WriteDirs: b.writeDirs, Rlimits: b.rlimits,
	}
	line, _ := json.Marshal(cfg)
	_, _ = ctlW.Write(append(line, '\n'))

	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	timer := time.NewTimer(req.Timeout)
	defer timer.Stop()
	var killOnce sync.Once
	killed, timedOut := false, false
	kill := func() {
		killOnce.Do(func() {
			killed = true
			// Closing the control pipe tells the init to kill everything. With a PID namespace, killing the init
			// is enough and immediate: the kernel kills the rest of the namespace with it.
			ctlW.Close()
			if b.namespaces {
				_ = cmd.Process.Kill()
				return
			}
			time.AfterFunc(killGrace, func() { _ = cmd.Process.Kill() })
		})
	}
	var waitErr error
	select {
	case waitErr = <-done:
	case <-ctx.Done():
		kill()
		waitErr = <-done
	case <-timer.C:
		timedOut = true
		kill()
		waitErr = <-done
	}
	ctlW.Close()

	var exited *initReport
	var setupErr string
	for r := range reports {
		switch {
		case r.Setup != nil:
			if applied != nil {
				*applied = r.Setup
			}
		case r.Error != "":
			setupErr = r.Error
		case r.Exited:
			exited = &r
		}
	}
	switch {
	case killed:
		return Result{ExitCode: -1, TimedOut: timedOut}, nil
	case setupErr != "":
		return Result{}, errors.New(setupErr)
	case exited == nil:
		// The init died without saying how sh ended: something killed it (the OOM killer, an operator).
		var ee *exec.ExitError
		if waitErr != nil && !errors.As(waitErr, &ee) {
			return Result{}, waitErr
		}
		return Result{ExitCode: -1}, nil
	case exited.Signal != 0:
		return Result{ExitCode: -1}, nil
	}
	return Result{ExitCode: exited.Status}, nil
}

// Confinement describes what the probe command's init put in force.
func (b *localBackend) Confinement() map[string]any {
	a := b.applied
	mode := "pid-namespace"
	network := "private network namespace: loopback only, no route out"
	if !b.namespaces {
		mode = "process-group+subreaper (NO PID namespace: a process that kills its init could outlive the call)"
		switch {
		case a.LandlockNet:
			network = "Landlock: no TCP connect or bind (UDP is not restricted by this kernel's Landlock)"
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
	caps := "all dropped (bounding, effective, permitted, inheritable, ambient), no_new_privs"
	if !a.CapsDropped {
		caps = "NOT DROPPED"
	} else if !a.BoundingDropped {
		caps = "effective, permitted, inheritable and ambient dropped, no_new_privs; bounding set kept (no CAP_SETPCAP)"
	}
	return map[string]any{
		"mode":              mode,
		"pid_namespace":     a.PIDNamespace,
		"mount_namespace":   a.MountNamespace,
		"network":           network,
		"landlock":          landlock,
		"landlock_scoped":   a.LandlockScoped,
		"write_dirs":        b.writeDirs,
		"read_dirs":         b.readDirs,
		"capabilities":      caps,
		"rlimits":           a.Rlimits,
		"env_allowlist":     names,
		"warnings":          a.Warnings,
		"killed_on_timeout": "whole process tree",
	}
}

func (b *localBackend) logConfinement() {
	c := b.Confinement()
	b.logger.Info("local backend confinement", "mode", c["mode"], "network", c["network"], "landlock", c["landlock"],
		"capabilities", c["capabilities"], "rlimits", c["rlimits"], "write_dirs", b.writeDirs, "env", c["env_allowlist"])
	if !b.namespaces {
		b.logger.Warn("NO PID NAMESPACE: commands run in a process group under a subreaper init; " +
			"a command that kills its init could leave processes behind")
	}
	if b.applied.Landlock != "enforced" {
		b.logger.Warn("NO LANDLOCK: commands can read and write anywhere the server's user can, and reach the network "+
			"unless a network namespace is active", "landlock", b.applied.Landlock)
	}
	for _, w := range b.applied.Warnings {
		b.logger.Warn("confinement: " + w)
	}
}

// within reports whether p is dir or inside it.
func within(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, strings.TrimSuffix(dir, "/")+"/")
}
