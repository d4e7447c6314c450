// Package proxy is the test reverse proxy that puts the official MCP
// conformance suite in front of agentmcp's loopback Streamable HTTP host —
// or in front of several replicas of it sharing one store, taking turns.
//
// The suite cannot send a bearer token, and it addresses the proxy, not the
// host. The proxy therefore:
//
//   - adds "Authorization: Bearer <token>" to every request (replacing any
//     the client sent);
//   - sends each request to the next of its upstreams, in turn (one
//     upstream: always that one), so with two replicas every request
//     lands on the other replica than the one before;
//   - maps its own Host (127.0.0.1:<proxy port>) to the host's of the
//     upstream it sends the request to, and its own Origin
//     (http://127.0.0.1:<proxy port>) to that upstream's origin: a
//     loopback host admits only its own;
//   - passes every other Host and Origin through unchanged, and the request
//     target, method, headers and body as they came, so the host's
//     admission rules (docs/SPEC.md §5.2: target exactly /mcp, exact Host, exact or
//     absent Origin) are still what the suite's dns-rebinding-protection
//     scenario measures;
//   - reads each request body whole before forwarding it (see
//     bodyInMemory), byte for byte;
//   - streams responses as they are written (SSE), and cancels the upstream
//     request when the client goes away, so a disconnect still reaches the
//     host as one.
//
// It adds no X-Forwarded-* headers and never logs the token.
package proxy

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync/atomic"
	"time"
)

// Options configures a proxy.
type Options struct {
	// Front is the proxy's own host:port as clients address it, e.g.
	// 127.0.0.1:41234.
	Front string
	// Backend is the host's endpoint URL (http://127.0.0.1:<port>/mcp); only
	// its scheme and host:port are used.
	Backend string
	// Backends, when set, are the endpoint URLs of replicas, taken in turn
	// (Backend is then unused).
	Backends []string
	// Token is the bearer token the host minted.
	Token string
	// Logger, when set, receives one line per proxied request (method,
	// target, Host, Origin, status, duration); never the token.
	Logger *slog.Logger
}

// New returns the proxy handler.
func New(opts Options) (http.Handler, error) {
	backends := opts.Backends
	if len(backends) == 0 {
		backends = []string{opts.Backend}
	}
	var ups []*url.URL
	for _, b := range backends {
		be, err := url.Parse(b)
		if err != nil {
			return nil, fmt.Errorf("proxy: backend URL: %w", err)
		}
		if be.Scheme != "http" || be.Host == "" {
			return nil, fmt.Errorf("proxy: backend URL %q is not an http URL with a host", b)
		}
		ups = append(ups, be)
	}
	if _, _, err := net.SplitHostPort(opts.Front); err != nil {
		return nil, fmt.Errorf("proxy: front %q is not host:port: %w", opts.Front, err)
	}
	if opts.Token == "" {
		return nil, fmt.Errorf("proxy: empty token")
	}
	frontOrigin := "http://" + opts.Front
	auth := "Bearer " + opts.Token
	var turn atomic.Uint64

	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			// Target: the next upstream's listener; path and query exactly
			// as sent.
			be := ups[(turn.Add(1)-1)%uint64(len(ups))]
			pr.Out.URL.Scheme = be.Scheme
			pr.Out.URL.Host = be.Host
			if pr.In.Host == opts.Front {
				pr.Out.Host = be.Host
			} else {
				pr.Out.Host = pr.In.Host
			}
			if o := pr.In.Header.Values("Origin"); len(o) == 1 && o[0] == frontOrigin {
				pr.Out.Header.Set("Origin", be.Scheme+"://"+be.Host)
			}
			pr.Out.Header.Set("Authorization", auth)
		},
		ModifyResponse: func(resp *http.Response) error {
			resp.Header.Set(upstreamHeader, resp.Request.URL.Host)
			return nil
		},
		// SSE: write every chunk through as soon as the host writes it.
		FlushInterval: -1,
		Transport: &http.Transport{
			Proxy:               nil,
			DialContext:         (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
			DisableCompression:  true, // pass Accept-Encoding and bodies through untouched
			MaxIdleConnsPerHost: 16,
			IdleConnTimeout:     30 * time.Second,
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if opts.Logger != nil {
				opts.Logger.Warn("proxy: upstream failed", "method", r.Method, "target", r.RequestURI, "err", err)
			}
			w.WriteHeader(http.StatusBadGateway)
		},
	}
	h := bodyInMemory(rp)
	if opts.Logger == nil {
		return h, nil
	}
	return logged(h, opts.Logger), nil
}

// upstreamHeader names, on each response, the upstream that answered it
// (host:port), for the log and the proxy's test.
const upstreamHeader = "X-Proxy-Upstream"

// maxInMemoryBody bounds the body bodyInMemory reads ahead: above the
// host's own limit (4 MiB), so a body the host refuses as too large (413)
// is still streamed to it and refused there.
const maxInMemoryBody = 8 << 20

// bodyInMemory reads a request's body before h forwards it, and hands the
// reverse proxy a copy in memory. httputil.ReverseProxy otherwise gives the
// Transport the client's body itself, and the Transport's write loop may
// still read it (past the declared bytes, to see that it ended) after the
// handler has returned and the body was closed. In the suite's runs that
// read failed ("http: invalid Read on closed Body"), the write loop closed
// its upstream connection while a response was streaming on it, and the
// client saw "terminated: other side closed": about one run of the
// 2026-07-28 leg in ten, on whichever scenario was streaming then. A
// body in memory never fails a read. The bytes, the declared length and a
// chunked request's framing are forwarded as they came; a body over
// maxInMemoryBody is streamed as before.
func bodyInMemory(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody {
			h.ServeHTTP(w, r)
			return
		}
		head, err := io.ReadAll(io.LimitReader(r.Body, maxInMemoryBody+1))
		switch {
		case err != nil:
			http.Error(w, "proxy: reading the request body: "+err.Error(), http.StatusBadRequest)
			return
		case len(head) > maxInMemoryBody:
			r.Body = struct {
				io.Reader
				io.Closer
			}{io.MultiReader(bytes.NewReader(head), r.Body), r.Body}
		default:
			r.Body = io.NopCloser(bytes.NewReader(head))
		}
		h.ServeHTTP(w, r)
	})
}

// logged wraps h with a one-line access log.
func logged(h http.Handler, logger *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		h.ServeHTTP(rec, r)
		logger.Info("proxied",
			"method", r.Method, "target", r.RequestURI, "host", r.Host, "origin", r.Header.Get("Origin"),
			"mcpMethod", r.Header.Get("Mcp-Method"), "status", rec.status, "upstream", rec.Header().Get(upstreamHeader),
			"contentType", rec.Header().Get("Content-Type"), "ms", time.Since(start).Milliseconds())
	})
}

type statusRecorder struct {
	http.ResponseWriter
	status  int
	written bool
}

func (s *statusRecorder) WriteHeader(code int) {
	if !s.written {
		s.status, s.written = code, true
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	s.written = true
	return s.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach Flush on the real writer.
func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// Flush is what httputil.ReverseProxy looks for (with FlushInterval -1 it
// flushes after every write).
func (s *statusRecorder) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}
