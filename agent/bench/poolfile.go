package bench

import (
	"bufio"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"

	"github.com/goalbox/goalbox/agent/sandbox"
	"github.com/goalbox/goalbox/pkg/protocol"
)

// PoolFileFormat says what a line of a pool file may hold, for error messages and docs.
const PoolFileFormat = "FS_URL EXEC_URL, or FS_URL EXEC_URL FS_TOKEN EXEC_TOKEN (a token of - means none); " +
	"blank lines and lines starting with # are skipped"

// ReadPoolFile reads the sandboxes of a pool file (see ParsePool).
func ReadPoolFile(name, fsToken, execToken string) ([]PoolSandbox, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, fmt.Errorf("-sandbox-pool: %w", err)
	}
	defer f.Close()
	return ParsePool(f, name, fsToken, execToken)
}

// ParsePool reads a pool file: one remote sandbox a line, its filesystem server's MCP URL and its executor's,
// separated by spaces or tabs. The bearer tokens are fsToken and execToken (GOALBOX_FS_TOKEN and
// GOALBOX_EXEC_TOKEN, or -token) unless the line gives its own as a third and fourth field, both or neither: a
// pool whose sandboxes share a token keeps it out of the file, one whose sandboxes each have their own (a token
// per pod) writes them in it. A sandbox is named by its filesystem server's host:port (with the path when it is
// not /mcp). name is the file's name for messages.
func ParsePool(r io.Reader, name, fsToken, execToken string) ([]PoolSandbox, error) {
	var out []PoolSandbox
	seen := map[string]int{} // sandbox name -> line
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		bad := func(format string, a ...any) error {
			return fmt.Errorf("%s:%d: %s; each line is %s", name, n, fmt.Sprintf(format, a...), PoolFileFormat)
		}
		f := strings.Fields(line)
		fsTok, execTok := fsToken, execToken
		switch len(f) {
		case 2:
		case 4:
			fsTok, execTok = noneDash(f[2]), noneDash(f[3])
		default:
			return nil, bad("%d fields", len(f))
		}
		sbName, err := endpointName(f[0])
		if err != nil {
			return nil, bad("FS_URL %q: %v", f[0], err)
		}
		if _, err := endpointName(f[1]); err != nil {
			return nil, bad("EXEC_URL %q: %v", f[1], err)
		}
		if f[0] == f[1] {
			return nil, bad("FS_URL and EXEC_URL are the same URL: the filesystem server and the executor are two servers")
		}
		if prev, dup := seen[sbName]; dup {
			return nil, bad("sandbox %s is already on line %d", sbName, prev)
		}
		seen[sbName] = n
		out = append(out, RemoteSandbox(sbName, sandbox.Endpoint{URL: f[0], Token: fsTok}, sandbox.Endpoint{URL: f[1], Token: execTok}))
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no sandbox in the pool file; each line is %s", name, PoolFileFormat)
	}
	return out, nil
}

func noneDash(tok string) string {
	if tok == "-" {
		return ""
	}
	return tok
}

// endpointName checks an MCP URL and names the server by it.
func endpointName(raw string) (string, error) {
	u, err := url.Parse(raw)
	switch {
	case err != nil || (u.Scheme != "http" && u.Scheme != "https"):
		return "", fmt.Errorf("want an http:// or https:// URL such as http://127.0.0.1:7101%s", protocol.EndpointPath)
	case u.Host == "":
		return "", fmt.Errorf("no host")
	case u.User != nil:
		return "", fmt.Errorf("no user or password in the URL: give tokens as fields or in GOALBOX_FS_TOKEN/GOALBOX_EXEC_TOKEN")
	}
	if u.Path == protocol.EndpointPath {
		return u.Host, nil
	}
	return u.Host + u.Path, nil
}
