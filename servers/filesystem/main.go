// Command filesystem is goalbox's filesystem MCP server: eleven tools (seven on files, four on checkpoints of the
// workspace) confined to one workspace folder, over streamable HTTP (default http://127.0.0.1:7101/mcp) or stdio.
//
//	filesystem -workspace DIR [-addr 127.0.0.1:7101] [-stdio] [-token T|none] [-token-file F] [-audit-log FILE] ...
//
// Over HTTP it requires a bearer token: without -token it generates one, prints it and writes it to a file only its
// user can read (docs/serving.md#tokens). Every flag has an environment equivalent, GOALBOX_FS_ plus the flag's
// name in capitals with _ for -.
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
	"github.com/goalbox/goalbox/servers/filesystem/fsserver"
)

const envPrefix = "GOALBOX_FS_"

// limits are this server's own settings, beyond the shared mcpserve.Config.
type limits struct {
	AdvertisedRoot     string `env:"ADVERTISED_ROOT" flag:"advertised-root" usage:"absolute path under which clients see the workspace"`
	MaxReadBytes       int64  `env:"MAX_READ_BYTES" flag:"max-read-bytes" usage:"largest file edited or searched, in bytes"`
	MaxWriteBytes      int64  `env:"MAX_WRITE_BYTES" flag:"max-write-bytes" usage:"largest file written, in bytes"`
	MaxReadLines       int    `env:"MAX_READ_LINES" flag:"max-read-lines" usage:"default and maximum lines per read"`
	MaxContentBytes    int    `env:"MAX_CONTENT_BYTES" flag:"max-content-bytes" usage:"most content bytes one read returns"`
	MaxBinaryReadBytes int64  `env:"MAX_BINARY_READ_BYTES" flag:"max-binary-read-bytes" usage:"largest file one read returns whole, as an image or base64, in bytes"`
	MaxListEntries     int    `env:"MAX_LIST_ENTRIES" flag:"max-list-entries" usage:"most entries one listing returns"`
	MaxSearchResults   int    `env:"MAX_SEARCH_RESULTS" flag:"max-search-results" usage:"most matches one search returns"`
	MaxTreeDepth       int    `env:"MAX_TREE_DEPTH" flag:"max-tree-depth" usage:"most folder levels one list, search or move check goes down"`
	MaxTreeEntries     int    `env:"MAX_TREE_ENTRIES" flag:"max-tree-entries" usage:"most entries one list, search or move check reads"`
	// MaxWorkspaceBytes is the disk cap, counted as du counts; 0 or -1 is none.
	MaxWorkspaceBytes int64 `env:"MAX_WORKSPACE_BYTES" flag:"max-workspace-bytes" usage:"disk cap: most bytes the workspace may take on disk (as du counts) after a write through this server; default 16 GiB, 0 or -1 for none"`
	// Checkpoints: where their store is and its caps (fsserver/checkpoint_store.go).
	CheckpointDir      string `env:"CHECKPOINT_DIR" flag:"checkpoint-dir" usage:"folder outside the workspace for checkpoint stores (one per workspace); default goalbox/checkpoints in the user's cache folder"`
	CheckpointMaxBytes int64  `env:"CHECKPOINT_MAX_BYTES" flag:"checkpoint-max-bytes" usage:"most bytes of distinct content a workspace's checkpoints keep; past it the oldest are dropped (default 2 GiB)"`
	CheckpointMaxCount int    `env:"CHECKPOINT_MAX_COUNT" flag:"checkpoint-max-count" usage:"most checkpoints a workspace keeps; past it the oldest are dropped (default 100)"`
	// Protect and Unprotect adjust the protected project files (pathguard.DefaultProtected).
	Protect    []string              `env:"PROTECT" envSeparator:"," flag:"protect" flagList:"repeat"` // usage: protectDocs
	Unprotect  []string              `env:"UNPROTECT" envSeparator:"," flag:"unprotect" flagList:"repeat"`
	protection *pathguard.Protection // from Protect and Unprotect
}

// protectDocs are the usage of -protect and -unprotect, shared with the executor and the agent.
var protectDocs = map[string]envflag.Doc{
	"Protect":   {Flag: "protect", Usage: pathguard.ProtectUsage},
	"Unprotect": {Flag: "unprotect", Usage: pathguard.UnprotectUsage()},
}

// defaultMaxWorkspaceBytes is the disk cap by default: the executor's default for the same workspace (16 GiB for it,
// its commands' home and temp together), so that the file tools do not fill what commands may not. A caller that
// embeds the server (the agent) gets no cap unless it asks for one: pathguard's own default is none.
const defaultMaxWorkspaceBytes = 16 << 30

func main() {
	mcpserve.TuneGC() // its live heap is small and each call churns through JSON
	os.Exit(mcpserve.ExitCode("filesystem", run(os.Args), os.Stderr))
}

// run configures the server, builds it and serves until shut down. Its error is a mcpserve.ConfigError when the
// configuration is wrong: main exits by the servers' one policy (mcpserve.ExitCode).
func run(args []string) error {
	cfg, lim, err := configure(args)
	if errors.Is(err, mcpserve.ErrVersion) {
		fmt.Println(fsserver.Name, mcpserve.Version())
		return nil
	}
	if err != nil {
		return err
	}
	logger, err := mcpserve.NewLogger(cfg.LogLevel)
	if err != nil {
		return mcpserve.ConfigError(err)
	}
	g, err := pathguard.Open(cfg.Workspace, pathguard.Options{AdvertisedRoot: lim.AdvertisedRoot, MaxReadBytes: lim.MaxReadBytes,
		MaxWriteBytes: lim.MaxWriteBytes, MaxTreeDepth: lim.MaxTreeDepth, MaxTreeEntries: lim.MaxTreeEntries, MaxWorkspaceBytes: lim.MaxWorkspaceBytes,
		Protection: lim.protection})
	if err != nil {
		return mcpserve.ConfigError(err)
	}
	defer g.Close()
	opts := fsserver.Options{MaxReadLines: lim.MaxReadLines, MaxReadContentBytes: lim.MaxContentBytes, MaxBinaryReadBytes: lim.MaxBinaryReadBytes,
		MaxListEntries: lim.MaxListEntries, MaxSearchResults: lim.MaxSearchResults, Logger: logger,
		Checkpoints: fsserver.CheckpointOptions{Dir: lim.CheckpointDir, MaxBytes: lim.CheckpointMaxBytes, MaxCount: lim.CheckpointMaxCount}}
	files := fsserver.New(g, opts)
	logger.Info("filesystem server", "version", mcpserve.Version(), "workspace", g.Dir(), "advertised_root", g.AdvertisedRoot(),
		"limits", files.Health().Limits, "protected", lim.protection.Patterns())
	return mcpserve.Run(context.Background(), files.Server(), fsserver.Name, cfg, files.Health, logger)
}

// configure reads the settings: the defaults, then the environment, then the flags.
func configure(args []string) (mcpserve.Config, limits, error) {
	lim := limits{
		AdvertisedRoot: protocol.DefaultRoot, MaxReadBytes: pathguard.DefaultMaxReadBytes, MaxWriteBytes: pathguard.DefaultMaxWriteBytes,
		MaxReadLines: fsserver.DefaultMaxReadLines, MaxContentBytes: fsserver.DefaultMaxReadContentBytes,
		MaxBinaryReadBytes: fsserver.DefaultMaxBinaryReadBytes,
		MaxListEntries:     fsserver.DefaultMaxListEntries, MaxSearchResults: fsserver.DefaultMaxSearchResults,
		MaxTreeDepth: pathguard.DefaultMaxTreeDepth, MaxTreeEntries: pathguard.DefaultMaxTreeEntries,
		MaxWorkspaceBytes: defaultMaxWorkspaceBytes,
	}
	o := envflag.Options{Prefix: envPrefix, Docs: protectDocs}
	cfg := mcpserve.Config{Addr: protocol.DefaultFilesystemAddr}
	if err := envflag.ParseEnv(&lim, o); err != nil {
		return cfg, lim, mcpserve.ConfigError(err)
	}
	if _, err := mcpserve.Load(&cfg, envPrefix, args, func(fs *flag.FlagSet) { envflag.Register(fs, &lim, o) }); err != nil {
		return cfg, lim, err
	}
	if lim.MaxWorkspaceBytes < -1 {
		return cfg, lim, mcpserve.ConfigError(fmt.Errorf("-max-workspace-bytes must be a number of bytes, or 0 or -1 for no cap; got %d", lim.MaxWorkspaceBytes))
	}
	p, err := pathguard.ParseProtection(lim.Protect, lim.Unprotect)
	if err != nil {
		return cfg, lim, mcpserve.ConfigError(err)
	}
	lim.protection = p
	return cfg, lim, nil
}
