//go:build unix

package fsserver_test

import (
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/goalbox/goalbox/pkg/ciskip"
	"github.com/goalbox/goalbox/pkg/mcpserve"
	"github.com/goalbox/goalbox/pkg/pathguard"
	"github.com/goalbox/goalbox/pkg/protocol"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A project as a person has it: a repository with a commit and a second branch, a nested repository, editor and
// agent settings. The hooks and configs that the attacks below try to plant would, if they landed, run the test's
// marker script when the host's git runs.

// hostGit runs git on the host in dir, as the person whose project the workspace is would, isolated from the
// machine's own git configuration.
func hostGit(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "HOME="+t.TempDir(),
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// project makes the project in ws and returns the marker file a planted hook would create and the script that
// creates it.
func project(t *testing.T, ws string) (marker, script string) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		ciskip.Skip(t, "no git on this machine")
	}
	dir := t.TempDir()
	marker = filepath.Join(dir, "ran")
	script = "#!/bin/sh\necho planted >> " + marker + "\n"
	for _, repo := range []string{ws, filepath.Join(ws, "sub")} {
		must(t, os.MkdirAll(repo, 0o755))
		hostGit(t, repo, "init", "-q", "-b", "main")
		files(t, repo, map[string]string{"README": "hello\n"})
		hostGit(t, repo, "add", "-A")
		hostGit(t, repo, "commit", "-q", "-m", "first")
		hostGit(t, repo, "branch", "other")
	}
	files(t, ws, map[string]string{
		"a/.vscode/tasks.json":  "{}\n",
		".vscode/settings.json": "{}\n",
		".envrc":                "export X=1\n",
		".mcp.json":             "{}\n",
		".claude/settings.json": "{}\n",
		"x/hooks/post-checkout": script, // an ordinary folder whose move to .git would plant a hook
		"x/config":              "[core]\n\tfsmonitor = " + filepath.Join(ws, "evil.sh") + "\n",
		"evil.sh":               script,
		"plain/file.txt":        "one\ntwo\n",
		"plain/del.txt":         "delete me\n",
		"plain/mv.txt":          "move me\n",
	})
	must(t, os.Chmod(filepath.Join(ws, "x/hooks/post-checkout"), 0o755))
	must(t, os.Chmod(filepath.Join(ws, "evil.sh"), 0o755))
	// A repository whose config runs the marker on every git status: a gitlink or a commondir that points git at it
	// runs the marker in the repository that has them. victim is an ordinary folder the attacks try to make one.
	evil := filepath.Join(ws, "evilrepo")
	must(t, os.MkdirAll(evil, 0o755))
	hostGit(t, evil, "init", "-q")
	hostGit(t, evil, "config", "core.fsmonitor", filepath.Join(ws, "evil.sh"))
	files(t, ws, map[string]string{"victim/README": "not a repository\n", "gitlink.txt": "gitdir: ../evilrepo/.git\n"})
	// A submodule's layout: lib/.git is a gitlink to .git/modules/lib, whose config and hooks git uses in lib.
	must(t, os.MkdirAll(filepath.Join(ws, ".git/modules"), 0o755))
	hostGit(t, ws, "init", "-q", "--separate-git-dir", filepath.Join(ws, ".git/modules/lib"), filepath.Join(ws, "lib"))
	return marker, script
}

// nothingRuns runs the host's git as the person would (status, a checkout of another branch and back) in both
// repositories and fails when anything planted ran.
func nothingRuns(t *testing.T, ws, marker, after string) {
	t.Helper()
	for _, repo := range []string{ws, filepath.Join(ws, "sub")} {
		hostGit(t, repo, "status", "--short")
		hostGit(t, repo, "checkout", "-q", "other")
		hostGit(t, repo, "checkout", "-q", "main")
	}
	hostGit(t, filepath.Join(ws, "victim"), "status", "--short") // ws's own repository, unless a gitlink landed
	hostGit(t, filepath.Join(ws, "lib"), "status", "--short")    // the submodule's, from .git/modules/lib
	if b, err := os.ReadFile(marker); err == nil {
		t.Fatalf("after %s, the host's git ran something planted: %q", after, b)
	}
}

// snapshotTree is every entry under dir: a file's content, a folder, a symlink's target.
func snapshotTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	must(t, filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		switch {
		case fi.Mode()&os.ModeSymlink != 0:
			l, _ := os.Readlink(p)
			out[rel] = "-> " + l
		case fi.IsDir():
			out[rel] = "dir"
		default:
			b, _ := os.ReadFile(p)
			out[rel] = fi.Mode().String() + " " + string(b)
		}
		return nil
	}))
	return out
}

// protectedAttacks are calls that would create, change, replace, move or delete a protected path, each made over
// MCP. Paths are under every default pattern, at the top and at depth, and in other cases.
func protectedAttacks(script string) []struct {
	tool string
	args map[string]any
} {
	type attack = struct {
		tool string
		args map[string]any
	}
	var out []attack
	write := func(p string) {
		out = append(out, attack{protocol.ToolWriteFile, map[string]any{"path": p, "content": script}})
	}
	for _, pat := range pathguard.DefaultProtected {
		p := strings.ReplaceAll(pat, "*", "other")
		for _, at := range []string{p, "sub/" + p, "deep/er/" + p} {
			write(at)
			if !strings.Contains(pat, "config") && pat != ".gitmodules" && pat != ".envrc" && pat != ".mcp.json" {
				write(at + "/post-checkout")
			}
			out = append(out, attack{protocol.ToolMovePath, map[string]any{"source": "plain/mv.txt", "destination": at, "overwrite": true}})
		}
	}
	for _, p := range []string{".GIT/hooks/post-checkout", ".Git/Config", "A/.VSCODE/tasks.json", "sub/.git/hooks/post-checkout"} {
		write(p)
	}
	out = append(out,
		// git's own configuration, pointed at a hook folder or a monitor of the attacker's making.
		attack{protocol.ToolWriteFile, map[string]any{"path": ".git/config", "content": "[core]\n\thooksPath = x/hooks\n"}},
		attack{protocol.ToolWriteFile, map[string]any{"path": "sub/.git/config", "content": "[core]\n\tfsmonitor = ../evil.sh\n"}},
		attack{protocol.ToolWriteFile, map[string]any{"path": ".git/hooks/post-checkout", "content": "IyEvYmluL3NoCg==", "encoding": "base64"}},
		// Edits of existing protected files.
		attack{protocol.ToolEditFile, map[string]any{"path": ".git/config", "old_text": "[core]", "new_text": "[core]\n\thooksPath = x/hooks"}},
		attack{protocol.ToolEditFile, map[string]any{"path": "sub/.git/config", "old_text": "[core]", "new_text": "[core]\n\thooksPath = ../x/hooks"}},
		attack{protocol.ToolEditFile, map[string]any{"path": "a/.vscode/tasks.json", "old_text": "{}", "new_text": `{"tasks":[{"runOptions":{"runOn":"folderOpen"}}]}`}},
		attack{protocol.ToolEditFile, map[string]any{"path": ".envrc", "old_text": "X=1", "new_text": "X=1; ./evil.sh"}},
		attack{protocol.ToolEditFile, map[string]any{"path": ".git/hooks/pre-commit.sample", "old_text": "#!/bin/sh", "new_text": "#!/bin/sh\n./evil.sh"}},
		attack{protocol.ToolEditFile, map[string]any{"path": ".git/config", "old_text": "absent", "new_text": "x"}}, // refused first, not "not found"
		// Deletes: the path, and folders that hold one.
		attack{protocol.ToolDeletePath, map[string]any{"path": ".git/config"}},
		attack{protocol.ToolDeletePath, map[string]any{"path": ".git/hooks/pre-commit.sample"}},
		attack{protocol.ToolDeletePath, map[string]any{"path": ".git/hooks", "recursive": true}},
		attack{protocol.ToolDeletePath, map[string]any{"path": ".git", "recursive": true}},
		attack{protocol.ToolDeletePath, map[string]any{"path": "sub", "recursive": true}},
		attack{protocol.ToolDeletePath, map[string]any{"path": "a", "recursive": true}},
		attack{protocol.ToolDeletePath, map[string]any{"path": ".envrc"}},
		attack{protocol.ToolDeletePath, map[string]any{"path": ".claude", "recursive": true}},
		// Moves: a protected source, a folder holding one, a protected destination, a folder that would put one
		// in place (x holds hooks/post-checkout and config).
		attack{protocol.ToolMovePath, map[string]any{"source": ".git/config", "destination": "config.bak"}},
		attack{protocol.ToolMovePath, map[string]any{"source": ".git/hooks", "destination": "old-hooks"}},
		attack{protocol.ToolMovePath, map[string]any{"source": ".git", "destination": "git-moved"}},
		attack{protocol.ToolMovePath, map[string]any{"source": "sub", "destination": "sub-moved"}},
		attack{protocol.ToolMovePath, map[string]any{"source": ".mcp.json", "destination": "mcp.json"}},
		attack{protocol.ToolMovePath, map[string]any{"source": "x", "destination": "fresh/.git"}},
		attack{protocol.ToolMovePath, map[string]any{"source": "x/hooks", "destination": "sub/.git/hooks-new/../hooks"}},
		attack{protocol.ToolMovePath, map[string]any{"source": "evil.sh", "destination": ".git/hooks/post-checkout"}},
		attack{protocol.ToolMovePath, map[string]any{"source": "evil.sh", "destination": "sub/.git/hooks/post-merge"}},
		attack{protocol.ToolMovePath, map[string]any{"source": "x/config", "destination": ".git/config", "overwrite": true}},
		// A gitlink or a commondir points git at another repository's config and hooks (evilrepo's runs the marker).
		attack{protocol.ToolWriteFile, map[string]any{"path": "victim/.git", "content": "gitdir: ../evilrepo/.git\n"}},
		attack{protocol.ToolWriteFile, map[string]any{"path": "victim/.GIT", "content": "gitdir: ../evilrepo/.git\n"}},
		attack{protocol.ToolMovePath, map[string]any{"source": "gitlink.txt", "destination": "victim/.git"}},
		attack{protocol.ToolWriteFile, map[string]any{"path": "sub/.git/commondir", "content": "../../evilrepo/.git\n"}},
		attack{protocol.ToolWriteFile, map[string]any{"path": ".git/commondir", "content": "../evilrepo/.git\n"}},
		// The submodule's own config and hooks, and its gitlink pointed elsewhere.
		attack{protocol.ToolWriteFile, map[string]any{"path": ".git/modules/lib/config", "content": "[core]\n\tfsmonitor = ../evil.sh\n"}},
		attack{protocol.ToolEditFile, map[string]any{"path": ".git/modules/lib/config", "old_text": "[core]", "new_text": "[core]\n\thooksPath = ../../../x/hooks"}},
		attack{protocol.ToolWriteFile, map[string]any{"path": ".git/modules/lib/hooks/post-checkout", "content": script}},
		attack{protocol.ToolWriteFile, map[string]any{"path": "lib/.git", "content": "gitdir: ../evilrepo/.git\n"}},
		attack{protocol.ToolDeletePath, map[string]any{"path": ".git/modules", "recursive": true}},
	)
	return out
}

// TestProtectedFiles is the attack on the project itself: every tool that changes the tree tries to
// plant a hook or a config that the host's git, editor, direnv or MCP client would run. Each is refused with a
// message that names the rule and the flag, leaves the tree exactly as it was, and afterwards the host's git
// status and checkout run nothing. Positive controls: the same operations on ordinary paths land; protected files
// read, list and search; and a hook the test plants itself does run when git does, so the check can see one.
func TestProtectedFiles(t *testing.T) {
	eachTransport(t, setup{}, func(t *testing.T, ws string, cs *mcp.ClientSession) {
		marker, script := project(t, ws)
		parent := filepath.Dir(ws)
		before := snapshotTree(t, ws)
		for _, a := range protectedAttacks(script) {
			msg := fails(t, cs, a.tool, a.args, "protected project file", "pattern ", "-unprotect")
			if strings.Contains(msg, parent) {
				t.Errorf("%s %v: the message shows a host path: %q", a.tool, a.args, msg)
			}
			if after := snapshotTree(t, ws); !maps(before, after) {
				t.Fatalf("%s %v was refused but changed the tree:\n%s", a.tool, a.args, diffMaps(before, after))
			}
		}
		nothingRuns(t, ws, marker, "the refused attacks")

		// Reading stays allowed.
		rd := ok[protocol.ReadFileOutput](t, cs, protocol.ToolReadFile, map[string]any{"path": ".git/config"})
		if !strings.Contains(rd.Content, "[core]") {
			t.Errorf("read .git/config: %+v", rd)
		}
		ls := ok[protocol.ListFilesOutput](t, cs, protocol.ToolListFiles, map[string]any{"path": ".git/hooks"})
		if len(ls.Entries) == 0 {
			t.Errorf("list .git/hooks: %+v", ls)
		}
		sr := ok[protocol.SearchFilesOutput](t, cs, protocol.ToolSearchFiles, map[string]any{"pattern": "bare", "path": ".git", "include": "config"})
		if len(sr.Matches) == 0 {
			t.Errorf("search .git/config: %+v", sr)
		}
		// The same operations on ordinary paths land, ordinary git data included.
		ok[protocol.WriteFileOutput](t, cs, protocol.ToolWriteFile, map[string]any{"path": "plain/new.txt", "content": "new"})
		ok[protocol.WriteFileOutput](t, cs, protocol.ToolWriteFile, map[string]any{"path": "hooks/post-checkout", "content": script})
		ok[protocol.WriteFileOutput](t, cs, protocol.ToolWriteFile, map[string]any{"path": ".git/info/exclude", "content": "*.log\n"})
		ok[protocol.EditFileOutput](t, cs, protocol.ToolEditFile, map[string]any{"path": "plain/file.txt", "old_text": "one", "new_text": "uno"})
		ok[protocol.DeletePathOutput](t, cs, protocol.ToolDeletePath, map[string]any{"path": "plain/del.txt"})
		ok[protocol.MovePathOutput](t, cs, protocol.ToolMovePath, map[string]any{"source": "plain/mv.txt", "destination": "plain/moved.txt"})
		ok[protocol.MovePathOutput](t, cs, protocol.ToolMovePath, map[string]any{"source": "x", "destination": "y"})
		ok[protocol.DeletePathOutput](t, cs, protocol.ToolDeletePath, map[string]any{"path": "y", "recursive": true})
		if got := readHost(t, filepath.Join(ws, "plain/file.txt")); got != "uno\ntwo\n" {
			t.Errorf("the edit did not land: %q", got)
		}
		nothingRuns(t, ws, marker, "the ordinary operations")

		// The check can see what it looks for: a gitlink the test writes on the host runs evilrepo's monitor, and a
		// hook it plants itself runs.
		must(t, os.WriteFile(filepath.Join(ws, "victim/.git"), []byte("gitdir: ../evilrepo/.git\n"), 0o644))
		hostGit(t, filepath.Join(ws, "victim"), "status", "--short")
		if b, err := os.ReadFile(marker); err != nil || !strings.Contains(string(b), "planted") {
			t.Fatalf("a gitlink planted by the test did not run evilrepo's monitor: %q, %v", b, err)
		}
		must(t, os.Remove(marker))
		must(t, os.WriteFile(filepath.Join(ws, ".git/hooks/post-checkout"), []byte(script), 0o755))
		hostGit(t, ws, "checkout", "-q", "other")
		if b, err := os.ReadFile(marker); err != nil || !strings.Contains(string(b), "planted") {
			t.Fatalf("a hook planted by the test did not run: %q, %v", b, err)
		}
	})
}

// TestProtectedThroughLinks: symlinks and hard links a command made on disk do not let a tool change a protected
// path through them; the hook check runs git afterwards. A hard link to .git/config is replaced by a write (the
// write renames a new file over the link's name), so .git/config keeps its content.
func TestProtectedThroughLinks(t *testing.T) {
	eachTransport(t, setup{}, func(t *testing.T, ws string, cs *mcp.ClientSession) {
		marker, script := project(t, ws)
		for target, link := range map[string]string{
			".git": "g", ".git/hooks": "hk", ".git/config": "cfg", "../sub/.git/hooks": "d/subhooks",
			".git/hooks/post-checkout": "dangling", "plain": "p",
		} {
			must(t, os.MkdirAll(filepath.Dir(filepath.Join(ws, link)), 0o755))
			must(t, os.Symlink(target, filepath.Join(ws, link)))
		}
		cfg := filepath.Join(ws, ".git/config")
		must(t, os.Link(cfg, filepath.Join(ws, "hard")))
		original := readHost(t, cfg)
		before := snapshotTree(t, ws)
		for _, c := range []struct {
			tool string
			args map[string]any
		}{
			{protocol.ToolWriteFile, map[string]any{"path": "cfg", "content": "[core]\n\thooksPath = x/hooks\n"}},
			{protocol.ToolWriteFile, map[string]any{"path": "g/config", "content": "[core]\n\thooksPath = x/hooks\n"}},
			{protocol.ToolWriteFile, map[string]any{"path": "g/hooks/post-checkout", "content": script}},
			{protocol.ToolWriteFile, map[string]any{"path": "hk/post-checkout", "content": script}},
			{protocol.ToolWriteFile, map[string]any{"path": "d/subhooks/post-checkout", "content": script}},
			{protocol.ToolWriteFile, map[string]any{"path": "dangling", "content": script}},
			{protocol.ToolEditFile, map[string]any{"path": "cfg", "old_text": "[core]", "new_text": "[core]\n\thooksPath = x/hooks"}},
			{protocol.ToolMovePath, map[string]any{"source": "evil.sh", "destination": "hk/post-checkout"}},
			{protocol.ToolMovePath, map[string]any{"source": "x/config", "destination": "g/config", "overwrite": true}},
			{protocol.ToolMovePath, map[string]any{"source": "g/hooks", "destination": "stolen"}},
			{protocol.ToolMovePath, map[string]any{"source": "x", "destination": "p/.git"}},
			{protocol.ToolDeletePath, map[string]any{"path": "g/config"}},
			{protocol.ToolDeletePath, map[string]any{"path": "g/hooks", "recursive": true}},
		} {
			fails(t, cs, c.tool, c.args, "protected project file")
			if after := snapshotTree(t, ws); !maps(before, after) {
				t.Fatalf("%s %v was refused but changed the tree:\n%s", c.tool, c.args, diffMaps(before, after))
			}
		}
		nothingRuns(t, ws, marker, "the refused writes through links")

		// The hard link: the write lands on the link's own name and .git/config is as it was.
		ok[protocol.WriteFileOutput](t, cs, protocol.ToolWriteFile, map[string]any{"path": "hard", "content": "[core]\n\thooksPath = x/hooks\n"})
		if got := readHost(t, cfg); got != original {
			t.Errorf(".git/config was written through a hard link: %q", got)
		}
		if got := readHost(t, filepath.Join(ws, "hard")); !strings.Contains(got, "hooksPath") {
			t.Errorf("the write did not land on the link: %q", got)
		}
		nothingRuns(t, ws, marker, "a write of a hard link to .git/config")
		// Positive controls: a write through a link to an ordinary folder lands; deleting a link to a protected
		// file deletes the link only.
		ok[protocol.WriteFileOutput](t, cs, protocol.ToolWriteFile, map[string]any{"path": "p/through.txt", "content": "ok"})
		ok[protocol.DeletePathOutput](t, cs, protocol.ToolDeletePath, map[string]any{"path": "cfg"})
		if got := readHost(t, cfg); got != original {
			t.Errorf(".git/config after deleting a link to it: %q", got)
		}
	})
}

// TestUnprotect: a server started with -unprotect .vscode lets the tools change .vscode (the other defaults stay
// protected), -protect adds a pattern, and /healthz lists the rules in force as data.
func TestUnprotect(t *testing.T) {
	s := setup{protect: []string{"secrets,*.pem"}, unprotect: []string{".vscode"}}
	eachTransport(t, s, func(t *testing.T, ws string, cs *mcp.ClientSession) {
		ok[protocol.WriteFileOutput](t, cs, protocol.ToolWriteFile, map[string]any{"path": "a/.vscode/tasks.json", "content": "{}"})
		ok[protocol.DeletePathOutput](t, cs, protocol.ToolDeletePath, map[string]any{"path": "a", "recursive": true})
		fails(t, cs, protocol.ToolWriteFile, map[string]any{"path": ".idea/x.xml", "content": "x"}, `pattern ".idea"`)
		fails(t, cs, protocol.ToolWriteFile, map[string]any{"path": "k/secrets/key", "content": "x"}, `pattern "secrets"`)
		fails(t, cs, protocol.ToolWriteFile, map[string]any{"path": "tls/server.PEM", "content": "x"}, `pattern "*.pem"`)
	})
	ws := t.TempDir()
	_, run := startHTTP(t, ws, s, mcpserve.Config{})
	resp, err := http.Get("http://" + run.Addr + protocol.HealthPath)
	must(t, err)
	defer resp.Body.Close()
	var health protocol.FilesystemHealth
	must(t, json.NewDecoder(resp.Body).Decode(&health))
	want := slices.DeleteFunc(slices.Clone(pathguard.DefaultProtected), func(p string) bool { return p == ".vscode" })
	want = append(want, "secrets", "*.pem")
	if !slices.Equal(health.Protected, want) {
		t.Errorf("health protected = %q, want %q", health.Protected, want)
	}
}

func maps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func diffMaps(a, b map[string]string) string {
	var out []string
	for k, v := range a {
		if w, ok := b[k]; !ok {
			out = append(out, "gone: "+k)
		} else if w != v {
			out = append(out, "changed: "+k)
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			out = append(out, "new: "+k)
		}
	}
	slices.Sort(out)
	return strings.Join(out, "\n")
}
