package mcpserve

import (
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
)

// NoToken as Config.Token (-token none) serves HTTP without a bearer token. Loopback is shared by every user of the
// machine, so this lets any of them in: Run logs a warning that says so.
const NoToken = "none"

// tokenState is how the MCP endpoint's token was settled at start.
type tokenState int

const (
	tokenGiven     tokenState = iota // -token T or the environment
	tokenGenerated                   // none given: made at start
	tokenOff                         // -token none
)

func (s tokenState) String() string {
	return [...]string{tokenGiven: "given", tokenGenerated: "generated", tokenOff: "none"}[s]
}

// settleToken returns the token the endpoint requires ("" for none) and how it came to be: the one given, a fresh
// one when none is (32 random bytes, as text), or none for NoToken.
func settleToken(given string) (string, tokenState) {
	switch given {
	case NoToken:
		return "", tokenOff
	case "":
		return rand.Text() + rand.Text(), tokenGenerated
	}
	return given, tokenGiven
}

// DefaultTokenDir is the folder a generated token's file goes in when no -token-file is given: the user's runtime
// folder ($XDG_RUNTIME_DIR, /run/user/UID on most Linux desktops) or else the user's cache folder (~/.cache on
// Linux, ~/Library/Caches on macOS), plus "goalbox"; for root /run/goalbox, never under $HOME (sudo -E keeps the
// invoking user's HOME, a folder that user could plant a symlink in).
func DefaultTokenDir() (string, error) {
	if os.Geteuid() == 0 {
		return "/run/goalbox", nil
	}
	if d := os.Getenv("XDG_RUNTIME_DIR"); filepath.IsAbs(d) {
		return filepath.Join(d, "goalbox"), nil
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no folder for the token file (%v): give -token-file PATH, or -token", err)
	}
	return filepath.Join(d, "goalbox"), nil
}

// tokenFileName is the default file name of a server's token: one file per server and listen address, so that two
// servers of one user (the filesystem server and the executor, or two executors) never share one.
func tokenFileName(server, addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		host, port = addr, ""
	}
	clean := func(s string) string {
		return strings.Map(func(r rune) rune {
			switch {
			case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '.':
				return r
			}
			return '_'
		}, s)
	}
	return fmt.Sprintf("%s-%s-%s.token", clean(strings.TrimPrefix(server, "goalbox-")), clean(host), clean(port))
}

// DefaultTokenFile is the file Run writes a generated token to when no -token-file is given, for the server named
// server (e.g. "goalbox-executor") listening on addr (host:port as it listens, e.g. 127.0.0.1:7102).
func DefaultTokenFile(server, addr string) (string, error) {
	dir, err := DefaultTokenDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, tokenFileName(server, addr)), nil
}

// writeTokenFile writes token to path (or, for "", to DefaultTokenFile), readable by this user
// only, and returns the path written and a function that removes the file. The file is made with O_EXCL and
// O_NOFOLLOW in a folder that only this user (or root) can change, reached without following a symlink a user could
// plant (writePrivateFile); an old file of the same name is replaced.
func writeTokenFile(path, server, addr, token string) (string, func(), error) {
	if path == "" {
		var err error
		if path, err = DefaultTokenFile(server, addr); err != nil {
			return "", nil, err
		}
	}
	if !filepath.IsAbs(path) {
		abs, err := filepath.Abs(path)
		if err != nil {
			return "", nil, fmt.Errorf("token file %s: %w", path, err)
		}
		path = abs
	}
	remove, err := writePrivateFile(path, []byte(token+"\n"))
	if err != nil {
		return "", nil, fmt.Errorf("token file %s: %w (give -token-file PATH in a folder of your own, or -token)", path, err)
	}
	return path, remove, nil
}

// clientConfig is what to paste into an MCP client's configuration to reach url with token.
func clientConfig(name, url, token string) string {
	type server struct { // in the order a person reads it
		Type    string            `json:"type"`
		URL     string            `json:"url"`
		Headers map[string]string `json:"headers"`
	}
	b, _ := json.MarshalIndent(map[string]any{"mcpServers": map[string]server{name: {
		Type: "http", URL: url, Headers: map[string]string{"Authorization": "Bearer " + token}}}}, "  ", "  ")
	return string(b)
}

// announceToken prints, once at start, how a client reaches the server: the URL, the header, the token file and a
// configuration to paste. It goes to w (stderr: stdout is the stdio transport's) as plain lines for a person, as
// Jupyter prints its URL with the token; the structured log says only that a token is required and where it is.
func announceToken(w io.Writer, name, url, token, file string) {
	// Listening on every interface (in a container), the URL names no host a client can use: say loopback, and
	// that another name or a published port may be the one to use.
	shown := url
	for _, all := range []string{"//0.0.0.0:", "//[::]:"} {
		if strings.Contains(url, all) {
			url = strings.Replace(url, all, "//127.0.0.1:", 1)
			shown = url + " (listening on every interface: from elsewhere, use the name or published port clients reach it by)"
		}
	}
	fmt.Fprintf(w, "\n%s is serving MCP at %s\n"+
		"  Every request needs the header:  Authorization: Bearer %s\n"+
		"  The token is in %s (readable by this user only); it changes at every start unless -token or the\n"+
		"  environment gives one. For an MCP client's configuration:\n  %s\n\n",
		name, shown, token, file, clientConfig(strings.TrimPrefix(name, "goalbox-"), url, token))
}

// warnNoToken is the warning for -token none, in the log and as plain lines for a person.
func warnNoToken(w io.Writer, name, url string) {
	fmt.Fprintf(w, "\nWARNING: %s serves %s with NO TOKEN (-token none). Every user and every process of this machine\n"+
		"that can reach the port can use it with this server's rights (loopback is not one user's). Drop -token none to\n"+
		"have a token generated.\n\n", name, url)
}
