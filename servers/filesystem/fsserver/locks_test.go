package fsserver

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/goalbox/goalbox/pkg/protocol"
)

// TestEditsThroughAliasesSerialize: concurrent edits of one file under three names — its own, a symlink to it, and
// a path through a symlinked folder — all land. Locks keyed on the name would let two of them read the same old
// content and the later write drop the earlier edit.
func TestEditsThroughAliasesSerialize(t *testing.T) {
	s, ws := testServer(t)
	const n = 120
	var content strings.Builder
	for i := range n {
		fmt.Fprintf(&content, "line %d\n", i)
	}
	if err := os.WriteFile(filepath.Join(ws, "real.txt"), []byte(content.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("real.txt", filepath.Join(ws, "alias.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(".", filepath.Join(ws, "here")); err != nil {
		t.Fatal(err)
	}
	names := []string{"real.txt", "alias.txt", "here/real.txt"}
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			in := protocol.EditFileInput{Path: names[i%len(names)], OldText: fmt.Sprintf("line %d\n", i), NewText: fmt.Sprintf("edited %d\n", i)}
			if _, err := s.edit(context.Background(), in); err != nil {
				errs <- fmt.Errorf("edit %d through %s: %v", i, in.Path, err)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err) // an edit whose line a concurrent write had put back, or lost
	}
	got, err := os.ReadFile(filepath.Join(ws, "real.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if !strings.Contains(string(got), fmt.Sprintf("edited %d\n", i)) {
			t.Errorf("the edit of line %d was lost", i)
		}
	}
	if fi, err := os.Lstat(filepath.Join(ws, "alias.txt")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("alias.txt is no longer a symlink: %v %v", fi, err)
	}
}
