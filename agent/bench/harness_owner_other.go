//go:build !unix

package bench

// shareHarnessDir has nothing to do where files have no unix owner.
func shareHarnessDir(Workspace) error { return nil }
