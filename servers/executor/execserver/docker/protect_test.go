//go:build linux

package docker

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goalbox/goalbox/servers/executor/execserver/backend"
)

// protectedRepo makes a workspace with a .git/hooks folder, a .git/config and .git/objects, owned by the user.
func protectedRepo(t *testing.T, ws string) {
	t.Helper()
	for _, d := range []string{".git/hooks", ".git/objects"} {
		if err := os.MkdirAll(filepath.Join(ws, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(ws, ".git/config"), []byte("[core]\n\tbare = false\n"), 0o644)
	os.WriteFile(filepath.Join(ws, ".git/hooks/pre-commit.sample"), []byte("#!/bin/sh\n"), 0o755)
	if os.Getuid() == 0 {
		filepath.Walk(filepath.Join(ws, ".git"), func(p string, _ os.FileInfo, _ error) error {
			return os.Lchown(p, dockerTestUID, dockerTestUID)
		})
	}
}

// The attacks on protected paths, each a line that prints "<name>=ok" when it got through.
const protectedAttacks = `
try() { n=$1; shift; if ( "$@" ) >/dev/null 2>&1; then echo "$n=ok"; else echo "$n=refused"; fi; }
try hook-write sh -c 'echo "#!/bin/sh" > .git/hooks/post-checkout'
try config-append sh -c 'echo "[core] hooksPath = /tmp" >> .git/config'
try config-rename-over sh -c 'echo x > c.new && mv -f c.new .git/config'
try config-delete rm -f .git/config
try hooks-rename mv .git/hooks .git/hooks.old
try hooks-delete rm -rf .git/hooks .git/hooks.old
try objects-write sh -c 'echo blob > .git/objects/o'
`

// TestDockerProtectedPaths: with Protected [".git/hooks", ".git/config"] a command cannot write, rename
// over or delete them, while the rest of .git stays writable. Positive control: the same attacks without the
// protected set all get through.
func TestDockerProtectedPaths(t *testing.T) {
	for _, mode := range dockerModes {
		t.Run(mode.name, func(t *testing.T) {
			b, ws := newDockerTestBackend(t, func(c *Config) { c.WarmPool = mode.pool })
			protectedRepo(t, ws)
			config, _ := os.ReadFile(filepath.Join(ws, ".git/config"))
			// Twice: the second takes a pooled container made with the protected set of the first.
			for range 2 {
				code, out := dockerRun(t, b, backend.Request{Command: protectedAttacks, Protected: []string{".git/hooks", ".git/config"}})
				if code != 0 {
					t.Fatalf("%d %s", code, out)
				}
				for _, want := range []string{"hook-write=refused", "config-append=refused", "config-rename-over=refused",
					"config-delete=refused", "hooks-delete=refused", "hooks-rename=refused", "objects-write=ok"} {
					if !strings.Contains(out, want+"\n") {
						t.Errorf("want %s in:\n%s", want, out)
					}
				}
			}
			if got, _ := os.ReadFile(filepath.Join(ws, ".git/config")); string(got) != string(config) {
				t.Errorf(".git/config changed: %q", got)
			}
			if _, err := os.Stat(filepath.Join(ws, ".git/hooks/post-checkout")); err == nil {
				t.Errorf("a hook was planted")
			}
			// Positive control.
			code, out := dockerRun(t, b, backend.Request{Command: protectedAttacks})
			if code != 0 || strings.Count(out, "=ok\n") != 7 {
				t.Errorf("without protection every attack should get through: %d\n%s", code, out)
			}
		})
	}
}

// TestDockerProtectedSymlinkNotMounted: a protected path planted as a symlink to a host folder is not mounted (the
// Engine would follow it on the host and mount the host's folder into the container); one planted through a
// symlinked parent neither. Positive control: the same path as a real folder is mounted read-only.
func TestDockerProtectedSymlinkNotMounted(t *testing.T) {
	b, ws := newDockerTestBackend(t, nil)
	hostDir := t.TempDir()
	os.WriteFile(filepath.Join(hostDir, "host-secret"), []byte("host"), 0o644)
	os.Chmod(hostDir, 0o755)
	if err := os.Symlink(hostDir, filepath.Join(ws, ".vscode")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(hostDir, filepath.Join(ws, "linked")); err != nil {
		t.Fatal(err)
	}
	const probe = `cat .vscode/host-secret linked/host-secret 2>&1; grep -c ' /workspace/' /proc/self/mountinfo`
	code, out := dockerRun(t, b, backend.Request{Command: probe, Protected: []string{".vscode", "linked/host-secret"}})
	if strings.Contains(out, "host\n") || !strings.HasSuffix(out, "0\n") {
		t.Errorf("a symlinked protected path was mounted: %d %q", code, out)
	}
	// Positive control.
	os.Remove(filepath.Join(ws, ".vscode"))
	os.Mkdir(filepath.Join(ws, ".vscode"), 0o755)
	os.Chown(filepath.Join(ws, ".vscode"), dockerTestUID, dockerTestUID)
	code, out = dockerRun(t, b, backend.Request{Command: "touch .vscode/x 2>&1; grep -c ' /workspace/.vscode ro,' /proc/self/mountinfo", Protected: []string{".vscode"}})
	if !strings.Contains(out, "Read-only file system") || !strings.HasSuffix(out, "1\n") {
		t.Errorf("a real protected folder was not mounted read-only: %d %q", code, out)
	}
}

// TestDockerGitWorks: ordinary git work runs in a command, protected paths and all, in the executor's own image
// (deploy/Dockerfile.exec installs git; dockerGitImage).
func TestDockerGitWorks(t *testing.T) {
	img := dockerGitImage(t)
	b, ws := newDockerTestBackend(t, func(c *Config) { c.Image = img })
	const git = `export GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@example.com GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@example.com
git init -q && git add -A && git commit -qm first && git log --oneline | wc -l`
	code, out := dockerRun(t, b, backend.Request{Command: git})
	if code != 0 || out != "1\n" {
		t.Fatalf("git init, add, commit: %d %q", code, out)
	}
	// The repository now exists: its hooks and config are protected, and git keeps working.
	const more = `export GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@example.com GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@example.com
echo more > more.txt && git add -A && git commit -qm second && git branch side && git diff HEAD~1 --stat | tail -1 &&
git log --oneline | wc -l; git config core.hooksPath /tmp 2>/dev/null && echo config-changed; exit 0`
	code, out = dockerRun(t, b, backend.Request{Command: more, Protected: []string{".git/config", ".git/hooks"}})
	if code != 0 || !strings.HasSuffix(out, "2\n") || strings.Contains(out, "config-changed") {
		t.Errorf("git with protected paths: %d %q", code, out)
	}
	if got, _ := os.ReadFile(filepath.Join(ws, ".git/config")); strings.Contains(string(got), "hooksPath") {
		t.Errorf("core.hooksPath reached .git/config:\n%s", got)
	}
}
