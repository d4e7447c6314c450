package app

import (
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/user"
	"sync"

	"github.com/agentmcp/agentmcp/adapters/bubblewrap"
	"github.com/agentmcp/agentmcp/adapters/landlock"
	"github.com/agentmcp/agentmcp/adapters/workspace"
)

// The sandboxes of run_command (docs/SPEC.md §9 "The sandbox").
const (
	sandboxBubblewrap = "bubblewrap"
	sandboxLandlock   = "landlock"
	sandboxNone       = "none"
)

// sandboxKind is --sandbox: bubblewrap (the default), landlock or none,
// checked as the flag is parsed.
type sandboxKind struct {
	name string
	set  bool
}

func (k *sandboxKind) String() string {
	if k.name == "" {
		return sandboxBubblewrap
	}
	return k.name
}

func (k *sandboxKind) Set(v string) error {
	switch v {
	case sandboxBubblewrap, sandboxLandlock, sandboxNone:
		k.name, k.set = v, true
		return nil
	}
	return errors.New("must be bubblewrap, landlock or none")
}

// commandFlags are run_command's flags, every serve command's.
type commandFlags struct {
	allow, noSandbox, network *bool
	sandbox                   sandboxKind
}

func addCommandFlags(fs *flag.FlagSet) *commandFlags {
	c := &commandFlags{
		allow: fs.Bool("allow-commands", false, "add the run_command tool: shell commands in the workspace, each approved by the user, "+
			"sandboxed (--sandbox)"),
		noSandbox: fs.Bool("no-sandbox", false, "the same as --sandbox none"),
		network:   fs.Bool("command-network", false, "let sandboxed commands use the network (off by default; the approval dialog says which)"),
	}
	fs.Var(&c.sandbox, "sandbox", "run_command's `SANDBOX`: bubblewrap (the default: a mount namespace with the system read-only, "+
		"the workspace read-write, your home, /tmp and /run hidden, no network; Landlock inside), landlock (Landlock alone, weaker: "+
		"for where bubblewrap cannot run) or none")
	return c
}

// check returns the usage error of run_command's flags that serveRules
// cannot say, as they depend on a value or the carrier, or "".
func (c *commandFlags) check(carrier string) string {
	switch kind := c.kind(); {
	case !*c.allow:
	case kind == sandboxNone && *c.network:
		return "--command-network opens the sandbox's network; without a sandbox (--sandbox none) commands have it anyway: leave it out"
	case carrier == "remote" && kind != sandboxBubblewrap:
		return "serve remote --allow-commands needs --sandbox bubblewrap: without it one principal's command could read " +
			"another's conversations (under Landlock alone commands read every file the server can)"
	}
	return ""
}

// kind is the sandbox the flags choose.
func (c *commandFlags) kind() string {
	if *c.noSandbox {
		return sandboxNone
	}
	return c.sandbox.String()
}

// hiddenPaths are the server's own files that no command may reach, even
// inside the root (docs/SPEC.md §9 "The sandbox"): the conversation
// store's directory, a token file, a socket. Carriers add theirs as they
// make them; the sandbox reads the list at each command.
type hiddenPaths struct {
	mu    sync.Mutex
	paths []string
}

func (h *hiddenPaths) add(paths ...string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, p := range paths {
		if p != "" {
			h.paths = append(h.paths, p)
		}
	}
}

func (h *hiddenPaths) list() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.paths...)
}

// What the approval dialog says each sandbox lets a command reach, one
// line each (docs/SPEC.md §9 "The sandbox").
const (
	reachBubblewrap = "can read: the system's files; your home directory, /tmp, /run and the server's own state are hidden\n" +
		"can write: only the workspace root (not its .git), a private /tmp and a private home\n" +
		"cannot: see or signal other processes, make device nodes, change anything outside the workspace"
	reachLandlock = "WEAKER sandbox (Landlock alone): it CAN read every file you can, connect to local Unix sockets, " +
		"change file modes and times outside the workspace, and write the workspace's .git\n" +
		"can write: only under the workspace root and a private temporary directory\n" +
		"cannot: signal or trace other processes, make device nodes"
	reachNoNetwork         = "\nnetwork: none"
	reachLandlockNoNetwork = "\nnetwork: no TCP (UDP is refused only from Landlock ABI 10)"
	reachNetwork           = "\nnetwork: ALLOWED (--command-network)"
)

// commands configures run_command from --allow-commands, --sandbox
// (--no-sandbox) and --command-network: nil without --allow-commands;
// otherwise sandboxed as --sandbox says (the flags' relations are already
// checked: serveRules and commandFlags.check). A sandbox this machine
// cannot run fails start-up with one line that says what to install or
// choose.
func (f *serveFlags) commands(logger *slog.Logger) (*workspace.Commands, bool) {
	c := f.cmds
	if !*c.allow {
		return nil, true
	}
	kind := c.kind()
	sb, err := NewCommandSandbox(SandboxOptions{Kind: kind, Network: *c.network, Hide: f.hidden.list})
	if err != nil {
		logger.Error(err.Error())
		return nil, false
	}
	switch kind {
	case sandboxNone:
		logger.Warn("run_command is on WITHOUT a sandbox (--sandbox none): an approved command can do whatever this user can")
	case sandboxLandlock:
		logger.Warn("run_command is sandboxed with Landlock alone (--sandbox landlock): commands can read every file this user can, "+
			"reach local Unix sockets and change file modes outside the workspace", "abi", sb.abi, "network", *c.network)
	default:
		logger.Info("run_command is on, sandboxed with bubblewrap and Landlock", "bwrap", sb.bwrap, "abi", sb.abi, "network", *c.network)
	}
	f.closeAfter = sb
	return sb.Commands, true
}

// SandboxOptions configure [NewCommandSandbox].
type SandboxOptions struct {
	// Kind is "bubblewrap" (the default when empty), "landlock" or "none".
	Kind string
	// Network lets sandboxed commands use the network.
	Network bool
	// Hide returns, at each command, the paths masked from it even inside
	// the root (bubblewrap only; see adapters/bubblewrap's Options.Hide).
	Hide func() []string
}

// CommandSandbox is run_command's sandbox: the workspace's Commands and
// what they hold open.
type CommandSandbox struct {
	*workspace.Commands
	launcher *os.File // bubblewrap's launcher executable; nil otherwise
	abi      int
	bwrap    string
}

// Close releases what the sandbox holds; commands must not run after it.
func (s *CommandSandbox) Close() error {
	if s.launcher == nil {
		return nil
	}
	return s.launcher.Close()
}

// NewCommandSandbox builds run_command's sandbox as agentmcp serve
// --allow-commands does (docs/SPEC.md §9 "The sandbox"), for a host that
// serves adapters/workspace itself: the Commands compose
// adapters/bubblewrap around adapters/landlock's launcher, or the
// launcher alone, or nothing. The launcher is this process's own
// executable, so main (or TestMain) must call landlock.Main first. Its
// error is one line that says what is missing and what to choose instead.
func NewCommandSandbox(o SandboxOptions) (*CommandSandbox, error) {
	kind := o.Kind
	if kind == "" {
		kind = sandboxBubblewrap
	}
	network := o.Network
	switch kind {
	case sandboxNone:
		return &CommandSandbox{Commands: &workspace.Commands{Name: sandboxNone}}, nil
	case sandboxLandlock, sandboxBubblewrap:
	default:
		return nil, fmt.Errorf("unknown sandbox %q: bubblewrap, landlock or none", kind)
	}
	abi, err := landlockAvailable()
	if err != nil {
		return nil, errors.New("--allow-commands sandboxes commands with Landlock (inside bubblewrap, or alone with --sandbox landlock), and " +
			err.Error() + ": add --sandbox none to run them without a sandbox")
	}
	if kind == sandboxLandlock {
		reach := reachLandlock + reachNetwork
		if !network {
			reach = reachLandlock + reachLandlockNoNetwork
		}
		return &CommandSandbox{abi: abi, Commands: &workspace.Commands{Name: sandboxLandlock, Reach: reach,
			Sandbox: func(argv, writable []string) ([]string, error) {
				return landlock.Wrap(argv, landlock.Options{Writable: writable, Network: network})
			}}}, nil
	}
	privileged := os.Geteuid() == 0
	launcher, err := os.Open(landlock.Launcher) // this very binary, whatever is put at its path later
	if err != nil {
		return nil, errors.New("--allow-commands runs its sandbox launcher from this program's executable, which cannot be opened: " + err.Error())
	}
	bw, err := newBubblewrap(bubblewrap.Options{Network: network, Hide: o.Hide, Homes: homes(),
		RuntimeDir: os.Getenv("XDG_RUNTIME_DIR"), AdminLauncher: privileged, Launcher: launcher})
	if err != nil {
		launcher.Close()
		return nil, errors.New("--allow-commands sandboxes commands with bubblewrap, and " + err.Error() +
			"; or start with --sandbox landlock for the weaker sandbox (Landlock alone)")
	}
	reach := reachBubblewrap + reachNoNetwork
	if network {
		reach = reachBubblewrap + reachNetwork
	}
	return &CommandSandbox{abi: abi, bwrap: bw.Bwrap(), launcher: launcher, Commands: &workspace.Commands{Name: sandboxBubblewrap, Reach: reach, Files: bw.Files(),
		Sandbox: func(argv, writable []string) ([]string, error) {
			root, temp := writable[0], writable[1]
			inner, err := landlock.Wrap(argv, landlock.Options{Writable: bw.Writable(root), Network: network,
				ReadOnlyDevices: privileged, OwnPIDNamespace: true})
			if err != nil {
				return nil, err
			}
			return bw.Wrap(inner, root, temp)
		}}}, nil
}

// homes are the home directories a bubblewrap sandbox hides: $HOME and
// the account's, when they differ.
func homes() []string {
	h := []string{os.Getenv("HOME")}
	if u, err := user.Current(); err == nil {
		h = append(h, u.HomeDir)
	}
	return h
}

// landlockAvailable is landlock.Available and newBubblewrap
// bubblewrap.New; tests replace them to play a machine without either.
var (
	landlockAvailable = landlock.Available
	newBubblewrap     = bubblewrap.New
)
