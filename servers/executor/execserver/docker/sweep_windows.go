//go:build windows

package docker

// sweepResult and sweepModes on Windows: a folder shared from Windows has no mode bits for a command to set.
type sweepResult struct {
	fixed, failed int
	tooDeep       bool
}

func (b *dockerBackend) sweepWorkspace() (sweepResult, error) { return sweepResult{}, nil }
