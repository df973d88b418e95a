package bench

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/goalbox/goalbox/agent/loop"
	"github.com/goalbox/goalbox/agent/sandbox"
	"github.com/goalbox/goalbox/pkg/protocol"
)

// A remote sandbox is a filesystem server and an executor that share one workspace somewhere else (a compose
// stack, a Kubernetes pod). The runner reaches it only through their tools: the exercise's copy on this machine
// stays the record, and the sandbox's workspace is made to match it. Before the model starts, the workspace is
// emptied and the copy uploaded. Before each grade the model's files come back to the copy (all but what Restore
// would delete anyway), Restore puts the tests back on the copy exactly as for a local sandbox, and the workspace
// is emptied and the restored copy uploaded again; then the executor runs the tests. One restore, one grader.

// RemoteSandbox is a pool sandbox over running servers. Both views, the grader's and the model's, are sessions
// with the same two servers; a transport failure or a failed health check is a SandboxFailure.
func RemoteSandbox(name string, fsEP, execEP sandbox.Endpoint) PoolSandbox {
	connect := func(ctx context.Context) (*remoteBox, error) {
		if err := healthy(ctx, fsEP, execEP); err != nil {
			return nil, &SandboxFailure{Sandbox: name, Err: err}
		}
		c, err := sandbox.Connect(ctx, fsEP, execEP)
		if err != nil {
			return nil, &SandboxFailure{Sandbox: name, Err: err}
		}
		return &remoteBox{name: name, c: c}, nil
	}
	return PoolSandbox{
		Name: name,
		Grade: func(ctx context.Context, root string) (loop.Sandbox, func() error, error) {
			b, err := connect(ctx)
			if err != nil {
				return nil, nil, err
			}
			if err := b.load(ctx, root); err != nil {
				b.c.Close()
				// The copy is the pristine exercise (or the reference): failing to load it is the sandbox's fault.
				return nil, nil, &SandboxFailure{Sandbox: name, Err: err}
			}
			return b, b.c.Close, nil
		},
		Agent: func(ctx context.Context, _ string) (loop.Sandbox, func() error, error) {
			b, err := connect(ctx)
			if err != nil {
				return nil, nil, err
			}
			return b, b.c.Close, nil
		},
	}
}

// healthTimeout bounds one health check.
const healthTimeout = 10 * time.Second

// healthy asks each server's health endpoint (beside its MCP endpoint: …/mcp becomes …/healthz) for a 200. An
// endpoint not ending in /mcp (behind a proxy that renames it) is checked by the MCP connection alone.
func healthy(ctx context.Context, eps ...sandbox.Endpoint) error {
	for _, ep := range eps {
		base, ok := strings.CutSuffix(ep.URL, protocol.EndpointPath)
		if !ok {
			continue
		}
		hctx, cancel := context.WithTimeout(ctx, healthTimeout)
		req, err := http.NewRequestWithContext(hctx, http.MethodGet, base+protocol.HealthPath, nil)
		if err != nil {
			cancel()
			return err
		}
		resp, err := http.DefaultClient.Do(req)
		cancel()
		if err != nil {
			return fmt.Errorf("health check: %w", err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("health check of %s: HTTP %d", base+protocol.HealthPath, resp.StatusCode)
		}
	}
	return nil
}

// remoteBox is a session with a remote sandbox's servers. It is a loop.Sandbox whose transport errors are
// SandboxFailures, and a mirror for the grader.
type remoteBox struct {
	name string
	c    *sandbox.Client
}

func (b *remoteBox) Tools() []loop.Tool { return b.c.Tools() }

func (b *remoteBox) Call(ctx context.Context, name string, args json.RawMessage) (loop.ToolResult, error) {
	res, err := b.c.Call(ctx, name, args)
	if err != nil && ctx.Err() == nil && !errors.Is(err, sandbox.ErrUnknownTool) {
		return res, &SandboxFailure{Sandbox: b.name, Err: err}
	}
	return res, err
}

// errTool is a tool's refusal (isError): during a transfer, or of a checkpoint tool (keep.go).
var errTool = errors.New("tool error")

// callTool calls a tool of sb's with in and decodes its structured output into out (when not nil). A tool's
// refusal is an error wrapping errTool; any other error is the sandbox's.
func callTool(ctx context.Context, sb loop.Sandbox, name string, in, out any) error {
	args, err := json.Marshal(in)
	if err != nil {
		return err
	}
	res, err := sb.Call(ctx, name, args)
	if err != nil {
		return err
	}
	if res.IsError {
		return fmt.Errorf("%w: %s: %s", errTool, name, res.Text)
	}
	if out != nil {
		if err := json.Unmarshal(res.Structured, out); err != nil {
			return fmt.Errorf("%s: unexpected output: %v", name, err)
		}
	}
	return nil
}

// list is a folder's own entries.
func (b *remoteBox) list(ctx context.Context, dir string) ([]protocol.ListEntry, error) {
	var out protocol.ListFilesOutput
	if err := callTool(ctx, b, protocol.ToolListFiles, protocol.ListFilesInput{Path: dir, Depth: 1}, &out); err != nil {
		return nil, err
	}
	if out.Truncated {
		return nil, fmt.Errorf("listing %s: more entries than the server lists at once", dir)
	}
	return out.Entries, nil
}

// reset deletes everything in the workspace.
func (b *remoteBox) reset(ctx context.Context) error {
	entries, err := b.list(ctx, ".")
	if err != nil {
		return fmt.Errorf("resetting the workspace: %w", err)
	}
	for _, e := range entries {
		if err := callTool(ctx, b, protocol.ToolDeletePath, protocol.DeletePathInput{Path: e.Path, Recursive: true}, nil); err != nil {
			return fmt.Errorf("resetting the workspace: %w", err)
		}
	}
	return nil
}

// load empties the workspace and uploads every file under root to the same place in it. The write tool keeps no
// file modes: nothing the grader runs needs an executable bit from the exercise (Java is graded with javac, not
// ./gradlew).
func (b *remoteBox) load(ctx context.Context, root string) error {
	if err := b.reset(ctx); err != nil {
		return err
	}
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		in := protocol.WriteFileInput{Path: filepath.ToSlash(rel), Content: base64.StdEncoding.EncodeToString(data), Encoding: protocol.EncodingBase64}
		if err := callTool(ctx, b, protocol.ToolWriteFile, in, nil); err != nil {
			return fmt.Errorf("uploading %s: %w", filepath.ToSlash(rel), err)
		}
		return nil
	})
}

// pull replaces the exercise folder of the copy ws with the sandbox's: every regular file the model left there.
// What Restore deletes (an added test, a conftest.py, node_modules, target/) is not read: an empty file or folder
// stands in for it, so that Restore deletes and reports it as it does locally. A file the server will not read
// whole (over its size cap) is left out, as is a symlink: neither can be a solution the tests load.
func (b *remoteBox) pull(ctx context.Context, ex Exercise, ws Workspace) error {
	files := map[string][]byte{}
	var dirs []string // stand-ins for intruding folders
	var walk func(dir string) error
	walk = func(dir string) error {
		entries, err := b.list(ctx, dir)
		if dir == ws.Rel && errors.Is(err, errTool) {
			return nil // the model deleted the exercise folder: nothing of its own to bring back
		}
		if err != nil {
			return err
		}
		for _, e := range entries {
			rel := strings.TrimPrefix(e.Path, ws.Rel+"/")
			if rel == e.Path {
				continue
			}
			if intruder(ex.Lang, rel, listedEntry{e}) {
				if e.Type == protocol.EntryDir {
					dirs = append(dirs, rel)
				} else {
					files[rel] = nil
				}
				continue
			}
			switch e.Type {
			case protocol.EntryDir:
				if err := walk(e.Path); err != nil {
					return err
				}
			case protocol.EntryFile:
				var out protocol.ReadFileBase64Output
				err := callTool(ctx, b, protocol.ToolReadFile, protocol.ReadFileInput{Path: e.Path, Encoding: protocol.EncodingBase64}, &out)
				if errors.Is(err, errTool) {
					continue
				}
				if err != nil {
					return err
				}
				data, err := base64.StdEncoding.DecodeString(out.Content)
				if err != nil {
					return fmt.Errorf("reading %s: %v", e.Path, err)
				}
				files[rel] = data
			}
		}
		return nil
	}
	if err := walk(ws.Rel); err != nil {
		return fmt.Errorf("fetching the model's files: %w", err)
	}
	if err := os.RemoveAll(ws.Dir()); err != nil {
		return err
	}
	if err := os.MkdirAll(ws.Dir(), 0o755); err != nil {
		return err
	}
	r, err := os.OpenRoot(ws.Dir())
	if err != nil {
		return err
	}
	defer r.Close()
	for _, d := range dirs {
		if err := realDirs(r, d); err != nil {
			return err
		}
	}
	for rel, data := range files {
		if err := writeInto(r, rel, data, 0o644); err != nil {
			return fmt.Errorf("%s: keeping %s: %w", ex.ID(), rel, err)
		}
	}
	return nil
}

// push makes the sandbox's workspace the copy ws, as restored.
func (b *remoteBox) push(ctx context.Context, ws Workspace) error {
	if err := b.load(ctx, ws.Root); err != nil {
		return fmt.Errorf("sending the restored exercise: %w", err)
	}
	return nil
}

// listedEntry is a listing's entry as an fs.DirEntry, for intruder.
type listedEntry struct{ e protocol.ListEntry }

func (l listedEntry) Name() string { return path.Base(l.e.Path) }
func (l listedEntry) IsDir() bool  { return l.e.Type == protocol.EntryDir }
func (l listedEntry) Type() fs.FileMode {
	switch l.e.Type {
	case protocol.EntryDir:
		return fs.ModeDir
	case protocol.EntrySymlink:
		return fs.ModeSymlink
	case protocol.EntryFile:
		return 0
	}
	return fs.ModeIrregular
}
func (l listedEntry) Info() (fs.FileInfo, error) { return nil, errors.New("no file info in a listing") }

// unharness takes the grader's harness back out of the sandbox's workspace after a grade: the grade command's
// trailer tries the same, but the commands' user may not write the files the filesystem server wrote. Files the
// harness stood in for get the exercise's own content back.
func (b *remoteBox) unharness(ctx context.Context, ws Workspace, h harness) error {
	if err := callTool(ctx, b, protocol.ToolDeletePath, protocol.DeletePathInput{Path: path.Join(ws.Rel, harnessDir), Recursive: true}, nil); err != nil && !errors.Is(err, errTool) {
		return err
	}
	for _, f := range sortedKeys(h.files) {
		if strings.HasPrefix(f, harnessDir+"/") {
			continue
		}
		p := path.Join(ws.Rel, f)
		var err error
		if own, ok := h.pristine[f]; ok {
			err = callTool(ctx, b, protocol.ToolWriteFile, protocol.WriteFileInput{Path: p, Content: base64.StdEncoding.EncodeToString(own), Encoding: protocol.EncodingBase64}, nil)
		} else {
			err = callTool(ctx, b, protocol.ToolDeletePath, protocol.DeletePathInput{Path: p}, nil)
		}
		if err != nil && !errors.Is(err, errTool) {
			return err
		}
	}
	return nil
}

// mirror is a sandbox whose workspace is not the host copy the grader restores (a remoteBox).
type mirror interface {
	pull(ctx context.Context, ex Exercise, ws Workspace) error
	push(ctx context.Context, ws Workspace) error
	unharness(ctx context.Context, ws Workspace, h harness) error
}
