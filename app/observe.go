package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"time"

	"github.com/agentmcp/agentmcp/adapters/metrics"
	"github.com/agentmcp/agentmcp/internal/netcap"
	"github.com/agentmcp/agentmcp/ports"
)

// opsFlags are the operations flags every serve command takes
// (docs/SPEC.md §13): logging and the metrics listener.
type opsFlags struct {
	logLevel      slog.Level
	logFormat     logFormat
	metricsListen listenAddr

	logger *slog.Logger // made by newLogger's first call
	start  *startLog    // its start-up records, held until serving
}

func addOpsFlags(fs *flag.FlagSet) *opsFlags {
	o := &opsFlags{logLevel: slog.LevelInfo, logFormat: "text"}
	fs.Var(logLevel{&o.logLevel}, "log-level", "the least severe `LEVEL` of log records written: debug, info, warn or error")
	fs.Var(&o.logFormat, "log-format", "`FORMAT` of the log records on stderr: text (key=value) or json (one object a line)")
	fs.Var(&o.metricsListen, "metrics-listen", "serve Prometheus metrics at /metrics on this literal `IP:PORT` (a listener of its own, never the MCP port; off by default)")
	return o
}

// listenAddr is --metrics-listen: a literal IP:PORT with a port (0 would
// be a port nobody can scrape), checked as the flag is parsed.
type listenAddr struct {
	ap netip.AddrPort
	on bool
}

func (a *listenAddr) String() string {
	if !a.on {
		return ""
	}
	return a.ap.String()
}

func (a *listenAddr) Set(v string) error {
	ap, err := netip.ParseAddrPort(v)
	if err != nil || ap.Port() == 0 {
		return errors.New("want a literal IP:PORT with a port, such as 127.0.0.1:9464")
	}
	a.ap, a.on = ap, true
	return nil
}

// logFormat is --log-format: "text" or "json".
type logFormat string

func (f *logFormat) String() string { return string(*f) }

func (f *logFormat) Set(v string) error {
	if v != "text" && v != "json" {
		return errors.New("the formats are text and json")
	}
	*f = logFormat(v)
	return nil
}

// newLogger is the logger of a command without the serve flags (record):
// text records on stderr at info.
func newLogger(stderr io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(stderr, nil))
}

// newLogger is the serve command's logger (one per run: every call
// returns the first one made): to stderr (stdout is the carrier's on
// stdio, or carries only the address line), at --log-level, in
// --log-format, its start-up records held until serving says what is
// served (startlog.go). What is logged never holds a token, a key, a
// prompt, an argument, a result or a principal, whatever the level.
func (o *opsFlags) newLogger(stderr io.Writer) *slog.Logger {
	if o.logger != nil {
		return o.logger
	}
	opts := &slog.HandlerOptions{Level: o.logLevel}
	var h slog.Handler = slog.NewTextHandler(stderr, opts)
	if o.logFormat == "json" {
		h = slog.NewJSONHandler(stderr, opts)
	}
	o.start = &startLog{}
	o.logger = slog.New(heldHandler{h, o.start})
	return o.logger
}

// serving logs what the command serves, once its carrier has started:
// first the start-up records held until now, then msg, an info record with
// args.
func (o *opsFlags) serving(logger *slog.Logger, msg string, args ...any) {
	if o.start != nil {
		o.start.release()
	}
	logger.Info(msg, args...)
}

// metricsServer serves /metrics on a listener of its own.
type metricsServer struct {
	srv  *http.Server
	done chan struct{}
}

// MetricsMaxConns caps the metrics listener's open connections
// (docs/SPEC.md §13): a scraper needs one or two; past the cap idle ones
// are closed to make room and the rest wait in the kernel's backlog, so
// connections left open there cannot take the process's descriptors from
// the MCP listener.
const MetricsMaxConns = 16

// startMetrics listens on addr and serves m's handler at exactly /metrics
// (anything else 404), with header, read, write and idle timeouts and
// MetricsMaxConns connections at most (internal/netcap, as the MCP
// listeners).
func startMetrics(addr netip.AddrPort, m *metrics.Metrics, logger *slog.Logger) (*metricsServer, error) {
	raw, err := net.Listen("tcp", addr.String())
	if err != nil {
		return nil, fmt.Errorf("metrics listener: %w", err)
	}
	ln, err := netcap.NewListener(raw, netcap.Limits{Total: MetricsMaxConns})
	if err != nil {
		raw.Close()
		return nil, fmt.Errorf("metrics listener: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", m.Handler())
	s := &metricsServer{
		srv: &http.Server{
			Handler: mux, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second,
			WriteTimeout: 30 * time.Second, IdleTimeout: 60 * time.Second, MaxHeaderBytes: 16 << 10,
			ConnState: ln.ConnState, // how the cap learns which connections are idle
			ErrorLog:  slog.NewLogLogger(logger.Handler(), slog.LevelDebug),
		},
		done: make(chan struct{}),
	}
	go func() {
		defer close(s.done)
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error("metrics listener failed", "err", err)
		}
	}()
	logger.Info("serving metrics", "url", "http://"+ln.Addr().String()+"/metrics")
	return s, nil
}

// stop closes the listener and its connections.
func (s *metricsServer) stop() {
	if s == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), stopGrace)
	defer cancel()
	_ = s.srv.Shutdown(ctx)
	<-s.done
}

// auditSinks is every audit sink at once.
type auditSinks []ports.AuditSink

func (a auditSinks) Audit(r ports.AuditRecord) {
	for _, s := range a {
		s.Audit(r)
	}
}
