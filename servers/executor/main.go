// Command executor is goalbox's command executor MCP server: sandbox_run_command runs a shell command, and
// sandbox_start_process, sandbox_read_process_output, sandbox_write_process_input, sandbox_stop_process and
// sandbox_list_processes run long-lived ones, each confined to a workspace, on the local machine or in Docker
// containers (by default the executor chooses: see package execserver/backends).
//
//	executor -workspace DIR [-addr 127.0.0.1:7102] [-backend auto|local|docker] [-stdio] [-token T|none] ...
//
// Over HTTP it requires a bearer token: without -token it generates one, prints it and writes it to a file only its
// user can read (docs/serving.md#tokens). Every flag has an environment variable GOALBOX_EXEC_<NAME>; flags win.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/goalbox/goalbox/pkg/envflag"
	"github.com/goalbox/goalbox/pkg/mcpserve"
	"github.com/goalbox/goalbox/pkg/pathguard"
	"github.com/goalbox/goalbox/pkg/protocol"
	"github.com/goalbox/goalbox/servers/executor/execserver"
	"github.com/goalbox/goalbox/servers/executor/execserver/backends"
	"github.com/goalbox/goalbox/servers/executor/execserver/egress"
)

const envPrefix = "GOALBOX_EXEC_"

// options are the executor's own settings, besides mcpserve.Config.
type options struct {
	Backend            string        `env:"BACKEND" flag:"backend" usage:"where commands run: auto (local where it confines with namespaces, else docker when a Docker Engine answers, else local's fallback where it still confines; see /healthz backend_reason), local or docker"`
	AdvertisedRoot     string        `env:"ADVERTISED_ROOT" flag:"advertised-root" usage:"absolute path under which clients see the workspace, as given to the filesystem server"`
	Image              string        `env:"IMAGE" flag:"image" usage:"docker backend: the image every command runs in, never pulled (default goalbox/executor:latest: docker build -f deploy/Dockerfile.exec -t goalbox/executor:latest .)"`
	TimeoutDefault     time.Duration `env:"TIMEOUT_DEFAULT" flag:"timeout-default" usage:"timeout of a command that gives none"`
	TimeoutMax         time.Duration `env:"TIMEOUT_MAX" flag:"timeout-max" usage:"largest timeout a command may ask for"`
	OutputCap          int           `env:"OUTPUT_CAP" flag:"output-cap" usage:"bytes kept of each of stdout and stderr, head and tail, at most 1 MiB"`
	OutputBudget       int64         `env:"OUTPUT_BUDGET" flag:"output-budget" usage:"bytes of full outputs (streams past -output-cap, served as MCP resources) each session keeps, oldest evicted first; at least 2 MiB, -1 keeps none"`
	OutputTotal        int64         `env:"OUTPUT_TOTAL" flag:"output-total" usage:"bytes of full outputs all sessions together keep (a session needing room evicts its own oldest); at least -output-budget (default 512 MiB)"`
	MaxConcurrent      int           `env:"MAX_CONCURRENT" flag:"max-concurrent" usage:"commands run at once; a call past it waits for a free slot within its own timeout, then is refused (default 2 per CPU, at least 4)"`
	MaxProcesses       int           `env:"MAX_PROCESSES" flag:"max-processes" usage:"background processes (sandbox_start_process) one session may run at once (default 8)"`
	ProcessLifetime    time.Duration `env:"PROCESS_LIFETIME" flag:"process-lifetime" usage:"a background process running longer is killed (default 1h)"`
	ProcessBufferTotal int           `env:"PROCESS_BUFFER_TOTAL" flag:"process-buffer-total" usage:"bytes all background processes' output buffers hold together, whatever the number of sessions; each grows with its output up to 1 MiB a stream (default 256 MiB)"`
	// Allow and Deny are RE2 patterns; in the environment one per line (patterns may hold commas).
	Allow         []string `env:"ALLOW" envSeparator:"\n" flag:"allow" flagList:"repeat" usage:"RE2 pattern a command must match to run; repeatable (in the environment one per line)"`
	Deny          []string `env:"DENY" envSeparator:"\n" flag:"deny" flagList:"repeat" usage:"RE2 pattern that refuses a command; repeatable, wins over -allow (in the environment one per line)"`
	CacheDir      string   `env:"CACHE_DIR" flag:"cache-dir" usage:"folder for the commands' private home, temp and build caches, outside the workspace"`
	RunAs         string   `env:"RUN_AS" flag:"run-as" usage:"local backend, root server: numeric uid[:gid] commands run as; default the workspace's owner, else 65532 (the workspace is given to it); never root"`
	NoNamespaces  bool     `env:"NO_NAMESPACES" flag:"no-namespaces" usage:"local backend: do not use PID/mount/network namespaces"`
	PidsLimit     int      `env:"PIDS_LIMIT" flag:"pids-limit" usage:"processes and threads per command: local backend a pids cgroup where available (default 1024, -1 for none), docker the container's pids limit (default 512)"`
	MemoryLimitMB int64    `env:"MEMORY_LIMIT_MB" flag:"memory-limit-mb" usage:"memory limit in MiB: local backend per process (RLIMIT_DATA) and per command (memory cgroup where available), default 8192, -1 for none; docker the container's limit, swap off (default 2048)"`
	// TotalMemoryLimitMB and TotalPidsLimit bound all of the local backend's commands together.
	TotalMemoryLimitMB int64   `env:"TOTAL_MEMORY_LIMIT_MB" flag:"total-memory-limit-mb" usage:"memory in MiB of all commands together: local backend a parent memory cgroup, where available (default half the machine's); docker the sum of the containers' limits (default the Engine's memory); -1 for none"`
	TotalPidsLimit     int     `env:"TOTAL_PIDS_LIMIT" flag:"total-pids-limit" usage:"processes and threads of all commands together: local backend a parent pids cgroup, where available (default 4096); docker the sum of the containers' limits (default 8192); -1 for none"`
	MaxWorkspaceBytes  int64   `env:"MAX_WORKSPACE_BYTES" flag:"max-workspace-bytes" usage:"disk cap of the workspace and the commands' private home and temp (local) or cache (docker) together; a command that passes it is killed; default 16 GiB, -1 for none"`
	Instance           string  `env:"INSTANCE" flag:"instance" usage:"docker backend: the name of this executor's containers and state; one executor per instance at a time (default derived from the workspace's path and the server's uid)"`
	DockerUser         string  `env:"DOCKER_USER" flag:"docker-user" usage:"docker backend: numeric uid[:gid] commands run as; default the workspace's owner, never root"`
	CPUs               float64 `env:"CPUS" flag:"cpus" usage:"docker backend: CPUs a command may use; default the host's, at most 2"`
	WarmPool           int     `env:"WARM_POOL" flag:"warm-pool" usage:"docker backend: containers kept started ahead of commands, each still used once"`
	ResourceLinks      bool    `env:"RESOURCE_LINKS" flag:"resource-links" usage:"add a resource_link content item for each stream kept whole (the URI is in stdout_resource/stderr_resource either way; some client libraries pass resource links to models badly)"`
	QuarantineDir      string  `env:"QUARANTINE_DIR" flag:"quarantine-dir" usage:"folder, outside the workspace, where protected project files a command created or changed are kept after they are undone; default ~/.cache/goalbox-exec/quarantine (root: /var/cache/goalbox-exec/quarantine)"`
	// Protect and Unprotect adjust the protected project files; their usage is pathguard's, shared by every command.
	Protect   []string `env:"PROTECT" envSeparator:"," flag:"protect" flagList:"repeat"`
	Unprotect []string `env:"UNPROTECT" envSeparator:"," flag:"unprotect" flagList:"repeat"`
	// The network (package execserver/egress): none unless -net-allow names hosts.
	NetAllow              string        `env:"NET_ALLOW" flag:"net-allow" usage:"comma-separated hosts (registry.npmjs.org), *.domains, either with :port (default ports 80 and 443), and CIDRs (any port) commands may reach through the executor's egress proxy, the only way out; empty: no network (local backend, namespace mode)"`
	NetMaxConns           int           `env:"NET_MAX_CONNS" flag:"net-max-conns" usage:"with -net-allow: proxy connections of all commands together (default 256)"`
	NetMaxConnsPerCommand int           `env:"NET_MAX_CONNS_PER_COMMAND" flag:"net-max-conns-per-command" usage:"with -net-allow: proxy connections of one command or process at once (default 64)"`
	NetIdleTimeout        time.Duration `env:"NET_IDLE_TIMEOUT" flag:"net-idle-timeout" usage:"with -net-allow: a proxy connection idle both ways this long is closed (default 2m)"`
	NetMaxBytes           int64         `env:"NET_MAX_BYTES" flag:"net-max-bytes" usage:"with -net-allow: bytes one command or process moves through the proxy, both ways (default 4 GiB, -1 for none)"`
	Secrets               []string      `env:"SECRET" envSeparator:"\n" flag:"secret" flagList:"repeat" usage:"NAME=SOURCE@HOST[,HOST...], repeatable (in the environment one per line): commands see NAME as a placeholder, which the egress proxy replaces by the value of SOURCE (env:VAR or file:PATH of the server's) only in HTTPS requests to HOST"`
	UpstreamCA            string        `env:"UPSTREAM_CA" flag:"upstream-ca" usage:"PEM file of CAs trusted, beside the host's, for the upstreams of -secret hosts (a private registry, tests)"`
}

// protectDocs are the usage of -protect and -unprotect, the same text as the filesystem server's and the agent's.
var protectDocs = map[string]envflag.Doc{
	"Protect":   {Flag: "protect", Usage: pathguard.ProtectUsage},
	"Unprotect": {Flag: "unprotect", Usage: pathguard.UnprotectUsage()},
}

func main() {
	os.Exit(run(os.Args))
}

// run is main with an exit code, by the servers' one policy (mcpserve.ExitCode): 0 after a clean shutdown, 2 for
// bad configuration, 1 when serving failed.
func run(args []string) int {
	return mcpserve.ExitCode("executor", serve(args), os.Stderr)
}

// serve configures the server, builds it and serves until shut down.
func serve(args []string) error {
	cfg, opts, err := configure(args)
	if errors.Is(err, mcpserve.ErrVersion) {
		fmt.Println(execserver.Name, mcpserve.Version())
		return nil
	}
	if err != nil {
		return err
	}
	logger, err := mcpserve.NewLogger(cfg.LogLevel)
	if err != nil {
		return mcpserve.ConfigError(err)
	}
	g, err := pathguard.Open(cfg.Workspace, pathguard.Options{AdvertisedRoot: opts.AdvertisedRoot})
	if err != nil {
		return mcpserve.ConfigError(err)
	}
	defer g.Close()
	ctx := context.Background()
	backend, choice, err := newBackend(ctx, opts, g, logger)
	if err != nil {
		if opts.Backend == backends.Auto {
			return mcpserve.ConfigError(fmt.Errorf("-backend auto: %w", err))
		}
		return mcpserve.ConfigError(fmt.Errorf("%s backend: %s", opts.Backend, strings.TrimPrefix(err.Error(), opts.Backend+" backend: ")))
	}
	defer backend.Close()
	logger.Info("backend chosen", "backend", choice.Backend, "requested", choice.Requested, "reason", choice.Reason)
	ex, err := newExecutor(opts, choice, backend, g, logger)
	if err != nil {
		return mcpserve.ConfigError(err)
	}
	defer ex.Close() // its processes, before the backend
	logger.Info("executor ready", "version", mcpserve.Version(), "workspace", g.Dir(), "backend", backend.Name(), "policy", opts.policy.Describe())
	return mcpserve.Run(ctx, ex.Server(), execserver.Name, cfg, ex.Health, logger)
}

// settings are the options checked: what the executor is built from.
type settings struct {
	options
	policy     *execserver.Policy
	protection *pathguard.Protection
	netAllow   *egress.AllowList
	secrets    []egress.Secret
	upstreamCA []byte
}

// configure reads the settings: the defaults, then the environment, then the flags; and checks the backend's name
// and the policy's patterns.
func configure(args []string) (mcpserve.Config, settings, error) {
	cfg := mcpserve.Config{Addr: protocol.DefaultExecutorAddr}
	s := settings{options: options{
		Backend:        backends.Auto,
		TimeoutDefault: execserver.DefaultTimeout,
		TimeoutMax:     execserver.DefaultMaxTimeout,
		OutputCap:      execserver.DefaultOutputCap,
		OutputBudget:   execserver.DefaultOutputBudget,
		AdvertisedRoot: protocol.DefaultRoot,
	}}
	o := envflag.Options{Prefix: envPrefix, Docs: protectDocs}
	if err := envflag.ParseEnv(&s.options, o); err != nil {
		return cfg, s, mcpserve.ConfigError(err)
	}
	if _, err := mcpserve.Load(&cfg, envPrefix, args, func(fs *flag.FlagSet) { envflag.Register(fs, &s.options, o) }); err != nil {
		return cfg, s, err
	}
	if s.Backend != backends.Auto && s.Backend != backends.Local && s.Backend != backends.Docker {
		return cfg, s, mcpserve.ConfigError(fmt.Errorf("unknown backend %q: use %s", s.Backend, backends.Names))
	}
	var err error
	if s.policy, err = execserver.NewPolicy(s.Allow, s.Deny); err != nil {
		return cfg, s, mcpserve.ConfigError(fmt.Errorf("policy: %w", err))
	}
	if s.protection, err = pathguard.ParseProtection(s.Protect, s.Unprotect); err != nil {
		return cfg, s, mcpserve.ConfigError(err)
	}
	if s.netAllow, err = egress.ParseAllowList(s.NetAllow); err != nil {
		return cfg, s, mcpserve.ConfigError(err)
	}
	for _, spec := range s.Secrets {
		sec, err := egress.ParseSecret(spec)
		if err != nil {
			return cfg, s, mcpserve.ConfigError(err)
		}
		s.secrets = append(s.secrets, sec)
	}
	if s.UpstreamCA != "" {
		if s.upstreamCA, err = os.ReadFile(s.UpstreamCA); err != nil {
			return cfg, s, mcpserve.ConfigError(fmt.Errorf("-upstream-ca: %w", err))
		}
	}
	return cfg, s, nil
}

// newExecutor is the tool server over backend.
func newExecutor(s settings, choice backends.Choice, backend execserver.Backend, g *pathguard.Guard, logger *slog.Logger) (*execserver.Executor, error) {
	how := "explicit"
	if choice.Requested == backends.Auto {
		how = "auto"
	}
	return execserver.New(execserver.Config{
		DefaultTimeout:     s.TimeoutDefault,
		MaxTimeout:         s.TimeoutMax,
		OutputCap:          s.OutputCap,
		Policy:             s.policy,
		MaxConcurrent:      s.MaxConcurrent,
		MaxProcesses:       s.MaxProcesses,
		ProcessLifetime:    s.ProcessLifetime,
		ProcessBufferTotal: s.ProcessBufferTotal,
		OutputBudget:       s.OutputBudget,
		OutputTotal:        s.OutputTotal,
		BackendChoice:      how,
		BackendReason:      choice.Reason,
		QuarantineDir:      s.QuarantineDir,
		ResourceLinks:      s.ResourceLinks,
		Protection:         s.protection,
	}, backend, g, logger)
}
