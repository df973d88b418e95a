//go:build linux

package sandboxtest

// The workspace guard under attack: a swapped .git, a filler, the host's git, the caps (a backend that gives each command a copy-on-write layer of the
// workspace, applied by the executor through pathguard): each finding as an attack, run on the guarded backend
// (nothing planted, filled or leaked) and, as its positive control, on the backend with the guard switched off or
// with nothing protected (the attack plants what it claims). After every attack the host's own `git status` runs
// in the workspace: a planted core.fsmonitor would leave its marker file behind.

import (
	"cmp"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/goalbox/goalbox/pkg/pathguard"
	"github.com/goalbox/goalbox/pkg/protocol"
	"github.com/goalbox/goalbox/servers/executor/execserver"
	"github.com/goalbox/goalbox/servers/executor/execserver/backend"
)

// GuardBackend makes a backend over a fresh workspace with these options.
type GuardBackend func(t *testing.T, o GuardOptions) (backend.Backend, string)

// GuardOptions are what an attack needs of its backend.
type GuardOptions struct {
	Off       bool  // the workspace guard switched off (the positive control)
	MaxBytes  int64 // the disk cap; 0 the default
	MaxInodes int64 // the inode cap; 0 the default
	// ScanEntries is the sweep's cached scan bound (execserver.Config.ProtectScanEntries); 0 the default. Lowered,
	// a filler one entry past it reaches the same uncached walk as the finding's 200,001 files, in a second.
	ScanEntries int
}

// guardProject makes the person's project in ws: a repository with a commit, .vscode at the top and in sub/.
func guardProject(t *testing.T, ws string) {
	t.Helper()
	mustGit(t, ws, "init", "-q")
	for name, content := range map[string]string{"main.go": "package main\n", ".vscode/settings.json": "{}\n",
		"sub/code.go": "package sub\n", "sub/.vscode/settings.json": "{\"mine\": true}\n"} {
		p := filepath.Join(ws, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mustGit(t, ws, "add", "-A")
	mustGit(t, ws, "commit", "-q", "-m", "project")
	giveToOwner(t, ws)
}

// hostRanPlant runs the host's git status in ws and reports whether the marker appeared (and removes it).
func hostRanPlant(t *testing.T, ws, marker string) bool {
	t.Helper()
	_, _ = hostGit(t, ws, "status", "--short")
	if _, err := os.Stat(marker); err == nil {
		os.Remove(marker)
		return true
	}
	return false
}

func guardServer(t *testing.T, newBackend GuardBackend, o GuardOptions, unprotected bool) (*Server, string, string) {
	t.Helper()
	requireGit(t)
	markers := t.TempDir()
	_ = os.Chmod(markers, 0o777)
	b, ws := newBackend(t, o)
	guardProject(t, ws)
	cfg := execserver.Config{ProtectScanEntries: o.ScanEntries}
	if unprotected {
		cfg.Protection = nothingProtected(t)
	}
	return StartServer(t, b, ws, cfg, nil), ws, markers
}

// fsmonitorConfig appends to the config file at path (a shell word) a core.fsmonitor that touches marker.
func fsmonitorConfig(path, marker string) string {
	return fmt.Sprintf(`printf '[core]\n\tfsmonitor = touch %s\n' >> %s`, marker, path)
}

// RunSwappedGit is finding 1: a copy of .git with an fsmonitor in its config renamed into place, and the same shape
// for a folder holding .vscode. Guarded: nothing planted, the person's .git and sub/.vscode where they were, the
// result naming the refused paths. Off: the host's git runs the plant.
func RunSwappedGit(t *testing.T, newBackend GuardBackend) { runSwappedGit(t, newBackend, false) }

// RunSwappedGitUnprotectedControl is RunSwappedGit whose control also protects nothing: for a backend whose guard
// off still stops the attack by other means (docker's read-only binds of the protected paths, with the server's
// sweep), so that the control shows the attack itself plants what the host's git runs.
func RunSwappedGitUnprotectedControl(t *testing.T, newBackend GuardBackend) {
	runSwappedGit(t, newBackend, true)
}

func runSwappedGit(t *testing.T, newBackend GuardBackend, controlUnprotected bool) {
	for _, off := range []bool{false, true} {
		t.Run(offName[off], func(t *testing.T) {
			srv, ws, markers := guardServer(t, newBackend, GuardOptions{Off: off}, off && controlUnprotected)
			marker := filepath.Join(markers, "swap")
			out := MustRun(t, srv.Session, protocol.RunCommandInput{Command: "cp -a .git .git2 && " + fsmonitorConfig(".git2/config", marker) +
				" && mv .git .git-old && mv .git2 .git && echo x > control-swap"})
			if _, err := os.Stat(filepath.Join(ws, "control-swap")); err != nil {
				t.Fatalf("the attack did not run to its end: %+v", out)
			}
			planted := hostRanPlant(t, ws, marker)
			out2 := MustRun(t, srv.Session, protocol.RunCommandInput{Command: `mv sub sub2 && mkdir -p sub/.vscode && echo '{"tasks":"planted"}' > sub/.vscode/tasks.json && echo x > control-sub`})
			tasks, _ := os.ReadFile(filepath.Join(ws, "sub/.vscode/tasks.json"))
			plantedTasks := strings.Contains(string(tasks), "planted")
			mine, mineErr := os.ReadFile(filepath.Join(ws, "sub/.vscode/settings.json"))
			mineKept := mineErr == nil && strings.Contains(string(mine), "mine")
			if off {
				if !planted || (!plantedTasks && mineKept) {
					t.Errorf("positive control: without the guard the swapped .git should plant an fsmonitor the host runs (%v), and the renamed sub should plant tasks.json (%v) or move the person's own sub/.vscode away (%v)", planted, plantedTasks, !mineKept)
				}
				return
			}
			if planted {
				t.Error("the host's git ran the fsmonitor planted through a swapped .git")
			}
			if !refusedPath(out.WorkspaceRefused, ".git/config") {
				t.Errorf("the result does not name .git/config as refused: %+v", out.WorkspaceRefused)
			}
			if plantedTasks {
				t.Error("sub/.vscode/tasks.json planted through a renamed sub")
			}
			if !mineKept {
				t.Errorf("the person's own sub/.vscode/settings.json is not where it was: %q %v (result %+v)", mine, mineErr, out2.WorkspaceRefused)
			}
			if _, err := os.Stat(filepath.Join(ws, "sub2/code.go")); err != nil {
				t.Errorf("the ordinary part of the rename (sub/code.go to sub2/) did not land: %v", err)
			}
		})
	}
}

// FindingFiller is finding 2's own filler: one entry past the cached scan's default bound, which once ended the
// scan (19 s and 4.5 MB in one command).
const FindingFiller = pathguard.DefaultMaxTreeEntries + 1

// SmallScanBound is the cached scan bound a test sets (GuardOptions.ScanEntries) to run finding 2 with a filler of
// SmallScanBound+1 files: the same code path as FindingFiller at the default bound, at a hundredth of the cost.
const SmallScanBound = 2_000

// RunFillerEndsScan is finding 2: a filler one entry past the sweep's cached scan bound, in a folder that sorts
// before .git, then plants. scanEntries is the bound the server runs with (0: the default, and the finding's own
// 200,001 files; SmallScanBound: 2,001 files). Guarded (a layer, or a sweep whose scan no longer stops at its
// bound): nothing planted, and the result says what was refused. Control: with nothing protected the same command
// plants all three (the old scan, stopped at its bound, let them stay). The control's filler is the small one
// whatever the bound: with nothing protected no scan runs, so the filler's size cannot change what lands.
func RunFillerEndsScan(t *testing.T, newBackend GuardBackend, scanEntries int) {
	for _, unprotected := range []bool{false, true} {
		t.Run(map[bool]string{false: "guarded", true: "unprotected_control"}[unprotected], func(t *testing.T) {
			files := cmp.Or(scanEntries, pathguard.DefaultMaxTreeEntries) + 1
			if unprotected {
				files = SmallScanBound + 1
			}
			srv, ws, markers := guardServer(t, newBackend, GuardOptions{ScanEntries: scanEntries}, unprotected)
			marker := filepath.Join(markers, "fill")
			out := MustRun(t, srv.Session, protocol.RunCommandInput{TimeoutSeconds: 600, Command: fmt.Sprintf(`mkdir -- -fill && cd -- -fill && seq %d | xargs touch && cd .. && `, files) +
				fmt.Sprintf(`echo 'touch %[1]s' > .envrc && echo '{"planted":"%[1]s"}' > .vscode/tasks.json && `, marker) +
				fsmonitorConfig(".git/config", marker) + "; echo x > control-fill"})
			if _, err := os.Stat(filepath.Join(ws, "control-fill")); err != nil {
				t.Fatalf("the attack did not run to its end: exit %d stderr %q", out.ExitCode, Clip(out.Stderr))
			}
			if n, err := os.ReadDir(filepath.Join(ws, "-fill")); err != nil || len(n) != files {
				t.Fatalf("the filler holds %d files (%v), not %d: the attack did not fill", len(n), err, files)
			}
			plants := 0
			if hostRanPlant(t, ws, marker) {
				plants++
			}
			for _, f := range []string{".envrc", ".vscode/tasks.json"} {
				if b, err := os.ReadFile(filepath.Join(ws, f)); err == nil && strings.Contains(string(b), marker) {
					plants++
				}
			}
			switch {
			case unprotected && plants != 3:
				t.Errorf("positive control: with nothing protected the three plants should land; %d did", plants)
			case !unprotected && plants > 0:
				t.Errorf("%d plants landed behind %d files (undone %v, refused %v)", plants, files, out.ProtectedUndone, out.WorkspaceRefused)
			case !unprotected && len(out.ProtectedUndone)+len(out.WorkspaceRefused) == 0:
				t.Error("the result does not say what was refused or undone")
			}
		})
	}
}

// RunHostReplacesGit is finding 3: the host's git replaces .git/config (git config --local: a lock file and a
// rename) or the whole .git between commands, and a command then tries to plant an fsmonitor, four ways, tries
// times. Guarded: zero plants. Control: with nothing protected, every try plants.
func RunHostReplacesGit(t *testing.T, newBackend GuardBackend, tries int) {
	attacks := []string{
		`printf '[core]\n\tfsmonitor = touch %[1]s\n' >> .git/config`,
		`cp .git/config c && printf '[core]\n\tfsmonitor = touch %[1]s\n' >> c && mv -f c .git/config`,
		`ln .git/config l 2>/dev/null; printf '[core]\n\tfsmonitor = touch %[1]s\n' >> l`,
		`git config core.fsmonitor 'touch %[1]s'`,
	}
	for _, unprotected := range []bool{false, true} {
		t.Run(map[bool]string{false: "guarded", true: "unprotected_control"}[unprotected], func(t *testing.T) {
			srv, ws, markers := guardServer(t, newBackend, GuardOptions{}, unprotected)
			plants := 0
			for i := range tries {
				if i%2 == 0 {
					mustGit(t, ws, "config", "--local", "goalbox.try", fmt.Sprint(i))
				} else {
					if err := os.RemoveAll(filepath.Join(ws, ".git")); err != nil {
						t.Fatal(err)
					}
					mustGit(t, ws, "init", "-q")
					mustGit(t, ws, "commit", "-q", "--allow-empty", "-m", "fresh")
				}
				giveToOwner(t, ws) // the host's git is the person's: what it writes is theirs
				marker := filepath.Join(markers, fmt.Sprint("try", i))
				out := MustRun(t, srv.Session, protocol.RunCommandInput{Command: fmt.Sprintf(attacks[i%len(attacks)], marker)})
				if hostRanPlant(t, ws, marker) {
					plants++
				} else if unprotected {
					t.Logf("try %d did not plant: %+v", i, out)
				}
				_ = os.Remove(filepath.Join(ws, "l"))
			}
			t.Logf("%d plants of %d tries", plants, tries)
			switch {
			case unprotected && plants != tries:
				t.Errorf("positive control: with nothing protected every try should plant; %d of %d did", plants, tries)
			case !unprotected && plants > 0:
				t.Errorf("%d of %d tries planted an fsmonitor the host's git ran", plants, tries)
			}
		})
	}
}

// offName names a guarded run and its positive control.
var offName = map[bool]string{false: "guarded", true: "guard_off_control"}

// RunDiskCapAtTheAct is finding 4: with a 100 MiB cap, a quick 1 GiB fallocate in the workspace, and a command
// started while the workspace is over the cap. Guarded: the write fails (ENOSPC) and leaves nothing; over the cap a
// command can delete (the cleanup works) but add nothing, and is told so. Off: the gigabyte stays, and a command
// over the cap adds its 5 MB.
func RunDiskCapAtTheAct(t *testing.T, newBackend GuardBackend) {
	for _, off := range []bool{false, true} {
		t.Run(offName[off], func(t *testing.T) {
			srv, ws, _ := guardServer(t, newBackend, GuardOptions{Off: off, MaxBytes: 100 << 20}, false)
			out := MustRun(t, srv.Session, protocol.RunCommandInput{Command: `fallocate -l 1G big; echo "exit $?"; du -sk big`})
			fi, err := os.Stat(filepath.Join(ws, "big"))
			kept := err == nil && fi.Size() >= 1<<30
			if off != kept {
				t.Errorf("guard off %v: the 1 GiB file is kept: %v (stdout %q stderr %q)", off, kept, Clip(out.Stdout), Clip(out.Stderr))
			}
			_ = os.Remove(filepath.Join(ws, "big"))
			// Over the cap from outside (the filesystem server, the person).
			if err := os.WriteFile(filepath.Join(ws, "filler"), make([]byte, 120<<20), 0o644); err != nil {
				t.Fatal(err)
			}
			giveToOwner(t, ws)
			// A sandbox made ahead counts what was written since only once it is a second old (local's layerFresh).
			time.Sleep(1100 * time.Millisecond)
			more := MustRun(t, srv.Session, protocol.RunCommandInput{Command: `head -c 5000000 /dev/zero > more; echo "exit $?"`})
			fi, err = os.Stat(filepath.Join(ws, "more"))
			added := err == nil && fi.Size() >= 5000000 // the guarded layer keeps what fitted its floor (1 MiB)
			if off != added {
				t.Errorf("guard off %v: a command over the cap added 5 MB: %v (%q %q)", off, added, more.Stdout, Clip(more.Stderr))
			}
			if !off && !strings.Contains(more.Stderr, "at the executor's cap") {
				t.Errorf("the command over the cap was not told: %q", Clip(more.Stderr))
			}
			clean := MustRun(t, srv.Session, protocol.RunCommandInput{Command: `rm filler more 2>/dev/null; echo cleaned`})
			if _, err := os.Stat(filepath.Join(ws, "filler")); err == nil || clean.Stdout != "cleaned\n" {
				t.Errorf("the cleanup over the cap did not land: %+v", clean)
			}
		})
	}
}

// RunInodeCapAtTheAct is finding 5: with an inode cap of 3,000, a command that makes 4,500 empty files. Guarded:
// creation fails at the cap, and the workspace holds fewer than 3,000 new files. Off: all 4,500 land. (The cap is
// the layer tmpfs's nr_inodes whatever its number: 20,000 and 30,000 files showed nothing more, and cost two and a
// half minutes of applying a run.)
func RunInodeCapAtTheAct(t *testing.T, newBackend GuardBackend) {
	const maxInodes, files = 3_000, 4_500
	for _, off := range []bool{false, true} {
		t.Run(offName[off], func(t *testing.T) {
			srv, ws, _ := guardServer(t, newBackend, GuardOptions{Off: off, MaxInodes: maxInodes}, false)
			out := MustRun(t, srv.Session, protocol.RunCommandInput{TimeoutSeconds: 300, Command: fmt.Sprintf(`mkdir many && cd many && seq %d | xargs touch; echo "exit $?"`, files)})
			ents, _ := os.ReadDir(filepath.Join(ws, "many"))
			switch {
			case off && len(ents) != files:
				t.Errorf("positive control: without the guard all %d files should land; %d did (%q)", files, len(ents), Clip(out.Stderr))
			case !off && len(ents) >= maxInodes:
				t.Errorf("%d files landed past the inode cap of %d", len(ents), maxInodes)
			case !off && !strings.Contains(out.Stderr, "No space left"):
				t.Errorf("the command was not told at the act: stderr %q", Clip(out.Stderr))
			}
		})
	}
}

// RunShmEndsWithCommand is finding 6: files a command leaves in /dev/shm. Guarded: the next command sees none, and
// /dev/shm counts in the command's bounds (200 MiB there under a 100 MiB cap fails). Off: they outlive it.
func RunShmEndsWithCommand(t *testing.T, newBackend GuardBackend) {
	for _, off := range []bool{false, true} {
		t.Run(offName[off], func(t *testing.T) {
			srv, _, _ := guardServer(t, newBackend, GuardOptions{Off: off, MaxBytes: 100 << 20}, false)
			MustRun(t, srv.Session, protocol.RunCommandInput{Command: `cd /dev/shm && seq 2000 | xargs touch`})
			out := MustRun(t, srv.Session, protocol.RunCommandInput{Command: `ls /dev/shm | wc -l`})
			left := strings.TrimSpace(out.Stdout)
			if off == (left == "0") {
				t.Errorf("guard off %v: the next command finds %s files in /dev/shm", off, left)
			}
			big := MustRun(t, srv.Session, protocol.RunCommandInput{Command: `head -c 200000000 /dev/zero > /dev/shm/big; echo "exit $?"`})
			if !off && !strings.Contains(big.Stdout, "exit 1") {
				t.Errorf("200 MB into /dev/shm under a 100 MiB cap: %q %q", Clip(big.Stdout), Clip(big.Stderr))
			}
		})
	}
}

// requireGit fails under CI=true, and skips elsewhere, where the host has no git.
func requireGit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true and git is not installed: the workspace guard's attacks need the host's git (scripts/setup-toolchains.sh installs it)")
		}
		t.Skip("git is not installed on the host (scripts/setup-toolchains.sh installs it)")
	}
}

func refusedPath(refused []protocol.WorkspaceRefusal, p string) bool {
	for _, r := range refused {
		if r.Path == p {
			return true
		}
	}
	return false
}

// RunLayerVisibility: what a running process sees of writes from outside (the filesystem server, the person), when
// its own writes reach the workspace, and that a process's refused changes are named when it ends. Guarded backend
// only: these are the layer's promises (docs/executor.md).
func RunLayerVisibility(t *testing.T, newBackend GuardBackend) {
	srv, ws, _ := guardServer(t, newBackend, GuardOptions{}, false)
	if err := os.WriteFile(filepath.Join(ws, "watched.txt"), []byte("one\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	giveToOwner(t, ws)
	p := MustCall[protocol.StartProcessOutput](t, srv.Session, protocol.ToolStartProcess, protocol.StartProcessInput{
		Command: `echo mine > own.txt; echo '{}' > .vscode/tasks.json; while :; do cat watched.txt; sleep 0.2; done`})
	// A write from outside, as the filesystem server's, is seen by the running process (a dev server's reload).
	time.Sleep(300 * time.Millisecond)
	if err := os.WriteFile(filepath.Join(ws, "watched.txt"), []byte("two\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, out, _ := readUntil(t, srv.Session, p.ProcessID, 10*time.Second, func(o, _ string) bool { return strings.Contains(o, "two") }); !strings.Contains(out, "two") {
		t.Errorf("the running process did not see the outside write: %q", Clip(out))
	}
	// Its own write reaches the workspace while it runs (within the apply interval), and its plant does not.
	waitHost(t, 10*time.Second, "the process's own.txt in the workspace", func() bool {
		b, _ := os.ReadFile(filepath.Join(ws, "own.txt"))
		return string(b) == "mine\n"
	})
	stop := MustCall[protocol.StopProcessOutput](t, srv.Session, protocol.ToolStopProcess, protocol.StopProcessInput{ProcessID: p.ProcessID})
	if !refusedPath(stop.WorkspaceRefused, ".vscode/tasks.json") {
		t.Errorf("the stopped process's result does not name its refused plant: %+v", stop)
	}
	if _, err := os.Stat(filepath.Join(ws, ".vscode/tasks.json")); err == nil {
		t.Error("the process planted .vscode/tasks.json")
	}
	// A later command sees what the process wrote.
	if out := MustRun(t, srv.Session, protocol.RunCommandInput{Command: "cat own.txt watched.txt"}); out.Stdout != "mine\ntwo\n" {
		t.Errorf("a later command sees %q", out.Stdout)
	}
}

// RunUnkeptProtectedFile: where commands write the workspace (the fallback, the namespace mode without a layer),
// the sweep puts back a changed protected file from the copy its scan kept, and it keeps at most 16 MiB of them, in
// walk order. A project whose protected files hold more (an IDE's folder, a submodule's git dir) left every later
// one without a copy, and a command's rewrite of it stayed, and its deletion was only logged. Guarded: the rewrite
// does not land, and the result names the path; the deletion is refused (a layer) or, where it cannot be undone
// (the sweep), named in protected_undone with a note that it is lost. Control: with nothing protected both land.
func RunUnkeptProtectedFile(t *testing.T, newBackend GuardBackend) {
	for _, unprotected := range []bool{false, true} {
		t.Run(map[bool]string{false: "guarded", true: "unprotected_control"}[unprotected], func(t *testing.T) {
			requireGit(t)
			markers := t.TempDir()
			b, ws := newBackend(t, GuardOptions{})
			guardProject(t, ws)
			// .idea sorts before .vscode: 16 files of 1 MiB, then 260 of 4 KiB, use up what the scan keeps to
			// within 4 KiB, whatever git's sample hooks before them hold, so the person's tasks.json of 5 KB that
			// follows is not kept.
			if err := os.MkdirAll(filepath.Join(ws, ".idea/caches"), 0o755); err != nil {
				t.Fatal(err)
			}
			for i := range 16 + 260 {
				size := 4096
				if i < 16 {
					size = 1 << 20
				}
				if err := os.WriteFile(filepath.Join(ws, ".idea/caches", fmt.Sprintf("%03d", i)), make([]byte, size), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			mine := `{"version":"2.0.0","tasks":[{"label":"test","command":"go test ./...","detail":"` + strings.Repeat("x", 5000) + `"}]}` + "\n"
			if err := os.WriteFile(filepath.Join(ws, ".vscode/tasks.json"), []byte(mine), 0o644); err != nil {
				t.Fatal(err)
			}
			// launch.json sorts before tasks.json and is not kept either: the command deletes it.
			if err := os.WriteFile(filepath.Join(ws, ".vscode/launch.json"), []byte(mine), 0o644); err != nil {
				t.Fatal(err)
			}
			giveToOwner(t, ws)
			cfg := execserver.Config{}
			if unprotected {
				cfg.Protection = nothingProtected(t)
			}
			srv := StartServer(t, b, ws, cfg, nil)
			marker := filepath.Join(markers, "unkept")
			out := MustRun(t, srv.Session, protocol.RunCommandInput{Command: fmt.Sprintf(
				`printf '{"version":"2.0.0","tasks":[{"label":"x","command":"touch %s","runOptions":{"runOn":"folderOpen"}}]}' > .vscode/tasks.json && rm .vscode/launch.json && echo x > control-unkept`, marker)})
			if _, err := os.Stat(filepath.Join(ws, "control-unkept")); err != nil {
				t.Fatalf("the attack did not run to its end: %+v", out)
			}
			tasks, _ := os.ReadFile(filepath.Join(ws, ".vscode/tasks.json"))
			planted := strings.Contains(string(tasks), marker)
			switch {
			case unprotected && !planted:
				t.Errorf("positive control: with nothing protected the rewritten tasks.json should land: %q", tasks)
			case !unprotected && planted:
				t.Errorf("a rewritten .vscode/tasks.json the sweep kept no copy of landed (undone %v, refused %v)", out.ProtectedUndone, out.WorkspaceRefused)
			case !unprotected && !refusedPath(out.WorkspaceRefused, ".vscode/tasks.json") && !slices.Contains(out.ProtectedUndone, ".vscode/tasks.json"):
				t.Errorf("the result does not name .vscode/tasks.json: undone %v, refused %v", out.ProtectedUndone, out.WorkspaceRefused)
			}
			// The deletion: the layer refuses it (the file stays); the sweep cannot put back what it kept no copy
			// of, and says so in the result rather than only in its log.
			_, err := os.Stat(filepath.Join(ws, ".vscode/launch.json"))
			deleted := err != nil
			named := refusedPath(out.WorkspaceRefused, ".vscode/launch.json") || slices.Contains(out.ProtectedUndone, ".vscode/launch.json")
			switch {
			case unprotected && (!deleted || named):
				t.Errorf("positive control: with nothing protected the deletion lands unnamed: deleted %v, named %v", deleted, named)
			case !unprotected && !named:
				t.Errorf("the result does not name the deleted .vscode/launch.json (deleted %v): undone %v, refused %v", deleted, out.ProtectedUndone, out.WorkspaceRefused)
			case !unprotected && deleted && !strings.Contains(out.Stderr, "could NOT be put back"):
				t.Errorf("the deleted .vscode/launch.json is gone and the note does not say it was lost: %q", Clip(out.Stderr))
			}
		})
	}
}
