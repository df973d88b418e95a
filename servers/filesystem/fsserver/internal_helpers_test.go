package fsserver

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"unicode/utf8"

	"github.com/goalbox/goalbox/pkg/pathguard"
	"github.com/goalbox/goalbox/pkg/protocol"
)

func pathguardOpen(dir string) (*pathguard.Guard, error) {
	return pathguard.Open(dir, pathguard.Options{})
}

func utf8Valid(s string) bool { return utf8.ValidString(s) }

func writeFile(dir, name, content string) error {
	return os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644)
}

func readInput(path string, offset, limit int) protocol.ReadFileInput {
	return protocol.ReadFileInput{Path: path, Offset: offset, Limit: limit}
}

// readText calls the read tool's handler for a text read and returns its text result.
func readText(s *Filesystem, in protocol.ReadFileInput) (readOutput, error) {
	out, err := s.read(context.Background(), in)
	if err != nil {
		return readOutput{}, err
	}
	text, ok := out.(readOutput)
	if !ok {
		return readOutput{}, fmt.Errorf("a text read returned a %T", out)
	}
	return text, nil
}

// ReadOutputSchema is the shapes sandbox_read_file's results take, which it does not declare (read.go).
var ReadOutputSchema = readOutputSchema
