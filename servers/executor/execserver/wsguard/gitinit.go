package wsguard

// What `git init` makes among the protected paths, and git never runs: the sweep of the backends without a layer
// (execserver's protect.go) and the layer's apply both let it land, so that `git init` works in a command.

import (
	"bytes"
	"io/fs"
	"path"
	"strings"
)

// HarmlessNew reports whether a protected path that did not exist is one `git init` makes and git never runs: the
// hooks folder, its *.sample files, and a config of plain settings (SafeGitConfig). read gives a file's content.
func HarmlessNew(rel string, mode fs.FileMode, read func() ([]byte, error)) bool {
	dir, name := path.Split(rel)
	dir = strings.ToLower(strings.TrimSuffix(dir, "/"))
	switch {
	case mode.IsDir() && strings.EqualFold(name, "hooks") && path.Base(dir) == ".git":
		return true
	case mode.IsRegular() && strings.HasSuffix(name, ".sample") && path.Base(dir) == "hooks" && path.Base(path.Dir(dir)) == ".git":
		return true
	case mode.IsRegular() && name == "config" && path.Base(dir) == ".git":
		b, err := read()
		return err == nil && SafeGitConfig(b)
	}
	return false
}

// SafeGitConfig reports whether a git config file holds only settings that make git run nothing: the ones `git
// init`, `git config user.*` and a plain remote write. Anything else, or anything this reader does not understand
// (includes, continuation lines, odd syntax), is not safe: core.hooksPath, core.fsmonitor, core.sshCommand,
// filters, aliases and includes all name programs git would run on the host.
func SafeGitConfig(b []byte) bool {
	allowed := map[string]bool{
		"core.repositoryformatversion": true, "core.filemode": true, "core.bare": true, "core.logallrefupdates": true,
		"core.ignorecase": true, "core.precomposeunicode": true, "core.symlinks": true,
		"extensions.objectformat": true, "user.name": true, "user.email": true, "init.defaultbranch": true,
	}
	sub := map[string]bool{"branch.remote": true, "branch.merge": true, "remote.url": true, "remote.fetch": true}
	section, subsection := "", false
	for _, raw := range bytes.Split(b, []byte("\n")) {
		line := strings.TrimSpace(string(raw))
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		if strings.HasSuffix(line, "\\") {
			return false
		}
		if line[0] == '[' {
			end := strings.IndexByte(line, ']')
			if end < 0 || strings.TrimSpace(line[end+1:]) != "" {
				return false
			}
			head := line[1:end]
			name, rest, hasSub := strings.Cut(head, " ")
			section, subsection = strings.ToLower(name), hasSub && strings.HasPrefix(strings.TrimSpace(rest), "\"")
			if strings.Contains(section, ".") {
				return false // [section.sub]: the old spelling, not what git writes
			}
			continue
		}
		key, _, _ := strings.Cut(line, "=")
		key = strings.ToLower(strings.TrimSpace(key))
		if strings.ContainsFunc(key, func(c rune) bool { return !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') }) {
			return false
		}
		if subsection {
			if !sub[section+"."+key] {
				return false
			}
		} else if !allowed[section+"."+key] {
			return false
		}
	}
	return true
}
