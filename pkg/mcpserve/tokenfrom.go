package mcpserve

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// maxTokenFromBytes bounds what -token-from reads: a token list, not a file given by mistake.
const maxTokenFromBytes = 4096

// readTokenFrom reads the token -token-from names: the file's text without the white space around it (a Secret
// written with a final newline), one token or several separated by commas as -token takes them. An empty file, a
// larger one, or NoToken in it is refused: a file meant to hold the token never turns the token off.
func readTokenFrom(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("-token-from: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxTokenFromBytes+1))
	if err != nil {
		return "", fmt.Errorf("-token-from %s: %w", path, err)
	}
	if len(data) > maxTokenFromBytes {
		return "", fmt.Errorf("-token-from %s: more than %d bytes; the file holds the token (or tokens separated by commas) and nothing else", path, maxTokenFromBytes)
	}
	tok := strings.TrimSpace(string(data))
	switch {
	case tok == "":
		return "", fmt.Errorf("-token-from %s: the file is empty; it must hold the token", path)
	case tok == NoToken:
		return "", fmt.Errorf("-token-from %s: the file says %q; serving without a token is -token none, never a file's content", path, NoToken)
	case strings.ContainsAny(tok, " \t\r\n"):
		return "", errors.New("-token-from " + path + ": the token has white space inside; several tokens are separated by commas")
	}
	return tok, nil
}
