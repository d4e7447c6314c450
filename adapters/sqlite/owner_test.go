//go:build unix

package sqlite

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOpenRefusesAnotherUsersStore: a state directory or a store file
// (the database, its WAL, its shared memory) owned by another user, or
// writable by others, is refused with one line — before anything is
// created in that directory — since whoever controls it plants the history
// the model is sent and reads the new turns (issue 32).
func TestOpenRefusesAnotherUsersStore(t *testing.T) {
	open := func(path string) error {
		t.Helper()
		s, err := Open(path, Options{})
		if err == nil {
			s.Close()
		}
		return err
	}
	refused := func(name, path, want string) {
		t.Helper()
		err := open(path)
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: Open = %v, want one line containing %q", name, err, want)
		}
	}

	dir := filepath.Join(t.TempDir(), "state")
	if err := os.Mkdir(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, 0o777) // whatever the umask
	refused("a world-writable directory", filepath.Join(dir, FileName), "can be written by others (mode 0777)")
	if _, err := os.Stat(filepath.Join(dir, FileName)); err == nil {
		t.Error("a store file was made in the refused directory")
	}
	os.Chmod(dir, 0o770)
	refused("a group-writable directory", filepath.Join(dir, FileName), "can be written by others")
	os.Chmod(dir, 0o700)

	for _, file := range []string{FileName, FileName + "-wal", FileName + "-shm"} {
		if err := open(filepath.Join(dir, FileName)); err != nil {
			t.Fatalf("a store of this user's: %v", err)
		}
		p := filepath.Join(dir, file)
		if err := os.WriteFile(p, nil, 0o600); err != nil && !os.IsExist(err) {
			t.Fatal(err)
		}
		os.Chmod(p, 0o666)
		refused(file+" writable by others", filepath.Join(dir, FileName), file+" "+p+" can be written by others")
		os.Chmod(p, 0o600)
	}

	// Owned by another user: as root, chown a directory away; otherwise a
	// directory root owns (this user cannot write there anyway).
	other := filepath.Join(t.TempDir(), "theirs")
	if os.Geteuid() == 0 {
		if err := os.Mkdir(other, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(other, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		refused("another user's directory", filepath.Join(other, FileName), "is owned by uid 65534, not by this user (uid 0)")
		if err := os.Chown(other, 0, 0); err != nil {
			t.Fatal(err)
		}
		if err := open(filepath.Join(other, FileName)); err != nil {
			t.Fatal(err)
		}
		os.Chown(filepath.Join(other, FileName), 65534, 65534)
		refused("another user's database", filepath.Join(other, FileName), "is owned by uid 65534")
	} else {
		refused("root's directory", "/etc/"+FileName, "is owned by uid 0, not by this user")
	}
}
