package oauth

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"
)

// Limits on every request the verifier makes (docs/SPEC.md §7).
const (
	fetchTimeout  = 10 * time.Second
	maxFetchBytes = 64 << 10 // 64 KiB
)

// Fetch failures. They never leave the package: a failed refresh only keeps
// the old keys or ends in keys-unavailable.
var (
	errNotHTTPS       = errors.New("oauth: fetch refused: not an https URL")
	errStatus         = errors.New("oauth: fetch failed: status is not 200")
	errTooLarge       = errors.New("oauth: fetch failed: response over 64 KiB")
	errPrivateAddress = errors.New("oauth: dial refused: private or special-purpose address")
)

// newFetchClient returns the client every metadata and key-set fetch goes
// through. It derives from base (nil means http.DefaultTransport's settings):
// redirects are never followed, each request is bounded by [fetchTimeout],
// and — when the transport is an *http.Transport, which is cloned — the clone
// connects directly (no proxy) through a dialer that refuses private and
// special-purpose addresses for every host but issuerHost. Any other
// RoundTripper is used as is and is then responsible for that rule.
func newFetchClient(base *http.Client, issuerHost string) *http.Client {
	var rt http.RoundTripper
	switch {
	case base == nil || base.Transport == nil:
		rt = guardTransport(http.DefaultTransport.(*http.Transport).Clone(), issuerHost)
	default:
		if t, ok := base.Transport.(*http.Transport); ok {
			rt = guardTransport(t.Clone(), issuerHost)
		} else {
			rt = base.Transport
		}
	}
	return &http.Client{
		Transport: rt,
		// A redirect is answered with the 3xx response itself, which then
		// fails the status check: metadata and keys reached through a
		// redirect are never used.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		Timeout:       fetchTimeout,
	}
}

// guardTransport makes t connect directly through [guardedDial].
func guardTransport(t *http.Transport, issuerHost string) *http.Transport {
	// A proxy would be the only address the dialer sees, so the address
	// rule could not hold through one.
	t.Proxy = nil
	t.OnProxyConnectResponse = nil
	//lint:ignore SA1019 clearing the deprecated hooks is the point: one set would still dial around the guard
	t.Dial = nil
	//lint:ignore SA1019 as above
	t.DialTLS = nil
	t.DialTLSContext = nil
	t.DialContext = guardedDial(issuerHost)
	return t
}

// guardedDial returns a DialContext that lets issuerHost resolve to any
// address and every other host only to public unicast addresses. The check
// runs in the dialer's Control hook, on the address actually being connected
// to, so a name that resolves differently between a check and the connection
// cannot slip through.
func guardedDial(issuerHost string) func(ctx context.Context, network, addr string) (net.Conn, error) {
	control := func(_, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil || !isPublicAddr(ap.Addr()) {
			return errPrivateAddress
		}
		return nil
	}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		d := &net.Dialer{Timeout: fetchTimeout, KeepAlive: 30 * time.Second}
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		if !strings.EqualFold(host, issuerHost) {
			d.Control = control
		}
		return d.DialContext(ctx, network, addr)
	}
}

// Special-purpose ranges beyond what netip's predicates cover.
var nonPublicPrefixes = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),       // "this network"
	netip.MustParsePrefix("100.64.0.0/10"),   // shared address space (CGNAT)
	netip.MustParsePrefix("192.0.0.0/24"),    // IETF protocol assignments
	netip.MustParsePrefix("198.18.0.0/15"),   // benchmarking
	netip.MustParsePrefix("240.0.0.0/4"),     // reserved, broadcast
	netip.MustParsePrefix("64:ff9b::/96"),    // NAT64: may embed a private IPv4
	netip.MustParsePrefix("64:ff9b:1::/48"),  // local-use NAT64
	netip.MustParsePrefix("2002::/16"),       // 6to4: may embed a private IPv4
	netip.MustParsePrefix("2001::/32"),       // Teredo
	netip.MustParsePrefix("2001:db8::/32"),   // documentation
	netip.MustParsePrefix("100::/64"),        // discard-only
	netip.MustParsePrefix("fec0::/10"),       // deprecated site-local
	netip.MustParsePrefix("192.0.2.0/24"),    // documentation
	netip.MustParsePrefix("198.51.100.0/24"), // documentation
	netip.MustParsePrefix("203.0.113.0/24"),  // documentation
}

// isPublicAddr reports whether a is a public unicast address: not loopback,
// private (RFC 1918, RFC 4193), link-local, shared (RFC 6598), unspecified,
// multicast or another special-purpose range. IPv4-mapped IPv6 addresses are
// judged as the IPv4 address they carry.
func isPublicAddr(a netip.Addr) bool {
	a = a.Unmap()
	if !a.IsValid() || !a.IsGlobalUnicast() || a.IsPrivate() || a.IsLoopback() ||
		a.IsLinkLocalUnicast() || a.IsUnspecified() || a.IsMulticast() {
		return false
	}
	for _, p := range nonPublicPrefixes {
		if p.Contains(a) {
			return false
		}
	}
	return true
}

// fetch GETs rawURL and returns its body: https only, no redirects, status
// 200 only, at most [maxFetchBytes], within [fetchTimeout]. The error names
// the failure, never a response body.
func fetch(ctx context.Context, client *http.Client, rawURL string) ([]byte, error) {
	u, err := url.Parse(rawURL)
	if err != nil || u.Scheme != "https" || u.Host == "" {
		return nil, errNotHTTPS
	}
	ctx, cancel := context.WithTimeout(ctx, fetchTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%w: %d", errStatus, resp.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxFetchBytes+1))
	if err != nil {
		return nil, err
	}
	if len(body) > maxFetchBytes {
		return nil, errTooLarge
	}
	return body, nil
}
