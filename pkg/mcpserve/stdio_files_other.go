//go:build !unix

package mcpserve

import (
	"io"
	"os"
)

// stdioFiles returns stdin and stdout as they are: the poller's non-blocking mode is a unix one (stdio_files_unix.go).
func stdioFiles() (in io.Reader, out io.Writer, restore func()) {
	return os.Stdin, os.Stdout, func() {}
}
