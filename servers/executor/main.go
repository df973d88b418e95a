// Command executor is goalbox's command executor MCP server: sandbox_run_command and the background-process tools
// (sandbox_start_process and the four beside it), which run shell commands confined to a workspace, on the local
// machine or in Docker containers (by default the executor chooses: see package execserver/backends). The executor
// is put together by package assemble, as the agent's in-process one is.
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
	"os"

	"github.com/goalbox/goalbox/pkg/envflag"
	"github.com/goalbox/goalbox/pkg/mcpserve"
	"github.com/goalbox/goalbox/pkg/pathguard"
	"github.com/goalbox/goalbox/pkg/protocol"
	"github.com/goalbox/goalbox/servers/executor/assemble"
	"github.com/goalbox/goalbox/servers/executor/execserver"
)

const envPrefix = "GOALBOX_EXEC_"

// options are the executor command's settings besides mcpserve.Config: the workspace's advertised root, which the
// guard takes, and everything the executor is built from, whose flags bind to assemble.Options in place.
type options struct {
	AdvertisedRoot string `env:"ADVERTISED_ROOT" flag:"advertised-root" usage:"absolute path under which clients see the workspace, as given to the filesystem server (default /workspace)"`
	assemble.Options
}

func main() {
	os.Exit(mcpserve.ExitCode("executor", run(os.Args), os.Stderr))
}

// run configures the server, builds it and serves until shut down; build changes how the executor is built (the
// tests' main mode). Its error is a mcpserve.ConfigError when the configuration is wrong: main exits by the
// servers' one policy (mcpserve.ExitCode), as the filesystem server's does: 0 after a clean shutdown, 2 for bad
// configuration, 1 when serving failed.
func run(args []string, build ...assemble.Option) error {
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
	ex, err := assemble.New(ctx, g, opts.Options, logger, build...)
	if err != nil {
		return mcpserve.ConfigError(err)
	}
	defer ex.Close()
	return mcpserve.Run(ctx, ex.Server(), execserver.Name, cfg, ex.Health, logger)
}

// configure reads the settings: the defaults, then the environment, then the flags.
func configure(args []string) (mcpserve.Config, options, error) {
	cfg := mcpserve.Config{Addr: protocol.DefaultExecutorAddr}
	var opts options
	o := envflag.Options{Prefix: envPrefix, Docs: assemble.ProtectDocs}
	if err := envflag.ParseEnv(&opts, o); err != nil {
		return cfg, opts, mcpserve.ConfigError(err)
	}
	_, err := mcpserve.Load(&cfg, envPrefix, args, func(fs *flag.FlagSet) { envflag.Register(fs, &opts, o) })
	return cfg, opts, err
}
