package mcpserve

import "io"

// SetConsole replaces where Run prints for a person, for the external tests; it returns the restore.
func SetConsole(w io.Writer) func() {
	old := console
	console = w
	return func() { console = old }
}
