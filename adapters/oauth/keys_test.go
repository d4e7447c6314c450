package oauth_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/agentmcp/agentmcp/adapters/oauth"
	"github.com/agentmcp/agentmcp/ports"
)

func TestKeysAreFetchedLazily(t *testing.T) {
	ks := testKeys()
	f := newFakeIssuer(t, "", jwk(t, ks.rsa, nil))
	clk := newFakeClock()
	v := newVerifier(t, f.config(clk))
	if n := f.total(); n != 0 {
		t.Fatalf("NewVerifier made %d requests; want none", n)
	}
	for i := range 3 {
		if got := v.Verify(t.Context(), mint(t, ks.rsa, f.Issuer, clk.Now())); !got.Admitted() {
			t.Fatalf("Verify #%d = %+v; want admitted", i, got)
		}
	}
	if m, k := f.count(rfc8414Path), f.jwksFetches(); m != 1 || k != 1 {
		t.Errorf("metadata fetched %d times, keys %d times; want 1 and 1", m, k)
	}
}

// discoveryRow is one way of publishing (or failing to publish) metadata
// and keys.
type discoveryRow struct {
	name  string
	path  string // the issuer's path
	setup func(t testing.TB, f *fakeIssuer)
	want  ports.RefusalReason // for an RS256 token under rsa-1
	// hits: requests each path must have received after one verification.
	hits map[string]int
}

func TestDiscovery(t *testing.T) {
	ks := testKeys()
	otherMeta := func(f *fakeIssuer, jwksPath string) http.HandlerFunc {
		return func(w http.ResponseWriter, _ *http.Request) {
			json.NewEncoder(w).Encode(map[string]string{"issuer": f.Issuer, "jwks_uri": f.srv.URL + jwksPath})
		}
	}
	redirectTo := func(target string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, target, http.StatusFound) }
	}
	padded := func(t testing.TB, size int, keys ...any) []byte {
		doc := map[string]any{"keys": keys, "pad": ""}
		base, err := json.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		doc["pad"] = strings.Repeat("x", size-len(base))
		b, err := json.Marshal(doc)
		if err != nil || len(b) != size {
			t.Fatalf("padded key set is %d bytes (%v); want %d", len(b), err, size)
		}
		return b
	}
	manyKeys := func(t testing.TB, n int) []any {
		keys := []any{jwk(t, ks.rsa, nil)}
		for i := 1; i < n; i++ {
			keys = append(keys, jwk(t, ks.ec.withKid(fmt.Sprintf("filler-%d", i)), nil))
		}
		return keys
	}

	rows := []discoveryRow{
		{name: "RFC 8414 metadata", hits: map[string]int{rfc8414Path: 1, openidPath: 0, "/jwks": 1}},
		{
			name:  "OpenID discovery when RFC 8414 metadata is absent",
			setup: func(_ testing.TB, f *fakeIssuer) { f.set(func(f *fakeIssuer) { f.rfc8414 = false }) },
			hits:  map[string]int{rfc8414Path: 1, openidPath: 1, "/jwks": 1},
		},
		{
			name: "issuer with a path: well-known segment inserted before it",
			path: "/tenants/a",
			hits: map[string]int{rfc8414Path + "/tenants/a": 1, "/tenants/a" + openidPath: 0, "/jwks": 1},
		},
		{
			name:  "issuer with a path: OpenID document appended to it",
			path:  "/tenants/a",
			setup: func(_ testing.TB, f *fakeIssuer) { f.set(func(f *fakeIssuer) { f.rfc8414 = false }) },
			hits:  map[string]int{rfc8414Path + "/tenants/a": 1, "/tenants/a" + openidPath: 1, "/jwks": 1},
		},
		{
			name: "issuer with a trailing slash",
			path: "/",
			hits: map[string]int{rfc8414Path: 1, "/jwks": 1},
		},
		{
			name: "RFC 8414 metadata naming another issuer falls back to OpenID",
			setup: func(_ testing.TB, f *fakeIssuer) {
				f.handle(rfc8414Path, func(w http.ResponseWriter, _ *http.Request) {
					json.NewEncoder(w).Encode(map[string]string{"issuer": "https://other.example", "jwks_uri": f.srv.URL + "/evil-jwks"})
				})
			},
			hits: map[string]int{rfc8414Path: 1, openidPath: 1, "/jwks": 1, "/evil-jwks": 0},
		},
		{
			name: "metadata naming another issuer is refused",
			setup: func(_ testing.TB, f *fakeIssuer) {
				f.set(func(f *fakeIssuer) { f.metaIssuer = "https://other.example" })
			},
			want: ports.RefusalKeysUnavailable,
			hits: map[string]int{rfc8414Path: 1, openidPath: 1, "/jwks": 0},
		},
		{
			name: "metadata naming the issuer with a trailing slash is refused",
			setup: func(_ testing.TB, f *fakeIssuer) {
				f.set(func(f *fakeIssuer) { f.metaIssuer = f.Issuer + "/" })
			},
			want: ports.RefusalKeysUnavailable,
			hits: map[string]int{"/jwks": 0},
		},
		{
			name: "metadata reached through a redirect is refused",
			setup: func(_ testing.TB, f *fakeIssuer) {
				f.handle("/real-metadata", otherMeta(f, "/jwks"))
				f.handle(rfc8414Path, redirectTo("/real-metadata"))
				f.handle(openidPath, redirectTo("/real-metadata"))
			},
			want: ports.RefusalKeysUnavailable,
			hits: map[string]int{rfc8414Path: 1, openidPath: 1, "/real-metadata": 0, "/jwks": 0},
		},
		{
			name: "key set reached through a redirect is refused",
			setup: func(_ testing.TB, f *fakeIssuer) {
				f.handle("/moved", redirectTo("/jwks"))
				f.set(func(f *fakeIssuer) { f.jwksURI = f.srv.URL + "/moved" })
			},
			want: ports.RefusalKeysUnavailable,
			hits: map[string]int{"/moved": 1, "/jwks": 0},
		},
		{
			name: "an http jwks_uri is never fetched",
			setup: func(t testing.TB, f *fakeIssuer) {
				plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					f.set(func(f *fakeIssuer) { f.hits["plain-http"]++ })
					w.Write(keySet(t, jwk(t, ks.rsa, nil)))
				}))
				t.Cleanup(plain.Close)
				f.set(func(f *fakeIssuer) { f.jwksURI = plain.URL + "/jwks" })
			},
			want: ports.RefusalKeysUnavailable,
			hits: map[string]int{rfc8414Path: 1, openidPath: 1, "plain-http": 0},
		},
		{
			// The server's certificate names localhost too, so only the
			// address rule stands between the verifier and these keys.
			name: "a key set on another host resolving to loopback is refused",
			setup: func(_ testing.TB, f *fakeIssuer) {
				f.set(func(f *fakeIssuer) { f.jwksURI = "https://localhost:" + f.port() + "/jwks" })
			},
			want: ports.RefusalKeysUnavailable,
			hits: map[string]int{rfc8414Path: 1, "/jwks": 0},
		},
		{
			name:  "the issuer's own host may resolve to loopback",
			setup: func(_ testing.TB, f *fakeIssuer) { f.useHost("localhost") },
			hits:  map[string]int{rfc8414Path: 1, "/jwks": 1},
		},
		{
			name: "an issuer at localhost: a key set at 127.0.0.1 is another host",
			setup: func(_ testing.TB, f *fakeIssuer) {
				f.useHost("localhost")
				f.set(func(f *fakeIssuer) { f.jwksURI = f.srv.URL + "/jwks" })
			},
			want: ports.RefusalKeysUnavailable,
			hits: map[string]int{rfc8414Path: 1, "/jwks": 0},
		},
		{
			name: "metadata answered with status 203 is refused",
			setup: func(_ testing.TB, f *fakeIssuer) {
				meta := otherMeta(f, "/jwks")
				status203 := func(w http.ResponseWriter, r *http.Request) {
					w.WriteHeader(http.StatusNonAuthoritativeInfo)
					meta(w, r)
				}
				f.handle(rfc8414Path, status203)
				f.handle(openidPath, status203)
			},
			want: ports.RefusalKeysUnavailable,
			hits: map[string]int{"/jwks": 0},
		},
		{
			name: "metadata that is not an object is refused",
			setup: func(_ testing.TB, f *fakeIssuer) {
				notObject := func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte(`["issuer"]`)) }
				f.handle(rfc8414Path, notObject)
				f.handle(openidPath, notObject)
			},
			want: ports.RefusalKeysUnavailable,
			hits: map[string]int{"/jwks": 0},
		},
		{
			name: "metadata over 64 KiB is refused",
			setup: func(_ testing.TB, f *fakeIssuer) {
				big := func(w http.ResponseWriter, _ *http.Request) {
					json.NewEncoder(w).Encode(map[string]string{
						"issuer": f.Issuer, "jwks_uri": f.srv.URL + "/jwks", "pad": strings.Repeat("x", 64<<10),
					})
				}
				f.handle(rfc8414Path, big)
				f.handle(openidPath, big)
			},
			want: ports.RefusalKeysUnavailable,
			hits: map[string]int{"/jwks": 0},
		},
		{
			name: "key set answered with status 201 is refused",
			setup: func(t testing.TB, f *fakeIssuer) {
				f.handle("/jwks", func(w http.ResponseWriter, _ *http.Request) {
					w.WriteHeader(http.StatusCreated)
					w.Write(keySet(t, jwk(t, ks.rsa, nil)))
				})
			},
			want: ports.RefusalKeysUnavailable,
			hits: map[string]int{"/jwks": 1},
		},
		{
			name: "key set of exactly 64 KiB is admitted",
			setup: func(t testing.TB, f *fakeIssuer) {
				b := padded(t, 64<<10, jwk(t, ks.rsa, nil))
				f.set(func(f *fakeIssuer) { f.jwks = b })
			},
			hits: map[string]int{"/jwks": 1},
		},
		{
			name: "key set over 64 KiB is refused",
			setup: func(t testing.TB, f *fakeIssuer) {
				b := padded(t, 64<<10+1, jwk(t, ks.rsa, nil))
				f.set(func(f *fakeIssuer) { f.jwks = b })
			},
			want: ports.RefusalKeysUnavailable,
			hits: map[string]int{"/jwks": 1},
		},
		{
			name:  "key set of 32 keys is admitted",
			setup: func(t testing.TB, f *fakeIssuer) { f.setKeys(t, manyKeys(t, 32)...) },
			hits:  map[string]int{"/jwks": 1},
		},
		{
			name:  "key set of 33 keys is refused",
			setup: func(t testing.TB, f *fakeIssuer) { f.setKeys(t, manyKeys(t, 33)...) },
			want:  ports.RefusalKeysUnavailable,
			hits:  map[string]int{"/jwks": 1},
		},
		{
			name: "key set without a keys array is refused",
			setup: func(t testing.TB, f *fakeIssuer) {
				f.set(func(f *fakeIssuer) { f.jwks = []byte(`{"kid":"rsa-1"}`) })
			},
			want: ports.RefusalKeysUnavailable,
		},
		{
			name:  "empty key set",
			setup: func(t testing.TB, f *fakeIssuer) { f.setKeys(t) },
			want:  ports.RefusalUnknownKey,
			hits:  map[string]int{"/jwks": 1},
		},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			t.Parallel()
			f := newFakeIssuer(t, row.path, jwk(t, ks.rsa, nil))
			if row.setup != nil {
				row.setup(t, f)
			}
			clk := newFakeClock()
			v := newVerifier(t, f.config(clk))
			got := v.Verify(t.Context(), mint(t, ks.rsa, f.Issuer, clk.Now()))
			if got.Refusal != row.want {
				t.Errorf("Verify = %+v; want refusal %q", got, row.want)
			}
			for path, want := range row.hits {
				if n := f.count(path); n != want {
					t.Errorf("%s received %d requests; want %d", path, n, want)
				}
			}
		})
	}
}

// step is one verification in a scenario on a fake clock.
type step struct {
	name    string
	advance time.Duration     // moves the clock before this step
	before  func(*fakeIssuer) // changes the issuer before this step
	signer  signer
	want    ports.RefusalReason
	// fetches and attempts are cumulative counts after this step: key-set
	// fetches, and refresh attempts (each starts with the RFC 8414
	// metadata request).
	fetches, attempts int
}

func runSteps(t *testing.T, f *fakeIssuer, v *oauth.Verifier, clk *fakeClock, steps []step) {
	t.Helper()
	var elapsed time.Duration
	for _, s := range steps {
		clk.Advance(s.advance)
		elapsed += s.advance
		if s.before != nil {
			s.before(f)
		}
		got := v.Verify(t.Context(), mint(t, s.signer, f.Issuer, clk.Now()))
		if got.Refusal != s.want {
			t.Errorf("+%v %s: Verify = %+v; want refusal %q", elapsed, s.name, got, s.want)
		}
		if n := f.jwksFetches(); n != s.fetches {
			t.Errorf("+%v %s: %d key-set fetches; want %d", elapsed, s.name, n, s.fetches)
		}
		if s.attempts != 0 {
			if n := f.count(rfc8414Path); n != s.attempts {
				t.Errorf("+%v %s: %d refresh attempts; want %d", elapsed, s.name, n, s.attempts)
			}
		}
	}
}

func TestUnknownKidRefetchesAtMostOncePer30s(t *testing.T) {
	ks := testKeys()
	f := newFakeIssuer(t, "", jwk(t, ks.rsa, nil))
	clk := newFakeClock()
	v := newVerifier(t, f.config(clk))
	publishEC := func(f *fakeIssuer) { f.setKeys(t, jwk(t, ks.rsa, nil), jwk(t, ks.ec, nil)) }
	runSteps(t, f, v, clk, []step{
		{name: "known kid", signer: ks.rsa, fetches: 1},
		{name: "unknown kid inside the interval costs no fetch", signer: ks.ec, want: ports.RefusalUnknownKey, fetches: 1},
		{name: "again", signer: ks.ec, want: ports.RefusalUnknownKey, fetches: 1},
		{name: "29 s later", advance: 29 * time.Second, signer: ks.ec, want: ports.RefusalUnknownKey, fetches: 1},
		{name: "30 s later refetches once", advance: time.Second, signer: ks.ec, want: ports.RefusalUnknownKey, fetches: 2},
		{name: "then no more", signer: ks.ec, want: ports.RefusalUnknownKey, fetches: 2},
		{name: "nor for another unknown kid", signer: ks.ed, want: ports.RefusalUnknownKey, fetches: 2},
		{name: "the kid is published, interval not over", before: publishEC, advance: 10 * time.Second, signer: ks.ec, want: ports.RefusalUnknownKey, fetches: 2},
		{name: "interval over: refetch finds it", advance: 20 * time.Second, signer: ks.ec, fetches: 3},
		{name: "known kids fetch nothing", signer: ks.rsa, fetches: 3},
	})
}

func TestWithdrawnKeyStopsVerifyingAfter10Minutes(t *testing.T) {
	ks := testKeys()
	k1, k2 := ks.rsa, ks.ec
	f := newFakeIssuer(t, "", jwk(t, k1, nil))
	clk := newFakeClock()
	v := newVerifier(t, f.config(clk))
	withdrawK1 := func(f *fakeIssuer) { f.setKeys(t, jwk(t, k2, nil)) }
	runSteps(t, f, v, clk, []step{
		{name: "k1 fetched", signer: k1, fetches: 1},
		{name: "k1 withdrawn, still cached at +9 min", before: withdrawK1, advance: 9 * time.Minute, signer: k1, fetches: 1},
		{name: "k1 still cached at +9 min 59 s", advance: 59 * time.Second, signer: k1, fetches: 1},
		{name: "k1 refused at +10 min", advance: time.Second, signer: k1, want: ports.RefusalUnknownKey, fetches: 2},
		{name: "k2 admitted", signer: k2, fetches: 2},
	})
}

func TestOutageServesCachedKeysUntil60Minutes(t *testing.T) {
	ks := testKeys()
	f := newFakeIssuer(t, "", jwk(t, ks.rsa, nil))
	clk := newFakeClock()
	v := newVerifier(t, f.config(clk))
	down := func(f *fakeIssuer) { f.set(func(f *fakeIssuer) { f.down = true }) }
	up := func(f *fakeIssuer) { f.set(func(f *fakeIssuer) { f.down = false }) }
	runSteps(t, f, v, clk, []step{
		{name: "fetched", signer: ks.rsa, fetches: 1, attempts: 1},
		{name: "outage, cached keys not yet due", before: down, advance: 5 * time.Minute, signer: ks.rsa, fetches: 1, attempts: 1},
		{name: "due at +10 min, refresh fails, cached keys serve", advance: 5 * time.Minute, signer: ks.rsa, fetches: 1, attempts: 2},
		{name: "within 30 s of the failure: no attempt", advance: 29 * time.Second, signer: ks.rsa, fetches: 1, attempts: 2},
		{name: "+30 min", advance: 20*time.Minute - 29*time.Second, signer: ks.rsa, fetches: 1, attempts: 3},
		{name: "+59 min", advance: 29 * time.Minute, signer: ks.rsa, fetches: 1, attempts: 4},
		{name: "+59 min 59 s", advance: 59 * time.Second, signer: ks.rsa, fetches: 1, attempts: 5},
		{name: "+60 min: keys too old", advance: time.Second, signer: ks.rsa, want: ports.RefusalKeysUnavailable, fetches: 1, attempts: 5},
		{name: "+60 min 1 s", advance: time.Second, signer: ks.rsa, want: ports.RefusalKeysUnavailable, fetches: 1, attempts: 5},
		{name: "+60 min 29 s", advance: 28 * time.Second, signer: ks.rsa, want: ports.RefusalKeysUnavailable, fetches: 1, attempts: 6},
		{name: "issuer back, within 30 s of the last attempt", before: up, advance: 29 * time.Second, signer: ks.rsa, want: ports.RefusalKeysUnavailable, fetches: 1, attempts: 6},
		{name: "recovered", advance: time.Second, signer: ks.rsa, fetches: 2, attempts: 7},
	})
}

func TestCacheAgeIsMonotonic(t *testing.T) {
	ks := testKeys()
	f := newFakeIssuer(t, "", jwk(t, ks.rsa, nil))
	clk := newFakeClock()
	v := newVerifier(t, f.config(clk))
	verify := func(want int) {
		t.Helper()
		if got := v.Verify(t.Context(), mint(t, ks.rsa, f.Issuer, clk.Now())); !got.Admitted() {
			t.Fatalf("Verify = %+v; want admitted", got)
		}
		if n := f.jwksFetches(); n != want {
			t.Errorf("%d key-set fetches; want %d", n, want)
		}
	}
	verify(1)
	clk.AdvanceWall(2 * time.Hour) // a wall-clock step ages no key
	verify(1)
	clk.AdvanceMonotonic(10 * time.Minute)
	verify(2)
}

func TestKeysReaching60MinutesDuringAFailedRefreshAreNotUsed(t *testing.T) {
	ks := testKeys()
	f := newFakeIssuer(t, "", jwk(t, ks.rsa, nil))
	clk := newFakeClock()
	v := newVerifier(t, f.config(clk))
	token := mint(t, ks.rsa, f.Issuer, clk.Now())
	if got := v.Verify(t.Context(), token); !got.Admitted() {
		t.Fatalf("Verify = %+v; want admitted", got)
	}

	// At +59 min 59 s the keys are due; the refresh blocks in the issuer
	// while the clock passes 60 minutes, then fails.
	gate, entered := make(chan struct{}), make(chan struct{}, 1)
	f.set(func(f *fakeIssuer) { f.gate, f.entered = gate, entered })
	clk.Advance(59*time.Minute + 59*time.Second)
	result := make(chan ports.Verdict, 1)
	go func() { result <- v.Verify(t.Context(), token) }()
	<-entered
	clk.Advance(time.Second)
	f.set(func(f *fakeIssuer) { f.jwks = []byte("not a key set") })
	close(gate)
	if got := <-result; got.Refusal != ports.RefusalKeysUnavailable {
		t.Errorf("Verify = %+v; want keys-unavailable", got)
	}
}

func TestConcurrentVerificationsShareOneFetch(t *testing.T) {
	const n = 16
	ks := testKeys()
	f := newFakeIssuer(t, "", jwk(t, ks.rsa, nil), jwk(t, ks.ec, nil))
	gate, entered := make(chan struct{}), make(chan struct{}, n)
	f.set(func(f *fakeIssuer) { f.gate, f.entered = gate, entered })
	clk := newFakeClock()
	v := newVerifier(t, f.config(clk))
	waiting := make(chan struct{}, n)
	oauth.SetWaitHook(v, func() { waiting <- struct{}{} })

	results := make(chan ports.Verdict, n)
	for i := range n {
		s := ks.rsa
		if i%2 == 1 {
			s = ks.ec
		}
		token := mint(t, s, f.Issuer, clk.Now())
		go func() { results <- v.Verify(t.Context(), token) }()
	}
	for waited := 0; waited < n; {
		select {
		case <-waiting:
			waited++
		case got := <-results:
			t.Fatalf("Verify returned %+v without waiting for the shared fetch", got)
		}
	}
	<-entered
	close(gate)
	for range n {
		if got := <-results; !got.Admitted() {
			t.Errorf("Verify = %+v; want admitted", got)
		}
	}
	if m, k := f.count(rfc8414Path), f.jwksFetches(); m != 1 || k != 1 {
		t.Errorf("metadata fetched %d times, keys %d times; want 1 and 1", m, k)
	}
}

func TestCallerGivingUpDoesNotFailOthers(t *testing.T) {
	ks := testKeys()
	f := newFakeIssuer(t, "", jwk(t, ks.rsa, nil))
	gate, entered := make(chan struct{}), make(chan struct{}, 4)
	f.set(func(f *fakeIssuer) { f.gate, f.entered = gate, entered })
	clk := newFakeClock()
	v := newVerifier(t, f.config(clk))
	waiting := make(chan struct{}, 4)
	oauth.SetWaitHook(v, func() { waiting <- struct{}{} })
	token := mint(t, ks.rsa, f.Issuer, clk.Now())

	// The first caller starts the fetch, the second joins it.
	leaving, leave := context.WithCancel(t.Context())
	first, second := make(chan ports.Verdict, 1), make(chan ports.Verdict, 1)
	go func() { first <- v.Verify(leaving, token) }()
	select {
	case <-waiting:
	case got := <-first:
		t.Fatalf("first caller: Verify returned %+v without waiting for the fetch", got)
	}
	go func() { second <- v.Verify(t.Context(), token) }()
	select {
	case <-waiting:
	case got := <-second:
		t.Fatalf("second caller: Verify returned %+v without joining the fetch", got)
	}
	<-entered

	leave()
	if got := <-first; got.Refusal != ports.RefusalKeysUnavailable {
		t.Errorf("caller that gave up: Verify = %+v; want keys-unavailable", got)
	}
	close(gate)
	if got := <-second; !got.Admitted() {
		t.Errorf("caller that stayed: Verify = %+v; want admitted", got)
	}
	if got := v.Verify(t.Context(), token); !got.Admitted() {
		t.Errorf("after the fetch: Verify = %+v; want admitted", got)
	}
	if n := f.jwksFetches(); n != 1 {
		t.Errorf("%d key-set fetches; want 1", n)
	}
}

func TestUnsupportedKeyKeepsOthersUsable(t *testing.T) {
	ks := testKeys()
	good := jwk(t, ks.rsa, nil)
	entries := []any{
		map[string]any{"kty": "EC", "crv": "P-999", "kid": "bad-curve", "x": "AAAA", "y": "AAAA"},
		map[string]any{"kty": "RSA", "kid": "bad-n", "n": "!!!", "e": "AQAB"},
		map[string]any{"kty": "OKP", "crv": "X25519", "kid": "x25519", "x": "AAAA"},
		map[string]any{"kty": "quantum", "kid": "weird"},
		map[string]any{"kid": "no-kty"},
		map[string]any{"kty": 5, "kid": "numeric-kty"},
		jwk(t, ks.ec, map[string]any{"kid": 7}),
		"not an object",
		42,
		good,
	}
	body := keySet(t, entries...)
	// The premise: go-jose's key-set type refuses this set as a whole.
	var whole jose.JSONWebKeySet
	if err := json.Unmarshal(body, &whole); err == nil {
		t.Fatalf("jose.JSONWebKeySet accepted the set; the test no longer shows per-key decoding")
	}

	f := newFakeIssuer(t, "")
	f.set(func(f *fakeIssuer) { f.jwks = body })
	clk := newFakeClock()
	v := newVerifier(t, f.config(clk))
	tests := []struct {
		name string
		s    signer
		want ports.RefusalReason
	}{
		{"the supported key", ks.rsa, ""},
		{"no kid: the one supported key is the only one known", ks.rsa.withKid(""), ""},
		{"a skipped key's kid is unknown", ks.rsa.withKid("weird"), ports.RefusalUnknownKey},
		{"a skipped curve's kid is unknown", ks.ec.withKid("bad-curve"), ports.RefusalUnknownKey},
	}
	for _, tt := range tests {
		got := v.Verify(t.Context(), mint(t, tt.s, f.Issuer, clk.Now()))
		if got.Refusal != tt.want {
			t.Errorf("%s: Verify = %+v; want refusal %q", tt.name, got, tt.want)
		}
	}
}

func TestKeysSharingKidAcrossAlgorithms(t *testing.T) {
	ks := testKeys()
	tests := []struct {
		name   string
		keys   []any
		signer signer
		want   ports.RefusalReason
	}{
		{
			name:   "RS256 picks the RSA key",
			keys:   []any{jwk(t, ks.ec.withKid("shared"), nil), jwk(t, ks.ed.withKid("shared"), nil), jwk(t, ks.rsa.withKid("shared"), nil)},
			signer: ks.rsa.withKid("shared"),
		},
		{
			name:   "ES256 picks the EC key",
			keys:   []any{jwk(t, ks.rsa.withKid("shared"), nil), jwk(t, ks.ed.withKid("shared"), nil), jwk(t, ks.ec.withKid("shared"), nil)},
			signer: ks.ec.withKid("shared"),
		},
		{
			name:   "EdDSA picks the Ed25519 key",
			keys:   []any{jwk(t, ks.rsa.withKid("shared"), nil), jwk(t, ks.ec.withKid("shared"), nil), jwk(t, ks.ed.withKid("shared"), nil)},
			signer: ks.ed.withKid("shared"),
		},
		{
			name:   "an RSA key bound to another alg is passed over",
			keys:   []any{jwk(t, ks.rsa.withKid("shared"), map[string]any{"alg": "PS256"}), jwk(t, ks.rsa.withKid("shared"), map[string]any{"alg": "RS256"})},
			signer: ks.rsa.withKid("shared"),
		},
		{
			name:   "no key with the kid fits",
			keys:   []any{jwk(t, ks.rsa.withKid("shared"), nil), jwk(t, ks.ec.withKid("shared"), nil)},
			signer: ks.ed.withKid("shared"),
			want:   ports.RefusalKeyMismatch,
		},
		{
			name:   "the fitting key with the kid decides the signature",
			keys:   []any{jwk(t, ks.ec.withKid("shared"), nil), jwk(t, ks.rsa.withKid("shared"), nil)},
			signer: ks.rsaOther.withKid("shared"),
			want:   ports.RefusalBadSignature,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFakeIssuer(t, "", tt.keys...)
			clk := newFakeClock()
			v := newVerifier(t, f.config(clk))
			got := v.Verify(t.Context(), mint(t, tt.signer, f.Issuer, clk.Now()))
			if got.Refusal != tt.want {
				t.Errorf("Verify = %+v; want refusal %q", got, tt.want)
			}
		})
	}
}

func TestIsPublicAddr(t *testing.T) {
	tests := []struct {
		addr string
		want bool
	}{
		{"8.8.8.8", true},
		{"1.1.1.1", true},
		{"2606:4700:4700::1111", true},
		{"127.0.0.1", false},
		{"127.1.2.3", false},
		{"::1", false},
		{"10.0.0.1", false},
		{"172.16.0.1", false},
		{"172.31.255.255", false},
		{"192.168.1.1", false},
		{"169.254.169.254", false}, // cloud metadata
		{"100.64.0.1", false},
		{"0.0.0.0", false},
		{"::", false},
		{"224.0.0.1", false},
		{"255.255.255.255", false},
		{"fc00::1", false},
		{"fd12:3456::1", false},
		{"fe80::1", false},
		{"::ffff:127.0.0.1", false},
		{"::ffff:10.0.0.1", false},
		{"::ffff:8.8.8.8", true},
		{"64:ff9b::a00:1", false}, // NAT64 of 10.0.0.1
		{"2002:a00:1::1", false},  // 6to4 of 10.0.0.1
	}
	for _, tt := range tests {
		if got := oauth.IsPublicAddr(netip.MustParseAddr(tt.addr)); got != tt.want {
			t.Errorf("IsPublicAddr(%s) = %v; want %v", tt.addr, got, tt.want)
		}
	}
}

func TestHTTPClientTransport(t *testing.T) {
	ks := testKeys()
	tests := []struct {
		name string
		// transport derives the configured transport from the issuer's.
		transport func(t *testing.T, base *http.Transport) (http.RoundTripper, func() int)
		want      ports.RefusalReason
		wantUses  int // requests seen by the counter transport returns
	}{
		{
			// A proxy would be the only address the dialer sees, so the
			// verifier connects directly.
			name: "a configured proxy is bypassed",
			transport: func(t *testing.T, base *http.Transport) (http.RoundTripper, func() int) {
				var mu sync.Mutex
				n := 0
				proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
					mu.Lock()
					n++
					mu.Unlock()
					http.Error(w, "no", http.StatusForbidden)
				}))
				t.Cleanup(proxy.Close)
				u, err := url.Parse(proxy.URL)
				if err != nil {
					t.Fatal(err)
				}
				tr := base.Clone()
				tr.Proxy = http.ProxyURL(u)
				return tr, func() int { mu.Lock(); defer mu.Unlock(); return n }
			},
			wantUses: 0,
		},
		{
			name: "any other RoundTripper is used as is",
			transport: func(t *testing.T, base *http.Transport) (http.RoundTripper, func() int) {
				c := &countingTransport{next: base}
				return c, c.count
			},
			wantUses: 2, // metadata and key set
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeIssuer(t, "", jwk(t, ks.rsa, nil))
			clk := newFakeClock()
			cfg := f.config(clk)
			rt, uses := tt.transport(t, f.srv.Client().Transport.(*http.Transport))
			cfg.HTTPClient = &http.Client{Transport: rt}
			v := newVerifier(t, cfg)
			if got := v.Verify(t.Context(), mint(t, ks.rsa, f.Issuer, clk.Now())); got.Refusal != tt.want {
				t.Errorf("Verify = %+v; want refusal %q", got, tt.want)
			}
			if n := uses(); n != tt.wantUses {
				t.Errorf("transport saw %d requests; want %d", n, tt.wantUses)
			}
		})
	}
}

type countingTransport struct {
	next http.RoundTripper
	mu   sync.Mutex
	n    int
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.mu.Lock()
	c.n++
	c.mu.Unlock()
	return c.next.RoundTrip(r)
}

func (c *countingTransport) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

func TestNextKeyRefresh(t *testing.T) {
	ks := testKeys()
	f := newFakeIssuer(t, "", jwk(t, ks.rsa, nil))
	clk := newFakeClock()
	v := newVerifier(t, f.config(clk))
	if got := v.NextKeyRefresh(); !got.IsZero() {
		t.Fatalf("NextKeyRefresh before any fetch = %v, want zero", got)
	}
	if got := v.Verify(t.Context(), mint(t, ks.rsa, f.Issuer, clk.Now())); !got.Admitted() {
		t.Fatalf("Verify = %+v", got)
	}
	clk.AdvanceMonotonic(4 * time.Minute)
	got := time.Until(v.NextKeyRefresh())
	if got <= 5*time.Minute+50*time.Second || got > 6*time.Minute {
		t.Errorf("NextKeyRefresh 4 min after the fetch is %v away, want 6 min", got)
	}
}

func TestKeysReady(t *testing.T) {
	ks := testKeys()
	f := newFakeIssuer(t, "", jwk(t, ks.rsa, nil))
	f.set(func(f *fakeIssuer) { f.down = true })
	clk := newFakeClock()
	v := newVerifier(t, f.config(clk))
	if v.KeysReady(t.Context()) {
		t.Fatal("KeysReady with the issuer down at start = true")
	}
	f.set(func(f *fakeIssuer) { f.down = false })
	clk.AdvanceMonotonic(29 * time.Second)
	if v.KeysReady(t.Context()) {
		t.Fatal("KeysReady within 30 s of the failed fetch = true (no new attempt is due)")
	}
	clk.AdvanceMonotonic(time.Second)
	if !v.KeysReady(t.Context()) {
		t.Fatal("KeysReady once the issuer is back and a fetch is due = false")
	}
	if got := f.jwksFetches(); got != 1 {
		t.Errorf("key set fetched %d times, want 1", got)
	}
	if !v.KeysReady(t.Context()) || f.jwksFetches() != 1 {
		t.Errorf("a second probe refetched: %d fetches", f.jwksFetches())
	}
}
