package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/agentmcp/agentmcp/adapters/agent"
	"github.com/agentmcp/agentmcp/adapters/memstore"
	"github.com/agentmcp/agentmcp/adapters/postgres"
	"github.com/agentmcp/agentmcp/adapters/sqlite"
	"github.com/agentmcp/agentmcp/internal/secretenv"
	"github.com/agentmcp/agentmcp/ports"
)

// Defaults of the conversation store's bounds (docs/SPEC.md §9).
const (
	defaultMaxConversations = 1000
	defaultMaxStoreBytes    = 256 << 20
	defaultMaxAge           = 90 * 24 * time.Hour

	// minHistoryBytes is the smallest --history-bytes: room for a turn
	// bounded to it (the agent's boundTurn) to keep its prompt, its
	// response and the notes that say what was cut.
	minHistoryBytes = 1 << 10
)

// storeFlags are the flags of the agent's conversation store: every serve
// command takes them (addServeFlags), and "agentmcp conversations" takes
// --state-dir.
type storeFlags struct {
	stateDir         *string
	store            *storeLocation
	ephemeral        *bool
	historyBytes     *int
	maxConversations *int
	maxPerPrincipal  *int
	maxStoreBytes    *int64
	maxAge           *time.Duration
	lease            *time.Duration // a PostgreSQL store's lease on the calls a replica runs
}

func addStoreFlags(fs *flag.FlagSet) *storeFlags {
	return &storeFlags{
		stateDir: addStateDirFlag(fs),
		store:    addStoreLocationFlags(fs),
		ephemeral: fs.Bool("ephemeral", false, "keep the agent's conversations in memory only: nothing is read from or written to "+
			"--state-dir, and they end with the process"),
		historyBytes: intFlag(fs, "history-bytes", agent.DefaultHistoryBytes, minHistoryBytes, "bound one conversation to `N` bytes (at least 1024): a finished turn "+
			"is first cut to fit (its oldest tool results and arguments become notes), then the oldest whole turns are dropped until the rest fit"),
		maxConversations: intFlag(fs, "max-conversations", defaultMaxConversations, 1, "keep at most `N` conversations in the store; "+
			"the least recently used are dropped first"),
		maxPerPrincipal: intFlag(fs, "max-conversations-per-principal", agent.DefaultMaxPerPrincipal, 1, "a principal holds at most `N` "+
			"conversations of the workspace; a submission that would start one more is refused"),
		maxStoreBytes: intFlag(fs, "max-store-bytes", int64(defaultMaxStoreBytes), 1, "keep at most `N` bytes of conversations in the store; "+
			"the least recently used are dropped first"),
		maxAge: durationFlag(fs, "max-conversation-age", defaultMaxAge, time.Nanosecond, 0, "forget a conversation not continued for `DURATION` "+
			"(2160h: 90 days)"),
	}
}

// addLeaseFlag is --lease, the serve commands' only: how long the tasks
// and rounds a replica runs outlive it in a PostgreSQL store.
func (f *storeFlags) addLeaseFlag(fs *flag.FlagSet) {
	f.lease = durationFlag(fs, "lease", postgres.DefaultLease, minLease, 0, "with a PostgreSQL --store, a replica renews its lease on "+
		"the tasks and rounds it runs three times per `DURATION` (at least "+minLease.String()+"); once it lapses (the replica died) "+
		"another replica fails its tasks and ends its rounds")
}

// minLease is --lease's least: three renewals of it must fit a database's
// round trips.
const minLease = 100 * time.Millisecond

func addStateDirFlag(fs *flag.FlagSet) *string {
	return fs.String("state-dir", "", "keep the agent's conversations in `DIR` (default $XDG_STATE_HOME/agentmcp, "+
		"else ~/.local/state/agentmcp; created 0700, its files 0600)")
}

// stateDir is --state-dir, or its default.
func stateDir(flagValue string) (string, error) {
	if flagValue != "" {
		return filepath.Abs(flagValue)
	}
	if x := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(x) {
		return filepath.Join(x, "agentmcp"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("no --state-dir, no XDG_STATE_HOME and no home directory: %w", err)
	}
	return filepath.Join(home, ".local", "state", "agentmcp"), nil
}

// workspaceID is --workspace-id: the name of the served workspace in the
// store — the workspace part of the conversations' key, and the scope of
// the tasks and rounds replicas share (docs/SPEC.md §9, §14) — in place of
// the root's real path, so that replicas mounting one workspace at other
// paths share them. "": the real path.
type workspaceID struct{ id string }

// workspaceIDPattern is what a workspace id may be: letters, digits and
// . _ - : /, at most 256 bytes (printable, no space: it is shown by
// agentmcp conversations list as it is).
var workspaceIDPattern = regexp.MustCompile(`^[A-Za-z0-9._:/-]{1,256}$`)

func addWorkspaceIDFlag(fs *flag.FlagSet, usage string) *workspaceID {
	w := &workspaceID{}
	fs.Var(w, "workspace-id", usage)
	return w
}

func (w *workspaceID) String() string {
	if w == nil {
		return ""
	}
	return w.id
}

func (w *workspaceID) Set(s string) error {
	if !workspaceIDPattern.MatchString(s) {
		return errors.New("want 1 to 256 letters, digits and . _ - : / (the same on every replica of the workspace)")
	}
	w.id = s
	return nil
}

// key is the workspace's key in the store: the id, else root's real path.
func (w *workspaceID) key(root string) (string, error) {
	if w != nil && w.id != "" {
		return w.id, nil
	}
	return realRoot(root)
}

// realRoot is root's real path: the key of its conversations, the same
// for every spelling of the directory.
func realRoot(root string) (string, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return "", err
	}
	return filepath.EvalSymlinks(abs)
}

// openedStore is the agent's conversation store and what closes it.
type openedStore struct {
	ports.ConversationStore
	close func() error
	dir   string // the state directory; "" in memory
	// calls is the store replicas share tasks and rounds in: a PostgreSQL
	// store's; nil for the others, whose tasks stay in the process.
	calls ports.CallStore
}

// open opens the store the flags name (their values and relations already
// checked: addStoreFlags, serveRules): in memory with --ephemeral, the
// PostgreSQL database of --store postgres://…, else the SQLite file of
// --store sqlite:PATH or the state directory. Its error is one line that says what
// to do.
//
// maxTurns is the most turns the agent runs at once: each holds one of a
// PostgreSQL store's connections while it runs (its claim on its
// conversation, [postgres.Store.HoldTurn]), so the pool has that many more
// than its default. scope is the served workspace's key: a PostgreSQL
// store keeps the tasks and rounds replicas share under it.
func (f *storeFlags) open(logger *slog.Logger, maxTurns int, scope string) (*openedStore, error) {
	if *f.ephemeral {
		logger.Info("conversations are kept in memory only (--ephemeral)")
		s := memstore.New(memstore.Options{MaxConversations: *f.maxConversations, MaxBytes: *f.maxStoreBytes, MaxAge: *f.maxAge})
		return &openedStore{ConversationStore: s, close: func() error { return nil }}, nil
	}
	if f.store.isPostgres() {
		o := postgres.Options{MaxConversations: *f.maxConversations, MaxBytes: *f.maxStoreBytes, MaxAge: *f.maxAge,
			MaxConns: int32(postgres.DefaultMaxConns + maxTurns), Scope: scope}
		if f.lease != nil {
			o.Lease = *f.lease
		}
		s, err := f.store.openPostgres(o)
		if err != nil {
			return nil, err
		}
		logger.Info("conversations, tasks and rounds are kept in "+s.Name()+", shared with every replica serving this workspace",
			"maxConversations", *f.maxConversations, "maxConversationsPerPrincipal", *f.maxPerPrincipal, "maxStoreBytes", *f.maxStoreBytes,
			"maxConversationAge", f.maxAge.String(), "lease", o.Lease.String())
		return &openedStore{ConversationStore: s, close: s.Close, calls: s}, nil
	}
	path, err := f.store.sqlitePath(*f.stateDir)
	if err != nil {
		return nil, err
	}
	s, err := sqlite.Open(path, sqlite.Options{
		MaxConversations: *f.maxConversations, MaxBytes: *f.maxStoreBytes, MaxAge: *f.maxAge})
	if err != nil {
		return nil, err
	}
	logger.Info("conversations are kept in "+s.Path(), "maxConversations", *f.maxConversations,
		"maxConversationsPerPrincipal", *f.maxPerPrincipal, "maxStoreBytes", *f.maxStoreBytes, "maxConversationAge", f.maxAge.String())
	return &openedStore{ConversationStore: s, close: s.Close, dir: filepath.Dir(path)}, nil
}

// storeLocation is --store and --store-password-file: where the
// conversations are kept (docs/SPEC.md §9 "The store"). Its value is
// checked by its form only; a postgres URL that holds a password is
// refused when the store is opened, so the flag package never echoes it.
type storeLocation struct {
	url          string // "sqlite:PATH" or "postgres://…"; "": the state directory's file
	passwordFile *string
}

func addStoreLocationFlags(fs *flag.FlagSet) *storeLocation {
	l := &storeLocation{}
	fs.Var(l, "store", "keep the agent's conversations in `URL`: sqlite:PATH (a SQLite file; --state-dir DIR is sqlite:DIR/"+sqlite.FileName+
		") or postgres://USER@HOST:PORT/DB?sslmode=… (PostgreSQL, shared by replicas; TLS as sslmode says). Never a password in it: "+
		"--store-password-file, PGPASSWORD or PGPASSFILE")
	l.passwordFile = fs.String("store-password-file", "", "read the PostgreSQL password of --store from `FILE` (its first line)")
	return l
}

func (l *storeLocation) String() string {
	if l == nil {
		return ""
	}
	return postgres.Redact(l.url)
}

func (l *storeLocation) Set(s string) error {
	switch {
	case strings.HasPrefix(s, "sqlite:") && len(s) > len("sqlite:"):
	case strings.HasPrefix(s, "postgres://"), strings.HasPrefix(s, "postgresql://"):
	default:
		return errors.New("want sqlite:PATH or postgres://USER@HOST:PORT/DB")
	}
	l.url = s
	return nil
}

func (l *storeLocation) isPostgres() bool {
	return strings.HasPrefix(l.url, "postgres://") || strings.HasPrefix(l.url, "postgresql://")
}

// sqlitePath is the SQLite file: --store sqlite:PATH, else the state
// directory's (--state-dir, or its default).
func (l *storeLocation) sqlitePath(stateDirFlag string) (string, error) {
	if p, ok := strings.CutPrefix(l.url, "sqlite:"); ok {
		return filepath.Abs(p)
	}
	dir, err := stateDir(stateDirFlag)
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, sqlite.FileName), nil
}

// openPostgres opens --store's PostgreSQL database with the password of
// --store-password-file, else PGPASSWORD (read through secretenv: the
// serve process moved it off its environment), else libpq's password
// file; o's password and writer are set here.
func (l *storeLocation) openPostgres(o postgres.Options) (*postgres.Store, error) {
	if postgres.HasPassword(l.url) {
		return nil, fmt.Errorf("--store %s: %w", postgres.Redact(l.url), postgres.ErrPasswordInURL)
	}
	o.Password = secretenv.Getenv("PGPASSWORD")
	if *l.passwordFile != "" {
		b, err := os.ReadFile(*l.passwordFile)
		if err != nil {
			return nil, fmt.Errorf("--store-password-file: %w", err)
		}
		pw, _, _ := strings.Cut(string(b), "\n")
		if pw = strings.TrimSuffix(pw, "\r"); pw == "" {
			return nil, fmt.Errorf("--store-password-file %s: its first line is empty", *l.passwordFile)
		}
		o.Password = pw
	}
	o.WrittenBy = "agentmcp " + Version
	return postgres.Open(context.Background(), l.url, o)
}
