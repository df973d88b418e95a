package mcpserve

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// A workspace is where a model's tools read and write at will. The user's home, the root of a disk, or any folder
// that holds the user's start-up files and keys would hand it their shell's start-up (.bashrc runs on the next
// login), their SSH and cloud keys, and everything else they own: a one-click install (an MCP Bundle asking for
// "a folder") makes that an easy slip. So such a workspace is refused, with a message, unless the person says they
// mean it (-allow-personal-workspace).

// personalEntries are names that only a home folder (or one holding a copy of its secrets) has.
var personalEntries = []string{
	".bashrc", ".bash_profile", ".bash_login", ".profile", ".zshrc", ".zprofile", ".zshenv", ".config/fish",
	".ssh", ".gnupg", ".aws", ".kube", ".docker/config.json", ".netrc", ".password-store", "Library/Keychains",
	"NTUSER.DAT",
}

// checkNotPersonal refuses a workspace that is the root of a disk, the user's home, a folder holding the home, or
// a folder with the user's start-up files or keys in it. A workspace that does not exist yet is none of these.
func checkNotPersonal(dir string) error {
	real, err := filepath.Abs(dir)
	if err != nil {
		return nil
	}
	if r, err := filepath.EvalSymlinks(real); err == nil {
		real = r
	} else {
		return nil // missing: it will be made empty
	}
	const advice = "choose a folder of its own for the project (or a copy of it), or give -allow-personal-workspace if this is really meant"
	if filepath.Dir(real) == real {
		return fmt.Errorf("the workspace %s is the root of a disk: the tools would reach every file on it; %s", real, advice)
	}
	if home, err := os.UserHomeDir(); err == nil {
		if h, err := filepath.EvalSymlinks(home); err == nil {
			if h == real {
				return fmt.Errorf("the workspace %s is your home folder: the tools would reach your keys and your shell's start-up files; %s", real, advice)
			}
			if rel, err := filepath.Rel(real, h); err == nil && rel != "." && !strings.HasPrefix(rel, "..") {
				return fmt.Errorf("the workspace %s holds your home folder %s: the tools would reach your keys and your shell's start-up files; %s", real, h, advice)
			}
		}
	}
	var found []string
	for _, name := range personalEntries {
		if _, err := os.Lstat(filepath.Join(real, filepath.FromSlash(name))); err == nil {
			found = append(found, name)
		}
	}
	if len(found) > 0 {
		return fmt.Errorf("the workspace %s holds %s, files of a home folder (start-up files or keys) that the tools would read and change; %s",
			real, strings.Join(found, ", "), advice)
	}
	return nil
}
