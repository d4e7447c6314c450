package streamable

import (
	"context"
	"net/http"
	"time"

	"github.com/agentmcp/agentmcp/engine"
)

// Health paths (docs/SPEC.md §13): liveness and readiness probes for load
// balancers and orchestrators.
const (
	HealthPath    = "/healthz"
	ReadinessPath = "/readyz"
)

// ReadyTimeout bounds a readiness check (the catalog read, a first fetch of
// the issuer's keys): a probe that takes longer answers not ready.
const ReadyTimeout = 3 * time.Second

// HealthOptions configures [WithHealth].
type HealthOptions struct {
	// Host, when set, is the only Host header a probe may carry (the
	// loopback host's 127.0.0.1:<port>, against DNS rebinding); empty
	// accepts any (an orchestrator probes by its own address for the pod).
	Host string
	// Ready reports whether the host can serve: "" when it can, else a
	// one-word reason ("catalog", "keys"). It is given a context bounded by
	// [ReadyTimeout]. Nil: always ready.
	Ready func(ctx context.Context) string
}

// CatalogReady is a Ready check: "catalog" while eng's session catalog
// fails validation (docs/SPEC.md §2), else "".
func CatalogReady(eng *engine.Engine) func(context.Context) string {
	return func(ctx context.Context) string {
		if eng.Validate(ctx) != nil {
			return "catalog"
		}
		return ""
	}
}

// WithHealth serves GET and HEAD on exactly /healthz and /readyz in front of
// next, which serves every other request unchanged: the probes add two exact
// request targets and loosen nothing else. A probe needs no token and
// answers a JSON status and a one-word reason, never a version, a path, a
// principal or a key:
//
//	/healthz  200 {"status":"ok","reason":"serving"}
//	/readyz   200 {"status":"ok","reason":"ready"}
//	          503 {"status":"unavailable","reason":"<Ready's reason>"}
//
// A probe with an Origin header (a web page) or a Host other than o.Host
// (when set) gets 403, another method 405; every refusal is empty.
func WithHealth(next http.Handler, o HealthOptions) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		live := ExactTarget(r, HealthPath)
		if !live && !ExactTarget(r, ReadinessPath) {
			next.ServeHTTP(w, r)
			return
		}
		switch {
		case len(r.Header["Origin"]) > 0, o.Host != "" && r.Host != o.Host:
			Refuse(w, r, http.StatusForbidden)
			return
		case r.Method != http.MethodGet && r.Method != http.MethodHead:
			w.Header().Set("Allow", "GET, HEAD")
			Refuse(w, r, http.StatusMethodNotAllowed)
			return
		}
		status, body := http.StatusOK, `{"status":"ok","reason":"serving"}`
		if !live {
			body = `{"status":"ok","reason":"ready"}`
			if o.Ready != nil {
				ctx, cancel := context.WithTimeout(r.Context(), ReadyTimeout)
				why := o.Ready(ctx)
				cancel()
				if why != "" {
					status, body = http.StatusServiceUnavailable, `{"status":"unavailable","reason":"`+why+`"}`
				}
			}
		}
		h := w.Header()
		h.Set("Content-Type", "application/json")
		h.Set("Cache-Control", "no-store")
		w.WriteHeader(status)
		if r.Method == http.MethodGet {
			_, _ = w.Write([]byte(body + "\n"))
		}
	})
}
