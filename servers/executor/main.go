// Command executor is goalbox's command executor MCP server: one tool, sandbox_run_command, that runs shell commands
// confined to a workspace, on the local machine (default) or in Docker containers.
//
//	executor -workspace DIR [-addr 127.0.0.1:7102] [-backend local|docker] [-stdio] ...
//
// Every flag has an environment variable GOALBOX_EXEC_<NAME>; flags win.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/caarlos0/env/v11"
	"github.com/goalbox/goalbox/pkg/mcpserve"
	"github.com/goalbox/goalbox/pkg/pathguard"
	"github.com/goalbox/goalbox/pkg/protocol"
	"github.com/goalbox/goalbox/servers/executor/execserver"
)

const envPrefix = "GOALBOX_EXEC_"

// options are the executor's own settings, besides mcpserve.Config.
type options struct {
	Backend        string        `env:"BACKEND"`
	Image          string        `env:"IMAGE"`
	TimeoutDefault time.Duration `env:"TIMEOUT_DEFAULT"`
	TimeoutMax     time.Duration `env:"TIMEOUT_MAX"`
	OutputCap      int           `env:"OUTPUT_CAP"`
	MaxConcurrent  int           `env:"MAX_CONCURRENT"`
	// Allow and Deny are RE2 patterns; in the environment one per line (patterns may hold commas).
	Allow         []string `env:"ALLOW" envSeparator:"\n"`
	Deny          []string `env:"DENY" envSeparator:"\n"`
	CacheDir      string   `env:"CACHE_DIR"`
	NoNamespaces  bool     `env:"NO_NAMESPACES"`
	RunAs         string   `env:"RUN_AS"`
	MemoryLimitMB int64    `env:"MEMORY_LIMIT_MB"`
	PidsLimit     int      `env:"PIDS_LIMIT"`
	// TotalMemoryLimitMB and TotalPidsLimit bound all of the local backend's commands together.
	TotalMemoryLimitMB int64   `env:"TOTAL_MEMORY_LIMIT_MB"`
	TotalPidsLimit     int     `env:"TOTAL_PIDS_LIMIT"`
	MaxWorkspaceBytes  int64   `env:"MAX_WORKSPACE_BYTES"`
	DockerUser         string  `env:"DOCKER_USER"`
	CPUs               float64 `env:"CPUS"`
	WarmPool           int     `env:"WARM_POOL"`
	// AdvertisedRoot is where clients see the workspace in absolute cwd paths, as on the filesystem server.
	AdvertisedRoot string `env:"ADVERTISED_ROOT"`
}

func main() {
	os.Exit(run(os.Args))
}

// run is main with an exit code: 0 after a clean shutdown, 2 for bad configuration, 1 when serving failed.
func run(args []string) int {
	cfg := mcpserve.Config{Addr: protocol.DefaultExecutorAddr}
	opts := options{
		Backend:        "local",
		TimeoutDefault: execserver.DefaultTimeout,
		TimeoutMax:     execserver.DefaultMaxTimeout,
		OutputCap:      execserver.DefaultOutputCap,
		AdvertisedRoot: protocol.DefaultRoot,
	}
	if err := env.ParseWithOptions(&opts, env.Options{Prefix: envPrefix}); err != nil {
		fmt.Fprintf(os.Stderr, "executor: environment: %v\n", err)
		return 2
	}
	_, err := mcpserve.Load(&cfg, envPrefix, args, func(fs *flag.FlagSet) {
		fs.StringVar(&opts.Backend, "backend", opts.Backend, "where commands run: "+backendNames+" (env "+envPrefix+"BACKEND)")
		fs.StringVar(&opts.AdvertisedRoot, "advertised-root", opts.AdvertisedRoot, "absolute path under which clients see the workspace, as given to the filesystem server (env "+envPrefix+"ADVERTISED_ROOT)")
		fs.StringVar(&opts.Image, "image", opts.Image, "docker backend: the image every command runs in (env "+envPrefix+"IMAGE)")
		fs.DurationVar(&opts.TimeoutDefault, "timeout-default", opts.TimeoutDefault, "timeout of a command that gives none (env "+envPrefix+"TIMEOUT_DEFAULT)")
		fs.DurationVar(&opts.TimeoutMax, "timeout-max", opts.TimeoutMax, "largest timeout a command may ask for (env "+envPrefix+"TIMEOUT_MAX)")
		fs.IntVar(&opts.OutputCap, "output-cap", opts.OutputCap, "bytes kept of each of stdout and stderr, head and tail, at most 1 MiB (env "+envPrefix+"OUTPUT_CAP)")
		fs.IntVar(&opts.MaxConcurrent, "max-concurrent", opts.MaxConcurrent, "commands run at once; a call past it waits for a free slot within its own timeout, then is refused (default 2 per CPU, at least 4) (env "+envPrefix+"MAX_CONCURRENT)")
		fs.Func("allow", "RE2 pattern a command must match to run; repeatable (env "+envPrefix+"ALLOW, one per line)", func(s string) error {
			opts.Allow = append(opts.Allow, s)
			return nil
		})
		fs.Func("deny", "RE2 pattern that refuses a command; repeatable, wins over -allow (env "+envPrefix+"DENY, one per line)", func(s string) error {
			opts.Deny = append(opts.Deny, s)
			return nil
		})
		fs.StringVar(&opts.CacheDir, "cache-dir", opts.CacheDir, "folder for the commands' private home, temp and build caches, outside the workspace (env "+envPrefix+"CACHE_DIR)")
		fs.StringVar(&opts.RunAs, "run-as", opts.RunAs, "local backend, root server: numeric uid[:gid] commands run as; default the workspace's owner, else 65532 (the workspace is given to it); never root (env "+envPrefix+"RUN_AS)")
		fs.BoolVar(&opts.NoNamespaces, "no-namespaces", opts.NoNamespaces, "local backend: do not use PID/mount/network namespaces (env "+envPrefix+"NO_NAMESPACES)")
		fs.IntVar(&opts.PidsLimit, "pids-limit", opts.PidsLimit, "processes and threads per command: local backend a pids cgroup where available (default 1024, -1 for none), docker the container's pids limit (default 512) (env "+envPrefix+"PIDS_LIMIT)")
		fs.Int64Var(&opts.MemoryLimitMB, "memory-limit-mb", opts.MemoryLimitMB, "memory limit in MiB: local backend per process (RLIMIT_DATA) and per command (memory cgroup where available), default 8192, -1 for none; docker the container's limit, swap off (default 2048) (env "+envPrefix+"MEMORY_LIMIT_MB)")
		fs.Int64Var(&opts.TotalMemoryLimitMB, "total-memory-limit-mb", opts.TotalMemoryLimitMB, "local backend: memory in MiB of all commands together (parent memory cgroup, where available); default half the machine's, -1 for none (env "+envPrefix+"TOTAL_MEMORY_LIMIT_MB)")
		fs.IntVar(&opts.TotalPidsLimit, "total-pids-limit", opts.TotalPidsLimit, "local backend: processes and threads of all commands together (parent pids cgroup, where available); default 4096, -1 for none (env "+envPrefix+"TOTAL_PIDS_LIMIT)")
		fs.Int64Var(&opts.MaxWorkspaceBytes, "max-workspace-bytes", opts.MaxWorkspaceBytes, "local backend: disk cap of the workspace and the commands' private home and temp together; a command that passes it is killed; default 16 GiB, -1 for none (env "+envPrefix+"MAX_WORKSPACE_BYTES)")
		fs.StringVar(&opts.DockerUser, "docker-user", opts.DockerUser, "docker backend: numeric uid[:gid] commands run as; default the workspace's owner, never root (env "+envPrefix+"DOCKER_USER)")
		fs.Float64Var(&opts.CPUs, "cpus", opts.CPUs, "docker backend: CPUs a command may use; default the host's, at most 2 (env "+envPrefix+"CPUS)")
		fs.IntVar(&opts.WarmPool, "warm-pool", opts.WarmPool, "docker backend: containers kept started ahead of commands, each still used once (env "+envPrefix+"WARM_POOL)")
	})
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "executor: %v\n", err)
		return 2
	}
	logger, err := mcpserve.NewLogger(cfg.LogLevel)
	if err != nil {
		fmt.Fprintf(os.Stderr, "executor: %v\n", err)
		return 2
	}
	if opts.Backend != "local" && opts.Backend != "docker" {
		fmt.Fprintf(os.Stderr, "executor: unknown backend %q: use %s\n", opts.Backend, backendNames)
		return 2
	}
	policy, err := execserver.NewPolicy(opts.Allow, opts.Deny)
	if err != nil {
		fmt.Fprintf(os.Stderr, "executor: policy: %v\n", err)
		return 2
	}
	g, err := pathguard.Open(cfg.Workspace, pathguard.Options{AdvertisedRoot: opts.AdvertisedRoot})
	if err != nil {
		fmt.Fprintf(os.Stderr, "executor: %v\n", err)
		return 2
	}
	defer g.Close()

	ctx := context.Background()
	backend, err := newBackend(ctx, opts, g, logger)
	if err != nil {
		fmt.Fprintf(os.Stderr, "executor: %s backend: %v\n", opts.Backend, strings.TrimPrefix(err.Error(), opts.Backend+" backend: "))
		return 2
	}
	defer backend.Close()
	ex, err := execserver.New(execserver.Config{
		DefaultTimeout: opts.TimeoutDefault,
		MaxTimeout:     opts.TimeoutMax,
		OutputCap:      opts.OutputCap,
		Policy:         policy,
		MaxConcurrent:  opts.MaxConcurrent,
	}, backend, g, logger)
	if err != nil {
		fmt.Fprintf(os.Stderr, "executor: %v\n", err)
		return 2
	}
	logger.Info("executor ready", "workspace", g.Dir(), "backend", backend.Name(), "policy", policy.Describe())
	if err := mcpserve.Run(ctx, ex.Server(), execserver.Name, cfg, ex.Health, logger); err != nil {
		logger.Error("executor stopped", "error", err)
		return 1
	}
	return 0
}
