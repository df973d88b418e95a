//go:build !unix

package mcpserve

import (
	"os"
	"path/filepath"
)

// writePrivateFile writes data to a fresh file at path and returns a function that removes it. On Windows the
// default folder is under the user's profile, whose ACL already keeps other users out; the file is made with O_EXCL
// after removing an old one, so it is a new file no one else had open.
func writePrivateFile(path string, data []byte) (func(), error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return nil, err
	}
	return func() { os.Remove(path) }, nil
}
