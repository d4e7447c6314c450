package sqlite

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentmcp/agentmcp/ports"
	"github.com/agentmcp/agentmcp/ports/porttest"
)

func openT(t *testing.T, path string, opts Options) *Store {
	t.Helper()
	s, err := Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestContract(t *testing.T) {
	porttest.TestConversationStore(t, func(t *testing.T, b porttest.StoreBounds) ports.ConversationStore {
		return openT(t, filepath.Join(t.TempDir(), FileName), Options{MaxConversations: b.MaxConversations, MaxBytes: b.MaxBytes})
	})
}

// appendTurn is Append within maxBytes, without its number.
func (s *Store) appendTurn(ctx context.Context, ref ports.ConversationRef, turn ports.Turn, maxBytes int) error {
	_, err := s.Append(ctx, ref, turn, ports.AppendOptions{MaxBytes: maxBytes})
	return err
}

var local = ports.RefOf("/work/a", ports.Principal{})

func turn(text string, bytes int) ports.Turn {
	return ports.Turn{Messages: []ports.Message{{Role: ports.RoleUser, Content: text}, {Role: ports.RoleAssistant, Content: "ok"}}, Bytes: bytes}
}

// TestFileModes: the directory is created 0700 and the file 0600, and so
// are SQLite's own -wal and -shm files.
func TestFileModes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state", "agentmcp")
	s := openT(t, filepath.Join(dir, FileName), Options{})
	if err := s.appendTurn(t.Context(), local, turn("hello", 10), 1000); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(dir)
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("directory mode %v, %v; want 0700", fi.Mode().Perm(), err)
	}
	for _, name := range []string{FileName, FileName + "-wal", FileName + "-shm"} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v, %v; want 0600", name, fi.Mode().Perm(), err)
		}
	}
}

// TestBounds: the store's caps drop the least recently updated
// conversations, in Append's transaction; the age limit applies to Load,
// List and Open.
func TestBounds(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	now := time.Unix(1_000_000, 0)
	clock := func() time.Time { return now }
	s := openT(t, path, Options{MaxConversations: 2, MaxBytes: 250, MaxAge: time.Hour, Now: clock})
	ref := func(root string) ports.ConversationRef { return ports.RefOf(root, ports.Principal{}) }
	for _, root := range []string{"/a", "/b", "/c"} {
		now = now.Add(time.Second)
		if err := s.appendTurn(t.Context(), ref(root), turn(root, 100), 1000); err != nil {
			t.Fatal(err)
		}
	}
	list, _ := s.List(t.Context(), ports.ConversationFilter{})
	if len(list) != 2 || list[0].Ref != ref("/c") || list[1].Ref != ref("/b") {
		t.Fatalf("three conversations with a cap of two: %+v, want /c, /b", list)
	}
	now = now.Add(time.Second)
	if err := s.appendTurn(t.Context(), ref("/b"), turn("more", 200), 1000); err != nil {
		t.Fatal(err)
	}
	if list, _ := s.List(t.Context(), ports.ConversationFilter{}); len(list) != 1 || list[0].Ref != ref("/b") || list[0].Bytes != 300 || list[0].Turns != 2 {
		t.Fatalf("300 bytes over a cap of 250: %+v, want /b alone with 2 turns", list)
	}
	now = now.Add(2 * time.Hour)
	if got, _ := s.Load(t.Context(), ref("/b")); len(got) != 0 {
		t.Errorf("a conversation two hours old with a one-hour limit still loads")
	}
	s.Close()
	s = openT(t, path, Options{MaxAge: time.Hour, Now: clock})
	var n int
	s.db.QueryRow(`SELECT count(*) FROM turns`).Scan(&n)
	if n != 0 {
		t.Errorf("%d expired turns left after Open", n)
	}
}

// TestTwoProcessesShare: two stores on one file (two processes serving one
// root) append turns concurrently and lose none; each Load sees every
// committed turn.
func TestTwoProcessesShare(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	s1, s2 := openT(t, path, Options{}), openT(t, path, Options{})
	const n = 50
	var wg sync.WaitGroup
	errs := make(chan error, 2*n)
	for i, s := range []*Store{s1, s2} {
		wg.Go(func() {
			for j := range n {
				errs <- s.appendTurn(t.Context(), local, turn(fmt.Sprintf("p%d-%d", i, j), 10), 1<<20)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range []*Store{s1, s2} {
		got, err := s.Load(t.Context(), local)
		if err != nil || len(got) != 2*n {
			t.Fatalf("Load: %d turns, %v; want %d", len(got), err, 2*n)
		}
	}
}

// TestFaults: each fault at start-up is one line that names the file and
// what to do; the file is left as it was.
func TestFaults(t *testing.T) {
	prepared := func(t *testing.T) string {
		path := filepath.Join(t.TempDir(), FileName)
		s := openT(t, path, Options{})
		if err := s.appendTurn(t.Context(), local, turn("kept", 10), 1000); err != nil {
			t.Fatal(err)
		}
		s.Close()
		return path
	}
	cases := []struct {
		name  string
		setup func(t *testing.T) (string, Options)
		want  string
	}{
		{"locked", func(t *testing.T) (string, Options) {
			path := prepared(t)
			db, err := sql.Open("sqlite", "file:"+path+"?_txlock=immediate")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
			tx, err := db.Begin() // holds the write lock until the test ends
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { tx.Rollback() })
			return path, Options{LockTimeout: 50 * time.Millisecond}
		}, "is locked by another process"},
		{"corrupt", func(t *testing.T) (string, Options) {
			path := filepath.Join(t.TempDir(), FileName)
			if err := os.WriteFile(path, []byte(strings.Repeat("not a database ", 400)), 0o600); err != nil {
				t.Fatal(err)
			}
			return path, Options{}
		}, "is corrupt"},
		{"corrupt pages", func(t *testing.T) (string, Options) {
			path := prepared(t)
			b, _ := os.ReadFile(path)
			for i := 100; i < len(b); i++ { // keep the header, break the pages
				b[i] = 0xA5
			}
			os.WriteFile(path, b, 0o600)
			os.Remove(path + "-wal")
			return path, Options{}
		}, "is corrupt"},
		{"read-only", func(t *testing.T) (string, Options) {
			// Tests run as root, who may write any file: SQLite's
			// read-only mode stands in for a read-only file or mount.
			return prepared(t), Options{readOnly: true}
		}, "cannot be written"},
		{"newer schema", func(t *testing.T) (string, Options) {
			path := prepared(t)
			db, _ := sql.Open("sqlite", path)
			defer db.Close()
			if _, err := db.Exec("PRAGMA user_version = 99"); err != nil {
				t.Fatal(err)
			}
			return path, Options{}
		}, "has schema version 99, newer than this agentmcp's 2: upgrade agentmcp"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path, opts := c.setup(t)
			before, _ := os.ReadFile(path)
			s, err := Open(path, opts)
			if err == nil {
				s.Close()
				t.Fatal("Open succeeded")
			}
			msg := err.Error()
			t.Log(msg)
			if !strings.Contains(msg, c.want) || !strings.Contains(msg, path) || strings.Contains(msg, "\n") ||
				!strings.Contains(msg, "--state-dir") {
				t.Errorf("error %q: want one line naming %s, %q and what to do", msg, path, c.want)
			}
			if after, _ := os.ReadFile(path); string(after) != string(before) {
				t.Error("the file changed")
			}
		})
	}
}

// TestFullDisk: an Append that finds the disk full fails with
// ports.ErrStoreFull and keeps nothing of it; the store serves on once
// there is room. SQLite's max_page_count stands in for a full disk.
func TestFullDisk(t *testing.T) {
	s := openT(t, filepath.Join(t.TempDir(), FileName), Options{})
	if err := s.appendTurn(t.Context(), local, turn("kept", 10), 1<<20); err != nil {
		t.Fatal(err)
	}
	var pages int
	s.db.QueryRow("PRAGMA page_count").Scan(&pages)
	s.db.Exec(fmt.Sprintf("PRAGMA max_page_count = %d", pages))
	err := s.appendTurn(t.Context(), local, turn(strings.Repeat("x", 64<<10), 10), 1<<20)
	if !errors.Is(err, ports.ErrStoreFull) || !strings.Contains(err.Error(), "the disk is full") {
		t.Fatalf("Append on a full disk: %v, want ErrStoreFull", err)
	}
	if got, _ := s.Load(t.Context(), local); len(got) != 1 {
		t.Errorf("after a failed Append: %d turns, want 1", len(got))
	}
	s.db.Exec("PRAGMA max_page_count = 1073741823")
	if err := s.appendTurn(t.Context(), local, turn("room again", 10), 1<<20); err != nil {
		t.Fatalf("Append with room again: %v", err)
	}
}

// crashChild is set in the environment of the child that TestKill9 kills:
// the child appends numbered turns forever and prints each number once it
// is committed.
const crashChild = "AGENTMCP_SQLITE_CRASH_CHILD"

func TestMain(m *testing.M) {
	if path := os.Getenv(crashChild); path != "" {
		s, err := Open(path, Options{})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(3)
		}
		start, _ := s.Load(context.Background(), local)
		for i := len(start); ; i++ {
			if err := s.appendTurn(context.Background(), local, turn(strconv.Itoa(i), 1), 1<<30); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(3)
			}
			fmt.Println(i)
		}
	}
	os.Exit(m.Run())
}

// TestKill9: a process that commits turns in a loop is killed with SIGKILL
// at a random point, 100 times; every time the store opens clean, passes
// SQLite's integrity check and holds every turn the child reported
// committed, in order, with no gap.
func TestKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 100 processes")
	}
	path := filepath.Join(t.TempDir(), FileName)
	committed := -1
	for round := range 100 {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), crashChild+"="+path)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lines := bufio.NewScanner(out)
		for range 1 + rand.IntN(8) {
			if !lines.Scan() {
				t.Fatalf("round %d: the child ended: %s", round, stderr.String())
			}
			committed, _ = strconv.Atoi(lines.Text())
		}
		cmd.Process.Kill()
		cmd.Wait()

		s, err := Open(path, Options{})
		if err != nil {
			t.Fatalf("round %d: Open after kill -9: %v", round, err)
		}
		var check string
		s.db.QueryRow("PRAGMA integrity_check").Scan(&check)
		got, err := s.Load(t.Context(), local)
		s.Close()
		if check != "ok" || err != nil {
			t.Fatalf("round %d: integrity %q, Load %v", round, check, err)
		}
		if len(got) <= committed {
			t.Fatalf("round %d: %d turns stored, but turn %d was committed", round, len(got), committed)
		}
		for i, turn := range got {
			if turn.Messages[0].Content != strconv.Itoa(i) {
				t.Fatalf("round %d: turn %d is %q", round, i, turn.Messages[0].Content)
			}
		}
	}
}

// TestMigrateFromVersion1: a store written by agentmcp 21ef98f (schema
// version 1, one conversation per root and principal; testdata/v1.db, see
// testdata/README.md) opens as version 2 with every conversation its
// principal's default conversation: the same turns, numbered from 1, the
// same totals and update times, and no changes. Named conversations and
// forks work on it at once, and it opens again unchanged.
func TestMigrateFromVersion1(t *testing.T) {
	old, err := os.ReadFile(filepath.Join("testdata", "v1.db"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), FileName)
	if err := os.WriteFile(path, old, 0o600); err != nil {
		t.Fatal(err)
	}
	s := openT(t, path, Options{})
	var v int
	s.db.QueryRow("PRAGMA user_version").Scan(&v)
	if v != SchemaVersion || SchemaVersion != 2 {
		t.Fatalf("user_version %d after Open, want %d (2)", v, SchemaVersion)
	}
	project := ports.RefOf("/work/project", ports.Principal{})
	alice := ports.RefOf("/work/project", ports.Principal{Issuer: "https://issuer.example", Subject: "alice", Client: "client-1"})
	other := ports.RefOf("/work/other", ports.Principal{})
	list, err := s.List(t.Context(), ports.ConversationFilter{})
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		ref     ports.ConversationRef
		turns   int
		bytes   int64
		updated int64
	}
	var got []row
	for _, c := range list {
		got = append(got, row{c.Ref, c.Turns, c.Bytes, c.Updated.UnixMilli()})
		if c.ForkedFrom != "" {
			t.Errorf("%v: forked from %q", c.Ref, c.ForkedFrom)
		}
	}
	want := []row{{other, 1, 158, 1767323050000}, {project, 2, 318, 1767323049000}, {alice, 1, 163, 1767323048000}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("after the migration List = %v\nwant %v", got, want)
	}
	turns, err := s.Load(t.Context(), project)
	if err != nil {
		t.Fatal(err)
	}
	if len(turns) != 2 || turns[0].Number != 1 || turns[1].Number != 2 || turns[0].Changes != nil ||
		turns[0].Messages[0].Content != "What does a.txt say?" || turns[1].Messages[3].Content != "Still alpha." ||
		turns[0].Messages[1].ToolCalls[0].Name != "read_file" || turns[0].Messages[2].ToolCallID != "call_1" {
		t.Errorf("the default conversation's turns after the migration: %+v", turns)
	}
	if turns, _ := s.Load(t.Context(), alice); len(turns) != 1 || turns[0].Messages[3].Content != "Hello, alice ✓" {
		t.Errorf("alice's conversation after the migration: %+v", turns)
	}

	n, err := s.Append(t.Context(), project.Named("fork"), turn("forked", 10), ports.AppendOptions{MaxBytes: 1 << 20, ForkFrom: "default"})
	if err != nil || n != 3 {
		t.Fatalf("forking the migrated conversation: %d, %v; want turn 3", n, err)
	}
	if n, err := s.Append(t.Context(), project, turn("next", 10), ports.AppendOptions{MaxBytes: 1 << 20}); err != nil || n != 3 {
		t.Fatalf("continuing the migrated conversation: %d, %v; want turn 3", n, err)
	}
	s.Close()
	s = openT(t, path, Options{})
	var check string
	s.db.QueryRow("PRAGMA integrity_check").Scan(&check)
	if got, _ := s.Load(t.Context(), project.Named("fork")); check != "ok" || len(got) != 3 {
		t.Errorf("reopened: integrity %q, the fork has %d turns, want 3", check, len(got))
	}
}
