package local

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// The environment a command sees on the local backend is built from scratch: nothing of the server's own
// environment reaches a command except the variables named here, so API keys and tokens the server (or the agent
// that embeds it) holds never do.
//
// Passed through from the server when set: PATH, LANG, LC_ALL, and the homes of toolchains found on PATH
// (PYENV_ROOT, RUSTUP_HOME, NVM_DIR, JAVA_HOME, GOROOT), which tools need to find themselves once HOME is private.
// Set by the backend: HOME (a private home), TMPDIR (a private temp folder), TERM=dumb, and the cache variables,
// all pointing into the cache folder so that builds stay warm between commands.
var passThroughEnv = []string{"PATH", "LANG", "LC_ALL", "PYENV_ROOT", "RUSTUP_HOME", "NVM_DIR", "JAVA_HOME", "GOROOT"}

// defaultPath is used when the server itself has no PATH.
const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// sandboxDirs are the folders the local backend gives commands, all outside the workspace and all private to one
// workspace: two executors over different workspaces never share a home, a temp folder or a build cache, so
// nothing one leaves behind (a usercustomize.py in its home, a forged build cache entry) runs in the other.
type sandboxDirs struct {
	Home  string // private HOME, kept between commands
	Tmp   string // private TMPDIR, one per backend, removed at Close
	Cache string // build caches, kept between commands (shared only where the caller asked: SharedCacheDir)
}

// newSandboxDirs lays the folders out under cacheDir/ws-<hash of the workspace's real path>/.
func newSandboxDirs(cacheDir, workspace, sharedCache, instance string) sandboxDirs {
	sum := sha256.Sum256([]byte(workspace))
	base := filepath.Join(cacheDir, "ws-"+hex.EncodeToString(sum[:8]))
	return sandboxDirs{
		Home:  filepath.Join(base, "home"),
		Tmp:   filepath.Join(base, "tmp", instance),
		Cache: cmp.Or(sharedCache, filepath.Join(base, "cache")),
	}
}

func (d sandboxDirs) create() error {
	for _, p := range []string{d.Home, d.Tmp, d.Cache} {
		if err := os.MkdirAll(p, 0o700); err != nil {
			return err
		}
	}
	return nil
}

// commandEnv is the whole environment of a command. getenv reads the server's environment.
func commandEnv(d sandboxDirs, getenv func(string) string) []string {
	env := []string{}
	set := func(k, v string) { env = append(env, k+"="+v) }
	for _, k := range passThroughEnv {
		if v := getenv(k); v != "" {
			set(k, v)
		}
	}
	if getenv("PATH") == "" {
		set("PATH", defaultPath)
	}
	if getenv("LANG") == "" {
		set("LANG", "C.UTF-8")
	}
	// Toolchains installed under the server's home find themselves from HOME by default; HOME is private now,
	// so point them at their real place when it exists.
	if home := getenv("HOME"); home != "" {
		for k, sub := range map[string]string{"PYENV_ROOT": ".pyenv", "RUSTUP_HOME": ".rustup", "NVM_DIR": ".nvm"} {
			if getenv(k) == "" && isDir(filepath.Join(home, sub)) {
				set(k, filepath.Join(home, sub))
			}
		}
	}
	c := func(sub string) string { return filepath.Join(d.Cache, sub) }
	set("HOME", d.Home)
	set("TMPDIR", d.Tmp)
	set("TERM", "dumb")
	set("XDG_CACHE_HOME", c("xdg"))
	set("GOCACHE", c("go-build"))
	set("GOPATH", c("gopath"))
	set("GOMODCACHE", c("gopath/pkg/mod"))
	// No network: never try to download a newer Go toolchain.
	set("GOTOOLCHAIN", "local")
	set("npm_config_cache", c("npm"))
	set("npm_config_update_notifier", "false")
	set("PIP_CACHE_DIR", c("pip"))
	set("CARGO_HOME", c("cargo"))
	set("GRADLE_USER_HOME", c("gradle"))
	slices.Sort(env)
	return env
}

// toolchainRoots finds the folders the programs on PATH are installed in, to be readable by commands. A PATH entry
// "<root>/bin" (or sbin) outside the server's home gives its root, so that a toolchain's libraries next to its
// binaries are readable too (e.g. /usr/local/go); other entries give themselves. Under the server's home only the
// entry itself is opened (~/.cargo holds registry credentials next to its bin), plus the toolchain homes named in
// env (PYENV_ROOT, RUSTUP_HOME, ...). Symlinked entries are followed to where they lead.
func toolchainRoots(env []string, serverHome string) []string {
	get := func(k string) string {
		for _, kv := range env {
			if v, ok := strings.CutPrefix(kv, k+"="); ok {
				return v
			}
		}
		return ""
	}
	tooBroad := func(p string) bool {
		switch p {
		case "/", "/home", "/root", "/usr", "/var", "/tmp", serverHome:
			return true
		}
		return filepath.Dir(p) == "/home"
	}
	var roots []string
	add := func(p string) {
		if p == "" || !filepath.IsAbs(p) {
			return
		}
		for _, q := range []string{filepath.Clean(p), realPath(p)} {
			if q != "" && isDir(q) && !tooBroad(q) && !slices.Contains(roots, q) {
				roots = append(roots, q)
			}
		}
	}
	for _, dir := range filepath.SplitList(get("PATH")) {
		dir = filepath.Clean(dir)
		underHome := serverHome != "" && strings.HasPrefix(dir, serverHome+"/")
		switch filepath.Base(dir) {
		case "bin", "sbin":
			if parent := filepath.Dir(dir); !underHome && !tooBroad(parent) {
				add(parent)
				continue
			}
		}
		add(dir)
	}
	for _, k := range []string{"PYENV_ROOT", "RUSTUP_HOME", "NVM_DIR", "JAVA_HOME", "GOROOT"} {
		add(get(k))
	}
	slices.Sort(roots)
	return roots
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

func realPath(p string) string {
	r, err := filepath.EvalSymlinks(p)
	if err != nil {
		return ""
	}
	return r
}
