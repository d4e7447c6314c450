package httpremote

import (
	"net"
	"net/netip"
	"strings"

	"github.com/agentmcp/agentmcp/ports"
)

// clientKey is whom the throttle and the connection caps count: an IPv4
// address, an IPv6 /64 (one subscriber's allocation, RFC 6177), or — the
// zero value — the single shared "unknown" client.
type clientKey struct{ prefix netip.Prefix }

// keyOf returns the key of addr; an invalid addr is unknown.
func keyOf(addr netip.Addr) clientKey {
	if !addr.IsValid() {
		return clientKey{}
	}
	addr = addr.Unmap().WithZone("")
	bits := 32
	if addr.Is6() {
		bits = 64
	}
	p, _ := addr.Prefix(bits) // never fails for a valid address
	return clientKey{p}
}

// parseAddr parses a literal IP address (docs/SPEC.md §5.3 "Client address"):
// surrounding spaces are trimmed, an IPv6 zone is dropped and an
// IPv4-mapped IPv6 address folds to IPv4. Anything else — a name, an
// address with a port, brackets, an empty string — is not a literal and
// returns false.
func parseAddr(s string) (netip.Addr, bool) {
	a, err := netip.ParseAddr(strings.TrimSpace(s))
	if err != nil {
		return netip.Addr{}, false
	}
	return a.Unmap().WithZone(""), true
}

// peerAddr returns the socket peer of a request, from
// http.Request.RemoteAddr ("ip:port", "[ipv6]:port"); invalid when it
// cannot be parsed.
func peerAddr(remoteAddr string) netip.Addr {
	ap, err := netip.ParseAddrPort(remoteAddr)
	if err != nil {
		return netip.Addr{}
	}
	return ap.Addr().Unmap().WithZone("")
}

// proxySet is the set of trusted proxies, as literal addresses.
type proxySet map[netip.Addr]bool

// connClient is the remote host's [streamable.ConnLimits.ClientOf]: a
// connection counts against the client key of its socket peer (docs/SPEC.md §5.3:
// 16 connections per client address), so one address can hold neither the
// connection slots nor the accept loop. A trusted proxy is exempt: every
// client behind it arrives from its address, and which client a proxied
// connection carries is known per request, from X-Forwarded-For, not per
// connection; its connections are bounded by the total alone.
func (ps proxySet) connClient(peer net.Addr) (key any, exempt bool) {
	var a netip.Addr
	if tcp, ok := peer.(*net.TCPAddr); ok {
		a = tcp.AddrPort().Addr().Unmap().WithZone("")
	}
	if a.IsValid() && ps[a] {
		return nil, true
	}
	return keyOf(a), false
}

// clientAddr resolves the client address of a request (docs/SPEC.md §5.3): the
// socket peer, unless the peer is a trusted proxy; then X-Forwarded-For
// (every field value joined by ",") is walked right to left and the first
// hop that is not itself a trusted proxy is the client. Hops to its left
// were written by the client and are ignored. A hop that is not a literal
// IP makes the peer (the proxy) the client; so does a header whose every hop
// is trusted, or no header at all. An unparsable peer is invalid (unknown).
func (ps proxySet) clientAddr(peer netip.Addr, xff []string) netip.Addr {
	if !peer.IsValid() || !ps[peer] || len(xff) == 0 {
		return peer
	}
	hops := strings.Split(strings.Join(xff, ","), ",")
	for i := len(hops) - 1; i >= 0; i-- {
		hop, ok := parseAddr(hops[i])
		if !ok {
			return peer
		}
		if !ps[hop] {
			return hop
		}
	}
	return peer
}

// Address classes of docs/SPEC.md §5.3, as prefixes.
var (
	loopbackPrefixes = []netip.Prefix{
		netip.MustParsePrefix("127.0.0.0/8"),
		netip.MustParsePrefix("::1/128"),
	}
	privatePrefixes = []netip.Prefix{
		netip.MustParsePrefix("10.0.0.0/8"),
		netip.MustParsePrefix("172.16.0.0/12"),
		netip.MustParsePrefix("192.168.0.0/16"),
		netip.MustParsePrefix("169.254.0.0/16"),
		netip.MustParsePrefix("100.64.0.0/10"),
		netip.MustParsePrefix("fc00::/7"),
		netip.MustParsePrefix("fe80::/10"),
	}
)

// classify returns the audit class of a client address: loopback (127/8,
// ::1), private (10/8, 172.16/12, 192.168/16, 169.254/16, 100.64/10,
// fc00::/7, fe80::/10), public (any other literal) or unknown (invalid).
func classify(addr netip.Addr) ports.AddressClass {
	if !addr.IsValid() {
		return ports.AddressUnknown
	}
	addr = addr.Unmap()
	for _, p := range loopbackPrefixes {
		if p.Contains(addr) {
			return ports.AddressLoopback
		}
	}
	for _, p := range privatePrefixes {
		if p.Contains(addr) {
			return ports.AddressPrivate
		}
	}
	return ports.AddressPublic
}
