package mcpserve

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPersonalWorkspaceRefused: a workspace that is the user's home, the root of the disk, a folder holding the home,
// or a folder with start-up files or keys in it is refused, naming what was found and the flag that allows it.
// Positive controls: a project folder (with a .git and an .envrc) is taken, and each refused one is taken with
// -allow-personal-workspace.
func TestPersonalWorkspaceRefused(t *testing.T) {
	base := t.TempDir()
	home := filepath.Join(base, "home", "u")
	os.MkdirAll(filepath.Join(home, ".ssh"), 0o700)
	os.WriteFile(filepath.Join(home, ".bashrc"), nil, 0o644)
	t.Setenv("HOME", home)
	t.Setenv("USERPROFILE", home)
	dotted := filepath.Join(base, "copy-of-dotfiles")
	os.MkdirAll(filepath.Join(dotted, ".aws"), 0o700)
	project := filepath.Join(home, "src", "project")
	os.MkdirAll(filepath.Join(project, ".git"), 0o755)
	os.WriteFile(filepath.Join(project, ".envrc"), nil, 0o644)

	for _, c := range []struct{ dir, want string }{
		{home, "is your home folder"},
		{"/", "is the root of a disk"},
		{filepath.Join(base, "home"), "holds your home folder"},
		{dotted, "holds .aws"},
	} {
		_, err := Load(&Config{}, "GOALBOX_NONE_", []string{"srv", "-workspace", c.dir}, nil)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "-allow-personal-workspace") {
			t.Errorf("workspace %s: %v; want a refusal saying %q and naming -allow-personal-workspace", c.dir, err, c.want)
		}
		if _, err := Load(&Config{}, "GOALBOX_NONE_", []string{"srv", "-workspace", c.dir, "-allow-personal-workspace"}, nil); err != nil {
			t.Errorf("control: workspace %s with -allow-personal-workspace: %v", c.dir, err)
		}
	}
	if _, err := Load(&Config{}, "GOALBOX_NONE_", []string{"srv", "-workspace", project}, nil); err != nil {
		t.Errorf("control: a project folder: %v", err)
	}
	if _, err := Load(&Config{}, "GOALBOX_NONE_", []string{"srv", "-workspace", filepath.Join(base, "not-yet")}, nil); err != nil {
		t.Errorf("control: a workspace to be made: %v", err)
	}
}
