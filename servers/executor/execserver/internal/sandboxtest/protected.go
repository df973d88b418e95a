//go:build linux

package sandboxtest

// Protected project files under attack. The workspace is a person's project with a git repository; every attack
// tries to leave code that the person's own git (or editor, or direnv) runs on the host later: a hook, a
// core.hooksPath or core.fsmonitor in the config, by a plain write, a rename over, a link, a fresh repository.
// After each attack the test runs the host's git in every repository of the workspace — checkout and status, with
// safe.directory open so that git's ownership check cannot hide a planted hook — and checks that nothing ran.
//
// Positive controls: a hook the test plants itself in a scratch repository does run when the test runs git the
// same way (so "nothing ran" means nothing was planted), and each attack's own write to an ordinary path lands.

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/goalbox/goalbox/pkg/ciskip"
	"github.com/goalbox/goalbox/pkg/pathguard"
	"github.com/goalbox/goalbox/pkg/protocol"
	"github.com/goalbox/goalbox/servers/executor/execserver"
	"github.com/goalbox/goalbox/servers/executor/execserver/backend"
)

// hostGit runs git on the host in dir as the test process, as the person whose project it is would.
func hostGit(t *testing.T, dir string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "safe.directory=*", "-c", "user.name=host", "-c", "user.email=host@example.invalid"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// plantedHook is a hook (or fsmonitor command) that leaves marker behind when the host's git runs it.
func plantedHook(marker string) string {
	return fmt.Sprintf("#!/bin/sh\ntouch %s\n", marker)
}

// RunProtectedFiles attacks the protected project files through sandbox_run_command on the backend newBackend
// makes. enforced says the backend makes them read-only (so a write fails in the command, not only afterwards).
// With unprotected, the server protects nothing (every default removed) and every attack must succeed instead:
// the positive control that each attack plants what it claims to.
func RunProtectedFiles(t *testing.T, newBackend func(t *testing.T) (backend.Backend, string), enforced, unprotected bool) {
	if _, err := exec.LookPath("git"); err != nil {
		ciskip.Skip(t, "git is not installed on the host: the protected-files attacks need it (scripts/setup-toolchains.sh installs it)")
	}
	markers := t.TempDir()
	_ = os.Chmod(markers, 0o777)

	// Positive control: a hook planted in a repository runs when the test runs git as below.
	scratch := t.TempDir()
	mustGit(t, scratch, "init", "-q")
	mustGit(t, scratch, "commit", "-q", "--allow-empty", "-m", "first")
	control := filepath.Join(markers, "control")
	if err := os.WriteFile(filepath.Join(scratch, ".git/hooks/post-checkout"), []byte(plantedHook(control)), 0o755); err != nil {
		t.Fatal(err)
	}
	mustGit(t, scratch, "checkout", "-q", "-b", "control")
	if _, err := os.Stat(control); err != nil {
		t.Fatalf("positive control: a planted post-checkout hook did not run when git checked out (%v): the attacks below would prove nothing", err)
	}

	b, ws := newBackend(t)
	// The person's project: a repository with a commit, an editor folder, and a nested repository.
	mustGit(t, ws, "init", "-q")
	if err := os.MkdirAll(filepath.Join(ws, ".vscode"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string]string{"main.go": "package main\n", ".vscode/settings.json": "{}\n"} {
		if err := os.WriteFile(filepath.Join(ws, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mustGit(t, ws, "add", "-A")
	mustGit(t, ws, "commit", "-q", "-m", "project")
	mustGit(t, ws, "init", "-q", "nested")
	mustGit(t, filepath.Join(ws, "nested"), "commit", "-q", "--allow-empty", "-m", "nested")
	giveToOwner(t, ws)
	configBefore, _ := os.ReadFile(filepath.Join(ws, ".git/config"))

	cfg := execserver.Config{}
	if unprotected {
		cfg.Protection = nothingProtected(t)
	}
	srv := StartServer(t, b, ws, cfg, nil)
	run := func(t *testing.T, command string) protocol.RunCommandOutput {
		return MustRun(t, srv.Session, protocol.RunCommandInput{Command: command, TimeoutSeconds: 60})
	}

	attacks := []struct {
		name    string
		command string // %[1]s is the marker path, %[2]s the hook's text
		control string // a path the command also writes, outside anything protected: it must land
	}{
		{"write_hook", `printf '%[2]s' > .git/hooks/post-checkout; chmod +x .git/hooks/post-checkout; printf '%[2]s' > control-hook`, "control-hook"},
		{"append_to_config_fsmonitor", `git config core.fsmonitor 'touch %[1]s'; printf '[core]\n\tfsmonitor = touch %[1]s\n' >> .git/config; echo x > control-config`, "control-config"},
		{"hooks_path", `mkdir -p myhooks; printf '%[2]s' > myhooks/post-checkout; chmod +x myhooks/post-checkout; git config core.hooksPath myhooks`, "myhooks/post-checkout"},
		{"rename_over_config", `cp .git/config cfg; printf '[core]\n\tfsmonitor = touch %[1]s\n' >> cfg; mv -f cfg .git/config; cp .git/config control-copy`, "control-copy"},
		{"replace_hooks_folder", `mkdir -p h; printf '%[2]s' > h/post-checkout; chmod +x h/post-checkout; rm -rf .git/hooks; mv h .git/hooks; ln -s ../../h2 .git/hooks 2>/dev/null; echo x > control-replace`, "control-replace"},
		{"symlink_into_hooks", `printf '%[2]s' > evil.sh; chmod +x evil.sh; ln -sf ../../evil.sh .git/hooks/post-checkout; ln -sf evil.sh control-link`, "control-link"},
		{"hard_link_config", `ln .git/config cfglink 2>&1; printf '[core]\n\tfsmonitor = touch %[1]s\n' >> cfglink; echo x > control-hard`, "control-hard"},
		{"fresh_repository", `git init -q fresh && printf '%[2]s' > fresh/.git/hooks/post-checkout && chmod +x fresh/.git/hooks/post-checkout && git -C fresh config core.fsmonitor 'touch %[1]s' && git -C fresh commit -q --allow-empty -m x`, "fresh/.git/HEAD"},
		{"nested_repository_hook", `printf '%[2]s' > nested/.git/hooks/post-checkout; chmod +x nested/.git/hooks/post-checkout; echo x > nested/control`, "nested/control"},
		{"editor_and_agent_files", `printf '{"version":"2.0.0","tasks":[{"label":"x","command":"touch %[1]s","runOptions":{"runOn":"folderOpen"}}]}' > .vscode/tasks.json; echo 'touch %[1]s' > .envrc; echo '{"mcpServers":{"x":{"command":"touch","args":["%[1]s"]}}}' > .mcp.json; mkdir -p deep/.claude && echo '{}' > deep/.claude/settings.json; echo x > control-editor`, "control-editor"},
		// A gitlink: .git as a file naming another folder as the repository, whose config runs an fsmonitor.
		{"gitlink", `mkdir -p other/hooks gl && printf '[core]\n\trepositoryformatversion = 0\n\tfsmonitor = touch %[1]s\n' > other/config && mkdir -p other/objects other/refs && echo 'ref: refs/heads/main' > other/HEAD && echo "gitdir: ../other" > gl/.git; echo x > control-gitlink`, "control-gitlink"},
		{"case_variant", `mkdir -p .GIT/HOOKS; printf '%[2]s' > .GIT/HOOKS/post-checkout; echo x > control-case`, "control-case"},
		// Last: it leaves the person's repository moved.
		{"move_git_away", `mv .git .git-old 2>&1 && mkdir -p .git && cp -r .git-old/. .git/ && printf '%[2]s' > .git/hooks/post-checkout && chmod +x .git/hooks/post-checkout; echo x > control-move`, "control-move"},
	}
	for _, a := range attacks {
		t.Run(a.name, func(t *testing.T) {
			// Each attack starts from the person's own config: with nothing protected, an earlier attack's
			// core.hooksPath would make a later one's hook a dead letter.
			if err := os.WriteFile(filepath.Join(ws, ".git/config"), configBefore, 0o644); err != nil {
				t.Fatal(err)
			}
			marker := filepath.Join(markers, a.name)
			out := run(t, fmt.Sprintf(a.command, marker, plantedHook(marker)))
			t.Logf("exit %d, undone %v, stderr %q", out.ExitCode, out.ProtectedUndone, Clip(out.Stderr))
			if _, err := os.Lstat(filepath.Join(ws, filepath.FromSlash(a.control))); err != nil {
				t.Errorf("positive control: the attack's own write to %s did not land: %v (stdout %q stderr %q)", a.control, err, Clip(out.Stdout), Clip(out.Stderr))
			}
			// The host's git, in every repository the workspace now holds, runs nothing planted.
			for _, repo := range repositories(ws) {
				_, _ = hostGit(t, repo, "status", "--short")
				_, _ = hostGit(t, repo, "checkout", "-q", "-B", "after-"+a.name)
				_, _ = hostGit(t, repo, "checkout", "-q", "-")
			}
			planted := ""
			if _, err := os.Stat(marker); err == nil {
				planted = "the host's git ran what the command planted (" + marker + " exists)"
				os.Remove(marker)
			}
			for _, f := range []string{".vscode/tasks.json", ".envrc", ".mcp.json", "deep/.claude/settings.json", ".GIT/HOOKS/post-checkout"} {
				if b, err := os.ReadFile(filepath.Join(ws, f)); err == nil && strings.Contains(string(b), marker) {
					planted = f + " holds what the command wrote into it"
				}
			}
			switch {
			case unprotected && planted == "":
				t.Errorf("positive control: with nothing protected the attack should plant code the host runs, and it did not (stdout %q stderr %q)", Clip(out.Stdout), Clip(out.Stderr))
			case !unprotected && planted != "":
				t.Error(planted)
			}
		})
	}

	if unprotected {
		return
	}
	t.Run("config_unchanged", func(t *testing.T) {
		after, err := os.ReadFile(filepath.Join(ws, ".git/config"))
		if enforced && (err != nil || string(after) != string(configBefore)) {
			t.Errorf(".git/config changed: %q, was %q (%v)", after, configBefore, err)
		}
	})
	t.Run("ordinary_git_work", func(t *testing.T) {
		// The identity in the environment: a home does not outlive its container on every backend.
		const identity = `export GIT_AUTHOR_NAME=a GIT_AUTHOR_EMAIL=a@b.invalid GIT_COMMITTER_NAME=a GIT_COMMITTER_EMAIL=a@b.invalid; `
		out := run(t, identity+`set -e
mkdir -p work && cd work && git init -q && echo one > f && git add -A && git commit -q -m one
git branch side && echo two > f && git diff --stat && git commit -qam two && git log --oneline | wc -l`)
		if out.ExitCode != 0 || !strings.HasSuffix(strings.TrimSpace(out.Stdout), "2") {
			t.Errorf("git init, add, commit, branch, diff, log in a command: exit %d stdout %q stderr %q", out.ExitCode, out.Stdout, out.Stderr)
		}
		if len(out.ProtectedUndone) > 0 {
			t.Errorf("plain git work had protected files undone: %v", out.ProtectedUndone)
		}
		out = run(t, identity+`echo more >> main.go && git add main.go && git commit -q -m more && git log --oneline | head -1`)
		if out.ExitCode != 0 {
			t.Errorf("a commit in the person's repository: exit %d stderr %q", out.ExitCode, out.Stderr)
		}
		out = run(t, `git -C work log --oneline | wc -l; cat .vscode/settings.json`)
		if out.ExitCode != 0 || !strings.HasPrefix(out.Stdout, "2\n") {
			t.Errorf("reading protected files and the new repository later: %+v", out)
		}
	})
}

func mustGit(t *testing.T, dir string, args ...string) {
	t.Helper()
	if out, err := hostGit(t, dir, args...); err != nil {
		t.Fatalf("git %v in %s: %v\n%s", args, dir, err, out)
	}
}

// repositories lists the folders of ws that hold a .git (folder or file), ws included.
func repositories(ws string) []string {
	var repos []string
	_ = filepath.WalkDir(ws, func(p string, d fs.DirEntry, err error) error {
		if err == nil && strings.EqualFold(d.Name(), ".git") {
			repos = append(repos, filepath.Dir(p))
			if d.IsDir() {
				return filepath.SkipDir
			}
		}
		return nil
	})
	return repos
}

// giveToOwner gives what the test made in ws to the workspace's owner, as files the person made would be.
func giveToOwner(t *testing.T, ws string) {
	fi, err := os.Stat(ws)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	if int(st.Uid) == os.Geteuid() {
		return
	}
	_ = filepath.WalkDir(ws, func(p string, d fs.DirEntry, err error) error {
		if err == nil {
			_ = os.Lchown(p, int(st.Uid), int(st.Gid))
		}
		return nil
	})
}

// nothingProtected is the protection of the controls: every default protected path taken out.
func nothingProtected(t *testing.T) *pathguard.Protection {
	t.Helper()
	none, err := pathguard.NewProtection(nil, pathguard.DefaultProtected)
	if err != nil {
		t.Fatal(err)
	}
	return none
}
