// Package fsserver is goalbox's filesystem MCP server: seven tools that read, write, edit, list, search, delete and
// move files inside one workspace, and four that checkpoint, list, diff and restore it (checkpoint_*.go). Every file operation goes through a pathguard.Guard, so no tool can reach outside
// the workspace; this package adds the tools' own limits (lines and bytes per read, entries per listing, matches per
// search) and their messages.
package fsserver

import (
	"errors"
	"fmt"
	"hash/maphash"
	"log/slog"
	"strings"
	"sync"

	"github.com/goalbox/goalbox/pkg/envflag"
	"github.com/goalbox/goalbox/pkg/mcpserve"
	"github.com/goalbox/goalbox/pkg/pathguard"
	"github.com/goalbox/goalbox/pkg/protocol"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Name is the server's MCP implementation name.
const Name = "goalbox-filesystem"

// Options are the tools' limits. Zero values take the defaults below. The guard's own limits (the largest file
// read into memory, the largest write) are set on the pathguard.Guard.
type Options struct {
	// MaxReadLines is the default and the maximum number of lines one read returns.
	MaxReadLines int
	// MaxReadContentBytes caps the content one read returns; a read that hits it says truncated.
	MaxReadContentBytes int
	// MaxBinaryReadBytes caps the files a read returns whole, which it holds in memory: images and base64 reads.
	MaxBinaryReadBytes int64
	// MaxListEntries caps one listing.
	MaxListEntries int
	// MaxListDepth caps how deep one listing descends.
	MaxListDepth int
	// DefaultSearchResults and MaxSearchResults bound the matches one search returns.
	DefaultSearchResults int
	MaxSearchResults     int
	// Logger gets the server's own diagnostics; nil discards them.
	Logger *slog.Logger
	// Checkpoints configure the checkpoint tools' store (checkpoint_store.go).
	Checkpoints CheckpointOptions
}

// Defaults for Options. The content of one read is 32 KiB by default: a result every coding-agent client passes its
// model whole (Claude Code turns one over about 100,000 characters into a file note without the facts; opencode
// drops a line over about 50 KB), and the facts come first for the clients that keep less (docs/clients.md).
const (
	DefaultMaxReadLines         = 2000
	DefaultMaxReadContentBytes  = 32 << 10
	DefaultMaxBinaryReadBytes   = 5 << 20
	DefaultMaxListEntries       = 1000
	DefaultMaxListDepth         = 10
	DefaultDefaultSearchResults = 100
	DefaultMaxSearchResults     = 1000
)

func (o Options) withDefaults() Options {
	envflag.PositiveOr(&o.MaxReadLines, DefaultMaxReadLines)
	envflag.PositiveOr(&o.MaxReadContentBytes, DefaultMaxReadContentBytes)
	envflag.PositiveOr(&o.MaxBinaryReadBytes, DefaultMaxBinaryReadBytes)
	envflag.PositiveOr(&o.MaxListEntries, DefaultMaxListEntries)
	envflag.PositiveOr(&o.MaxListDepth, DefaultMaxListDepth)
	envflag.PositiveOr(&o.MaxSearchResults, DefaultMaxSearchResults)
	envflag.PositiveOr(&o.DefaultSearchResults, DefaultDefaultSearchResults)
	o.DefaultSearchResults = min(o.DefaultSearchResults, o.MaxSearchResults)
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

// Filesystem is the filesystem server of one workspace: its MCP server, its health report, the same shape as the
// executor's execserver.Executor, and what the tool handlers share.
type Filesystem struct {
	server *mcp.Server
	g      *pathguard.Guard
	opts   Options // with its defaults
	// locks are the file locks of the tools that change files, striped by a hash of the file's key (locks.go).
	locks [64]sync.Mutex
	seed  maphash.Seed
}

// Server is the MCP server, for mcpserve.Run or mcpserve.Start.
func (s *Filesystem) Server() *mcp.Server { return s.server }

// New returns the filesystem server for the workspace g.
func New(g *pathguard.Guard, opts Options) *Filesystem {
	s := &Filesystem{g: g, opts: opts.withDefaults(), seed: maphash.MakeSeed()}
	s.server = mcp.NewServer(&mcp.Implementation{Name: Name, Title: "goalbox filesystem sandbox", Version: mcpserve.Version()}, &mcp.ServerOptions{
		Logger:       s.opts.Logger,
		Instructions: instructions(g),
	})
	mcpserve.AddTool(s.server, s.opts.Logger, readTool(s.opts), withHint(s.read))
	mcpserve.AddTool(s.server, s.opts.Logger, writeTool(g), withHint(s.write))
	mcpserve.AddTool(s.server, s.opts.Logger, editTool(g), withHint(s.edit))
	mcpserve.AddTool(s.server, s.opts.Logger, listTool(s.opts), withHint(s.list))
	mcpserve.AddTool(s.server, s.opts.Logger, searchTool(g, s.opts), withHint(s.search))
	mcpserve.AddTool(s.server, s.opts.Logger, deleteTool(), withHint(s.delete))
	mcpserve.AddTool(s.server, s.opts.Logger, moveTool(), withHint(s.move))
	addCheckpointTools(s.server, g, s.opts.Checkpoints, s.opts.Logger)
	return s
}

func instructions(g *pathguard.Guard) string {
	s := "Files of one workspace folder, which appears as " + g.AdvertisedRoot() + ". Give paths relative to it " +
		"(\"src/main.go\") or absolute under " + g.AdvertisedRoot() + "; nothing outside it can be reached. " +
		"Read before you edit; sandbox_edit_file replaces exact text and shows a diff."
	if list := g.Options().Protection.Patterns(); len(list) > 0 {
		// Said up front, so that a model does not spend turns on writes that are always refused.
		s += " Protected project files, at any depth, can be read but not created, changed, moved or deleted: " +
			strings.Join(list, ", ") + "."
	}
	return s
}

// hint adds to a refusal what the model can do about it, where the guard's message alone does not say.
func hint(err error) error {
	if pathguard.IsReason(err, pathguard.ReasonNotFound) {
		return fmt.Errorf("%w; sandbox_list_files shows what exists", err)
	}
	return err
}

// walkError names the tool in an error from a walk of the guard ("walk" means nothing to a client) and, when the
// depth or entry cap stopped the walk, adds what the client can do instead (a busy server already says to retry).
func walkError(err error, tool, instead string) error {
	var e *pathguard.Error
	if !errors.As(err, &e) || e.Op != "walk" {
		return err
	}
	c := *e
	c.Op = tool
	if c.Reason == pathguard.ReasonTooDeep || c.Reason == pathguard.ReasonTooMany {
		c.Detail += "; " + instead
	}
	return &c
}

// Health is what the health endpoint reports about this server: what it serves and its limits.
func (s *Filesystem) Health() protocol.FilesystemHealth {
	g, o := s.g, s.opts
	gopts := g.Options()
	return protocol.FilesystemHealth{
		Server:         Name,
		Version:        mcpserve.Version(),
		Workspace:      g.AdvertisedRoot(), // /healthz is open: never the host path
		AdvertisedRoot: g.AdvertisedRoot(),
		Tools: []string{protocol.ToolReadFile, protocol.ToolWriteFile, protocol.ToolEditFile, protocol.ToolListFiles,
			protocol.ToolSearchFiles, protocol.ToolDeletePath, protocol.ToolMovePath,
			protocol.ToolCheckpoint, protocol.ToolListCheckpoints, protocol.ToolDiff, protocol.ToolRestore},
		Limits: protocol.FilesystemLimits{
			MaxFileBytes:        gopts.MaxReadBytes,
			MaxWriteBytes:       gopts.MaxWriteBytes,
			MaxReadLines:        o.MaxReadLines,
			MaxReadContentBytes: o.MaxReadContentBytes,
			MaxBinaryReadBytes:  o.MaxBinaryReadBytes,
			MaxListEntries:      o.MaxListEntries,
			MaxListDepth:        o.MaxListDepth,
			MaxSearchResults:    o.MaxSearchResults,
			MaxTreeDepth:        gopts.MaxTreeDepth,
			MaxTreeEntries:      gopts.MaxTreeEntries,
			MaxWorkspaceBytes:   gopts.MaxWorkspaceBytes,
		},
		Protected: nonNil(gopts.Protection.Patterns()), // an empty list, never null, when nothing is protected
	}
}

// annotations are the tools' hints, in one place so they can be compared at a glance.
var (
	annRead = func(title string) *mcp.ToolAnnotations {
		return mcpserve.Annotations(mcpserve.Hints{Title: title, ReadOnly: true, Idempotent: true})
	}
	annWrite  = mcpserve.Annotations(mcpserve.Hints{Title: "Write file", Destructive: true, Idempotent: true})  // overwrites; the same call twice leaves the same file
	annEdit   = mcpserve.Annotations(mcpserve.Hints{Title: "Edit file", Destructive: true})                     // a second identical edit finds no match
	annDelete = mcpserve.Annotations(mcpserve.Hints{Title: "Delete path", Destructive: true, Idempotent: true}) // deleting what is gone is a no-op
	annMove   = mcpserve.Annotations(mcpserve.Hints{Title: "Move path", Destructive: true})                     // the source is gone after the first call
)
