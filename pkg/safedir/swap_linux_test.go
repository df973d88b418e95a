package safedir

import (
	"errors"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// TestMkdirAllRefusesAComponentSwappedForASymlink: another user swaps a folder on the way for a symlink of theirs
// to a root-only folder, again and again, while the walks run. Each walk either refuses or returns a folder made in
// the real one; none makes anything in the root-only folder, since what is checked is the descriptor that is used.
// (Linux: renameat2's RENAME_EXCHANGE swaps the two names in one step, so the name is never missing.)
func TestMkdirAllRefusesAComponentSwappedForASymlink(t *testing.T) {
	needRoot(t)
	b := base(t)
	secret := mkdirOf(t, filepath.Join(b, "root-only"), 0o700, 0)
	name := mkdirOf(t, filepath.Join(b, "name"), 0o755, os.Geteuid())
	real, err := os.Stat(name)
	if err != nil {
		t.Fatal(err)
	}
	planted := filepath.Join(b, "planted")
	if err := os.Symlink(secret, planted); err != nil {
		t.Fatal(err)
	}
	if err := os.Lchown(planted, otherUID, otherUID); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if err := unix.Renameat2(unix.AT_FDCWD, name, unix.AT_FDCWD, planted, unix.RENAME_EXCHANGE); err != nil {
				t.Errorf("swap: %v", err)
				return
			}
		}
	}()
	madeInReal, refused := 0, 0
	for i := 0; i < 2000; i++ {
		f, err := MkdirAll(filepath.Join(name, "made"))
		var unsafe *UnsafeError
		if errors.As(err, &unsafe) {
			refused++
			continue
		}
		if err != nil {
			t.Errorf("walk %d: %v", i, err)
			break
		}
		var parent unix.Stat_t
		if err := unix.Fstatat(int(f.Fd()), "..", &parent, 0); err != nil {
			t.Fatal(err)
		}
		f.Close()
		if st := real.Sys().(*syscall.Stat_t); parent.Ino != st.Ino || uint64(parent.Dev) != uint64(st.Dev) {
			t.Errorf("walk %d returned a folder made elsewhere than in the real folder", i)
		}
		madeInReal++
	}
	close(stop)
	wg.Wait()
	if entries, _ := os.ReadDir(secret); len(entries) != 0 {
		t.Errorf("a swapped-in symlink led the walk into the root-only folder: %v", entries)
	}
	t.Logf("%d walks made the folder in the real one, %d were refused", madeInReal, refused)
}
