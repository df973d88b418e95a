// Command filesystem is goalbox's filesystem MCP server: seven file tools confined to one workspace folder, over
// streamable HTTP (default http://127.0.0.1:7101/mcp) or stdio.
//
//	filesystem -workspace DIR [-addr 127.0.0.1:7101] [-stdio] [-token T] [-audit-log FILE] ...
//
// Every flag has an environment equivalent, GOALBOX_FS_ plus the flag's name in capitals with _ for -.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"runtime/debug"

	"github.com/caarlos0/env/v11"
	"github.com/goalbox/goalbox/pkg/mcpserve"
	"github.com/goalbox/goalbox/pkg/pathguard"
	"github.com/goalbox/goalbox/pkg/protocol"
	"github.com/goalbox/goalbox/servers/filesystem/fsserver"
)

const envPrefix = "GOALBOX_FS_"

// limits are this server's own settings, beyond the shared mcpserve.Config.
type limits struct {
	AdvertisedRoot   string `env:"ADVERTISED_ROOT"`
	MaxReadBytes     int64  `env:"MAX_READ_BYTES"`
	MaxWriteBytes    int64  `env:"MAX_WRITE_BYTES"`
	MaxReadLines     int    `env:"MAX_READ_LINES"`
	MaxContentBytes  int    `env:"MAX_CONTENT_BYTES"`
	MaxListEntries   int    `env:"MAX_LIST_ENTRIES"`
	MaxSearchResults int    `env:"MAX_SEARCH_RESULTS"`
	MaxTreeDepth     int    `env:"MAX_TREE_DEPTH"`
	MaxTreeEntries   int    `env:"MAX_TREE_ENTRIES"`
	// MaxWorkspaceBytes is the disk cap, counted as du counts; 0 or -1 is none.
	MaxWorkspaceBytes int64 `env:"MAX_WORKSPACE_BYTES"`
}

// defaultMaxWorkspaceBytes is the disk cap by default: the executor's default for the same workspace (16 GiB for it,
// its commands' home and temp together), so that the file tools do not fill what commands may not. A caller that
// embeds the server (the agent) gets no cap unless it asks for one: pathguard's own default is none.
const defaultMaxWorkspaceBytes = 16 << 30

func main() {
	if os.Getenv("GOGC") == "" {
		// The live heap is small and every call churns through JSON, so the default collector runs every few calls.
		// At 400 it costs about a quarter less CPU per call (BenchmarkReadFile16K srv-cpu-us: 1450 -> 1100 us on a
		// busy 2-core machine) for a heap a few times the live one. GOGC, when set, wins.
		debug.SetGCPercent(400)
	}
	os.Exit(mcpserve.ExitCode("filesystem", run(os.Args), os.Stderr))
}

func run(args []string) error {
	lim := limits{
		AdvertisedRoot: protocol.DefaultRoot, MaxReadBytes: pathguard.DefaultMaxReadBytes, MaxWriteBytes: pathguard.DefaultMaxWriteBytes,
		MaxReadLines: fsserver.DefaultMaxReadLines, MaxContentBytes: fsserver.DefaultMaxReadContentBytes,
		MaxListEntries: fsserver.DefaultMaxListEntries, MaxSearchResults: fsserver.DefaultMaxSearchResults,
		MaxTreeDepth: pathguard.DefaultMaxTreeDepth, MaxTreeEntries: pathguard.DefaultMaxTreeEntries,
		MaxWorkspaceBytes: defaultMaxWorkspaceBytes,
	}
	if err := env.ParseWithOptions(&lim, env.Options{Prefix: envPrefix}); err != nil {
		return fmt.Errorf("environment: %w", err)
	}
	cfg := mcpserve.Config{Addr: protocol.DefaultFilesystemAddr}
	var version bool
	_, err := mcpserve.Load(&cfg, envPrefix, args, func(fs *flag.FlagSet) {
		fs.BoolVar(&version, "version", false, "print the version and exit")
		fs.StringVar(&lim.AdvertisedRoot, "advertised-root", lim.AdvertisedRoot, "absolute path under which clients see the workspace (env "+envPrefix+"ADVERTISED_ROOT)")
		fs.Int64Var(&lim.MaxReadBytes, "max-read-bytes", lim.MaxReadBytes, "largest file edited or searched, in bytes (env "+envPrefix+"MAX_READ_BYTES)")
		fs.Int64Var(&lim.MaxWriteBytes, "max-write-bytes", lim.MaxWriteBytes, "largest file written, in bytes (env "+envPrefix+"MAX_WRITE_BYTES)")
		fs.IntVar(&lim.MaxReadLines, "max-read-lines", lim.MaxReadLines, "default and maximum lines per read (env "+envPrefix+"MAX_READ_LINES)")
		fs.IntVar(&lim.MaxContentBytes, "max-content-bytes", lim.MaxContentBytes, "most content bytes one read returns (env "+envPrefix+"MAX_CONTENT_BYTES)")
		fs.IntVar(&lim.MaxListEntries, "max-list-entries", lim.MaxListEntries, "most entries one listing returns (env "+envPrefix+"MAX_LIST_ENTRIES)")
		fs.IntVar(&lim.MaxSearchResults, "max-search-results", lim.MaxSearchResults, "most matches one search returns (env "+envPrefix+"MAX_SEARCH_RESULTS)")
		fs.IntVar(&lim.MaxTreeDepth, "max-tree-depth", lim.MaxTreeDepth, "most folder levels one list, search or move check goes down (env "+envPrefix+"MAX_TREE_DEPTH)")
		fs.IntVar(&lim.MaxTreeEntries, "max-tree-entries", lim.MaxTreeEntries, "most entries one list, search or move check reads (env "+envPrefix+"MAX_TREE_ENTRIES)")
		fs.Int64Var(&lim.MaxWorkspaceBytes, "max-workspace-bytes", lim.MaxWorkspaceBytes, "disk cap: most bytes the workspace may take on disk (as du counts) after a write through this server; default 16 GiB, 0 or -1 for none (env "+envPrefix+"MAX_WORKSPACE_BYTES)")
	})
	if version {
		fmt.Println(fsserver.Name, mcpserve.Version())
		return nil
	}
	if err == flag.ErrHelp {
		return nil
	}
	if err != nil {
		return err
	}
	logger, err := mcpserve.NewLogger(cfg.LogLevel)
	if err != nil {
		return err
	}
	if lim.MaxWorkspaceBytes < -1 {
		return fmt.Errorf("-max-workspace-bytes must be a number of bytes, or 0 or -1 for no cap; got %d", lim.MaxWorkspaceBytes)
	}
	g, err := pathguard.Open(cfg.Workspace, pathguard.Options{AdvertisedRoot: lim.AdvertisedRoot, MaxReadBytes: lim.MaxReadBytes,
		MaxWriteBytes: lim.MaxWriteBytes, MaxTreeDepth: lim.MaxTreeDepth, MaxTreeEntries: lim.MaxTreeEntries, MaxWorkspaceBytes: lim.MaxWorkspaceBytes})
	if err != nil {
		return err
	}
	defer g.Close()
	opts := fsserver.Options{MaxReadLines: lim.MaxReadLines, MaxReadContentBytes: lim.MaxContentBytes,
		MaxListEntries: lim.MaxListEntries, MaxSearchResults: lim.MaxSearchResults, Logger: logger}
	health := func() protocol.FilesystemHealth { return fsserver.Health(g, opts) }
	logger.Info("filesystem server", "version", mcpserve.Version(), "workspace", g.Dir(), "advertised_root", g.AdvertisedRoot(),
		"limits", health().Limits)
	return mcpserve.Run(context.Background(), fsserver.New(g, opts), fsserver.Name, cfg, health, logger)
}
