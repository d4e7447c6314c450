package servers

// This is the only file of the bench that touches agentmcp's API (a test,
// TestOnlyOneFileImportsAgentmcp, holds it to that): the session it serves
// and how each of its servers is built and stopped. When agentmcp's
// engine or carrier API changes shape, this file is the one to adapt.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"

	"github.com/agentmcp/agentmcp/adapters/agent"
	"github.com/agentmcp/agentmcp/adapters/httploopback"
	"github.com/agentmcp/agentmcp/adapters/httpremote"
	"github.com/agentmcp/agentmcp/adapters/landlock"
	"github.com/agentmcp/agentmcp/adapters/metrics"
	agentstdio "github.com/agentmcp/agentmcp/adapters/stdio"
	"github.com/agentmcp/agentmcp/adapters/streamable"
	"github.com/agentmcp/agentmcp/adapters/workspace"
	"github.com/agentmcp/agentmcp/app"
	"github.com/agentmcp/agentmcp/domain"
	"github.com/agentmcp/agentmcp/engine"
	"github.com/agentmcp/agentmcp/internal/fake"
	"github.com/agentmcp/agentmcp/ports"

	"github.com/agentmcp/agentmcp/bench/internal/wire"
)

// echoSession is the ports.Session agentmcp serves: one runtime tool, echo,
// whose envelope's result is its arguments. agentmcp renders the envelope as
// the call's text block, so its answer text is wire.EnvelopeText rather than
// the bare "hello world" the peers return: that is agentmcp's contract
// (docs/SPEC.md §2), not a benchmark choice.
type echoSession struct{}

var echoTools = []domain.Tool{{
	Name:        "echo",
	Description: "Echo the text back",
	InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`),
}}

func (echoSession) RuntimeTools(context.Context) ([]domain.Tool, error) { return echoTools, nil }

func (echoSession) InvokeTool(_ context.Context, name string, args json.RawMessage, _ ports.Caller) (domain.Envelope, error) {
	if name != "echo" {
		return domain.Envelope{}, fmt.Errorf("no such tool %q", name)
	}
	return domain.Envelope{Success: true, ToolName: name, Result: args}, nil
}

func (echoSession) Submit(context.Context, ports.Submission, ports.Caller) (ports.TurnResult, error) {
	return ports.TurnResult{}, ports.Refused("no turns in the benchmark")
}

const agentmcpName, agentmcpVersion = "bench-agentmcp", "0"

// agentmcpVerdictCache is the remote host's verdict cache size: a pool of
// more distinct tokens than this, used in turn, misses it on every request.
const agentmcpVerdictCache = httpremote.MaxCachedVerdicts

// agentmcpHandler is the Streamable HTTP framing both of agentmcp's hosts
// use (streamable.NewHandler over the engine) with no admission in front: no
// token, Host or Origin check. Limits are the defaults.
func agentmcpHandler() (http.Handler, error) {
	eng, err := newAgentmcpEngine()
	if err != nil {
		return nil, err
	}
	if err := eng.Validate(context.Background()); err != nil {
		return nil, err
	}
	return streamable.NewHandler(eng, streamable.Options{})
}

// newAgentmcpEngine builds the engine every agentmcp server serves.
func newAgentmcpEngine() (*engine.Engine, error) {
	return newObservedEngine(nil)
}

// newObservedEngine is newAgentmcpEngine with an Observer (nil: none).
func newObservedEngine(o ports.Observer) (*engine.Engine, error) {
	return engine.New(echoSession{}, engine.Options{Name: agentmcpName, Version: agentmcpVersion, Observer: o})
}

// stopBoth stops a carrier, then its engine.
func stopBoth(stop func(context.Context) error, eng *engine.Engine) func(context.Context) error {
	return func(ctx context.Context) error { return errors.Join(stop(ctx), eng.Shutdown(ctx)) }
}

// startAgentmcpLoopback starts the real loopback host, adapters/httploopback:
// its own http.Server and listener caps, and its admission (request target,
// Host, Origin, constant-time bearer token). It returns the endpoint URL and
// the bearer token. With observed, its metrics are on, as --metrics-listen
// turns them on: adapters/metrics observes every request and connection
// (nobody scrapes them; a scrape every few seconds costs nothing measurable
// at this rate).
func startAgentmcpLoopback(ctx context.Context, observed bool) (url, token string, stop func(context.Context) error, err error) {
	var o ports.Observer
	if observed {
		o = metrics.New(metrics.Options{})
	}
	eng, err := newObservedEngine(o)
	if err != nil {
		return "", "", nil, err
	}
	h, err := httploopback.New(eng, httploopback.Options{})
	if err != nil {
		return "", "", nil, err
	}
	err = h.Start(ctx)
	if err != nil {
		return "", "", nil, err
	}
	ep := h.Endpoint()
	return ep.URL, ep.Token, stopBoth(h.Stop, eng), nil
}

// remoteConfig is what the remote host needs from the bench: its public URL
// and the issuer, scope and subject of the tokens it admits.
type remoteConfig struct {
	PublicURL, Issuer, Scope, Subject string
	// IssuerClient reaches the issuer (it trusts the issuer's test CA).
	IssuerClient *http.Client
}

// startAgentmcpRemote starts the remote host as app.NewRemote builds it, with
// the oauth verifier, bound to 127.0.0.1 on a free port. It returns the
// bound address ("127.0.0.1:port").
func startAgentmcpRemote(ctx context.Context, c remoteConfig) (addr string, stop func(context.Context) error, err error) {
	eng, err := newAgentmcpEngine()
	if err != nil {
		return "", nil, err
	}
	h, err := app.NewRemote(eng, httpremote.Options{Host: "127.0.0.1"}, app.RemoteAccess{
		PublicURL: c.PublicURL, Issuer: c.Issuer, Scopes: []string{c.Scope},
		AllowedSubjects: []string{c.Subject}, HTTPClient: c.IssuerClient,
	})
	if err != nil {
		return "", nil, err
	}
	err = h.Start(ctx)
	if err != nil {
		return "", nil, err
	}
	ap := h.Addr()
	return ap.String(), stopBoth(h.Stop, eng), nil
}

// serveAgentmcpStdio serves the session with adapters/stdio, the carrier
// cmd/agentmcp uses, on in and out. wait returns when the input has ended and
// the calls in flight are answered; stop ends serving early.
func serveAgentmcpStdio(ctx context.Context, in io.Reader, out io.Writer) (wait func() error, stop func(context.Context) error, err error) {
	eng, err := newAgentmcpEngine()
	if err != nil {
		return nil, nil, err
	}
	return serveEngineStdio(ctx, eng, in, out)
}

// ServeSessionStdio serves session as serveAgentmcpStdio serves the echo
// session: the agent_submit rows of bench/submit, whose session is the
// reference agent.
func ServeSessionStdio(ctx context.Context, session ports.Session, in io.Reader, out io.Writer) (wait func() error, stop func(context.Context) error, err error) {
	eng, err := engine.New(session, engine.Options{Name: agentmcpName, Version: agentmcpVersion})
	if err != nil {
		return nil, nil, err
	}
	return serveEngineStdio(ctx, eng, in, out)
}

// ServeAgentPipes serves the reference agent (adapters/agent over the
// workspace on root, its files served as resources names them, its
// conversations in memory, model answering its steps) as ServeSessionStdio
// does, on a fresh io.Pipe pair: w is the server's stdin, r its stdout
// (lines up to 16 MiB). closeAll closes stdin, drains stdout, stops the
// server within StopTimeout and closes the workspace.
func ServeAgentPipes(root string, resources workspace.ResourceURIs, model ports.Model) (w io.Writer, r *bufio.Scanner, closeAll func(), err error) {
	real, err := filepath.EvalSymlinks(root)
	if err != nil {
		return nil, nil, nil, err
	}
	ws, err := workspace.New(workspace.Options{Root: root, Resources: resources})
	if err != nil {
		return nil, nil, nil, err
	}
	s, err := agent.New(ws, model, agent.Options{Root: real})
	if err != nil {
		ws.Close()
		return nil, nil, nil, err
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	_, stop, err := ServeSessionStdio(context.Background(), s, inR, outW)
	if err != nil {
		ws.Close()
		return nil, nil, nil, err
	}
	r = bufio.NewScanner(outR)
	r.Buffer(nil, 16<<20)
	return inW, r, func() {
		inW.Close()
		go io.Copy(io.Discard, outR)
		ctx, cancel := context.WithTimeout(context.Background(), StopTimeout)
		defer cancel()
		stop(ctx)
		outW.Close()
		ws.Close()
	}, nil
}

// serveEngineStdio serves eng with adapters/stdio on in and out.
func serveEngineStdio(ctx context.Context, eng *engine.Engine, in io.Reader, out io.Writer) (wait func() error, stop func(context.Context) error, err error) {
	t, err := agentstdio.New(eng, agentstdio.Options{Stdin: in, Stdout: out})
	if err != nil {
		return nil, nil, err
	}
	if err := t.Start(ctx); err != nil {
		if errors.Is(err, engine.ErrInputClosed) {
			return func() error { return nil }, func(context.Context) error { return nil }, nil
		}
		return nil, nil, err
	}
	stop = func(ctx context.Context) error {
		if err := t.Stop(ctx); err != nil && !errors.Is(err, engine.ErrInputClosed) {
			return err
		}
		return eng.Shutdown(ctx)
	}
	wait = func() error { return errors.Join(t.Wait(), eng.Shutdown(context.Background())) }
	return wait, stop, nil
}

// workspaceSession is the reference workspace session (adapters/workspace,
// the CLI's tools) over a root holding wire.FileName, for the rows that set
// tasks/get beside a plain read_file. It has no model; its submission is a
// "turn" that reads the file through the same read_file and answers its
// content, so an agent_submit task completes at once with a result of about
// read_file's size: the completed task the tasks/get row reads.
type workspaceSession struct{ *workspace.Session }

func (s workspaceSession) Submit(ctx context.Context, _ ports.Submission, c ports.Caller) (ports.TurnResult, error) {
	env, err := s.InvokeTool(ctx, "read_file", json.RawMessage(`{"path":"`+wire.FileName+`"}`), c)
	if err != nil {
		return ports.TurnResult{}, err
	}
	var r struct{ Content string }
	if !env.Success || json.Unmarshal(env.Result, &r) != nil {
		return ports.TurnResult{}, fmt.Errorf("read_file failed: %s", env.Error)
	}
	return ports.TurnResult{Response: r.Content}, nil
}

// startAgentmcpWorkspace starts the loopback host, as startAgentmcpLoopback
// does, serving workspaceSession over a temporary root, which stop removes.
func startAgentmcpWorkspace(ctx context.Context) (url, token string, stop func(context.Context) error, err error) {
	root, err := os.MkdirTemp("", "bench-workspace-")
	if err != nil {
		return "", "", nil, err
	}
	defer func() {
		if err != nil {
			os.RemoveAll(root)
		}
	}()
	if err := os.WriteFile(filepath.Join(root, wire.FileName), []byte(wire.FileText), 0o644); err != nil {
		return "", "", nil, err
	}
	ws, err := workspace.New(workspace.Options{Root: root})
	if err != nil {
		return "", "", nil, err
	}
	eng, err := engine.New(workspaceSession{ws}, engine.Options{Name: agentmcpName, Version: agentmcpVersion})
	if err != nil {
		ws.Close()
		return "", "", nil, err
	}
	h, err := httploopback.New(eng, httploopback.Options{})
	if err == nil {
		err = h.Start(ctx)
	}
	if err != nil {
		ws.Close()
		return "", "", nil, err
	}
	ep := h.Endpoint()
	stopHost := stopBoth(h.Stop, eng)
	return ep.URL, ep.Token, func(ctx context.Context) error {
		return errors.Join(stopHost(ctx), ws.Close(), os.RemoveAll(root))
	}, nil
}

// AgentmcpCommand runs agentmcp's command line in this process (app.Main)
// with args, its output to stdout and stderr, and returns its exit code:
// the CLI rows of bench/store ("conversations list").
func AgentmcpCommand(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return app.Main(ctx, args, nil, stdout, stderr)
}

// LauncherMain makes this process run_command's sandbox launcher when it
// was started as one (adapters/landlock re-executes the running binary):
// call it first in main or TestMain of whatever uses SandboxCommand.
func LauncherMain() { landlock.Main() }

// SandboxCommand returns how agentmcp serve --allow-commands --sandbox
// kind ("none", "landlock" or "bubblewrap") starts argv over root with the
// private temporary directory temp: the argument vector and the files its
// first process gets as descriptors 3, ... . close releases them.
func SandboxCommand(kind string, argv []string, root, temp string) (cmd []string, files []*os.File, close func(), err error) {
	sb, err := app.NewCommandSandbox(app.SandboxOptions{Kind: kind})
	if err != nil {
		return nil, nil, nil, err
	}
	if sb.Sandbox == nil {
		return argv, nil, func() { sb.Close() }, nil
	}
	cmd, err = sb.Sandbox(argv, []string{root, temp})
	if err != nil {
		sb.Close()
		return nil, nil, nil, err
	}
	return cmd, sb.Files, func() { sb.Close() }, nil
}

// Exchanger is an engine over the scripted session (internal/fake) taken
// through Engine.Exchange, the HTTP hosts' entry point, without the HTTP:
// the store benchmarks' tasks/get and plain calls across replicas
// (docs/SPEC.md §14 "Replicas").
type Exchanger struct{ e *engine.Engine }

// NewExchanger builds an Exchanger whose tasks and rounds live in calls
// (nil: in memory, the default).
func NewExchanger(calls ports.CallStore) (*Exchanger, error) {
	e, err := engine.New(fake.New(), engine.Options{Calls: calls})
	if err != nil {
		return nil, err
	}
	return &Exchanger{e: e}, nil
}

// Exchange sends one 2026-07-28 request, method with params (the members
// inside "params", without braces), clientCapabilities caps and the
// Mcp-Name header name, as principal. It returns the answer's body, or an
// error when the engine did not answer it at once.
func (x *Exchanger) Exchange(ctx context.Context, principal ports.Principal, id int, method, caps, params, name string) ([]byte, error) {
	body := `{"jsonrpc":"2.0","id":` + strconv.Itoa(id) + `,"method":"` + method + `","params":{` + params +
		`,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":` + caps + `}}}`
	h := engine.Headers{ProtocolVersion: "2026-07-28", Method: method, Name: name, HasProtocolVersion: true, HasMethod: true, HasName: true}
	r := x.e.Exchange(ctx, []byte(body), engine.ExchangeOptions{Headers: h, Principal: principal})
	if r.Kind != engine.Answered {
		return nil, fmt.Errorf("%s: kind %v %s", method, r.Kind, r.Body)
	}
	return r.Body, nil
}

// Shutdown stops the engine (Engine.Shutdown).
func (x *Exchanger) Shutdown(ctx context.Context) { x.e.Shutdown(ctx) }
