package mcpserve

import (
	"errors"
	"flag"
	"fmt"
	"io"
)

// The servers' exit codes, the same for both: 0 after a clean shutdown (or -help, -version), 2 when the
// configuration is wrong (flags, environment, workspace, backend), 1 when serving failed.
const (
	ExitOK     = 0
	ExitFailed = 1
	ExitConfig = 2
)

// configError marks an error in what the server was told, as opposed to one met while serving.
type configError struct{ err error }

func (e configError) Error() string { return e.err.Error() }
func (e configError) Unwrap() error { return e.err }

// ConfigError marks err as a configuration error: the server exits with ExitConfig. nil stays nil.
func ConfigError(err error) error {
	if err == nil {
		return nil
	}
	return configError{err}
}

// ExitCode reports err on stderr as "name: err" and returns the exit code for it.
func ExitCode(name string, err error, stderr io.Writer) int {
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return ExitOK
	}
	fmt.Fprintf(stderr, "%s: %v\n", name, err)
	if errors.As(err, new(configError)) {
		return ExitConfig
	}
	return ExitFailed
}
