package httpremote

import (
	"net/netip"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentmcp/agentmcp/ports"
)

func TestDerivedFromPublicURL(t *testing.T) {
	tests := []struct {
		url                                 string
		endpoint, metadataPath, metadataURL string
		origin                              string
		hosts                               []string
	}{
		{"https://mcp.example.com/team/agent/mcp", "/team/agent/mcp", "/.well-known/oauth-protected-resource/team/agent/mcp",
			"https://mcp.example.com/.well-known/oauth-protected-resource/team/agent/mcp", "https://mcp.example.com",
			[]string{"mcp.example.com", "mcp.example.com:443"}},
		{"https://mcp.example.com/", "/", "/.well-known/oauth-protected-resource",
			"https://mcp.example.com/.well-known/oauth-protected-resource", "https://mcp.example.com",
			[]string{"mcp.example.com", "mcp.example.com:443"}},
		{"https://mcp.example.com", "/", "/.well-known/oauth-protected-resource",
			"https://mcp.example.com/.well-known/oauth-protected-resource", "https://mcp.example.com",
			[]string{"mcp.example.com", "mcp.example.com:443"}},
		{"https://mcp.example.com:8443/mcp", "/mcp", "/.well-known/oauth-protected-resource/mcp",
			"https://mcp.example.com:8443/.well-known/oauth-protected-resource/mcp", "https://mcp.example.com:8443",
			[]string{"mcp.example.com:8443"}},
		{"https://[2001:db8::1]/a%20b", "/a%20b", "/.well-known/oauth-protected-resource/a%20b",
			"https://[2001:db8::1]/.well-known/oauth-protected-resource/a%20b", "https://[2001:db8::1]",
			[]string{"[2001:db8::1]", "[2001:db8::1]:443"}},
	}
	for _, tt := range tests {
		r, why := parsePublicURL(tt.url)
		if why != "" {
			t.Errorf("%s: refused: %s", tt.url, why)
			continue
		}
		var hosts []string
		for _, h := range tt.hosts {
			if !r.hosts[h] {
				t.Errorf("%s: Host %s not accepted", tt.url, h)
			}
			hosts = append(hosts, h)
		}
		if len(r.hosts) != len(hosts) {
			t.Errorf("%s: hosts %v, want %v", tt.url, r.hosts, hosts)
		}
		got := []string{r.endpoint, r.metadataPath, r.metadataURL, r.origin, r.publicURL}
		want := []string{tt.endpoint, tt.metadataPath, tt.metadataURL, tt.origin, tt.url}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("%s: (-want +got)\n%s", tt.url, d)
		}
	}
}

func TestClientAddr(t *testing.T) {
	a := netip.MustParseAddr
	proxies := proxySet{a("127.0.0.1"): true, a("10.0.0.2"): true}
	tests := []struct {
		peer string
		xff  []string
		want string // "" = invalid (unknown)
	}{
		{"198.51.100.1:5000", []string{"203.0.113.9"}, "198.51.100.1"},
		{"[::ffff:198.51.100.1]:5000", nil, "198.51.100.1"},
		{"127.0.0.1:5000", nil, "127.0.0.1"},
		{"127.0.0.1:5000", []string{"203.0.113.5, 198.51.100.7"}, "198.51.100.7"},
		{"127.0.0.1:5000", []string{"203.0.113.5", "198.51.100.7, 10.0.0.2"}, "198.51.100.7"},
		{"127.0.0.1:5000", []string{" 198.51.100.7 "}, "198.51.100.7"},
		{"127.0.0.1:5000", []string{"fe80::1%eth0"}, "fe80::1"},
		{"127.0.0.1:5000", []string{"10.0.0.2,127.0.0.1"}, "127.0.0.1"},
		{"127.0.0.1:5000", []string{"198.51.100.7, unknown"}, "127.0.0.1"},
		{"127.0.0.1:5000", []string{""}, "127.0.0.1"},
		{"not an address", []string{"198.51.100.7"}, ""},
	}
	for _, tt := range tests {
		got := proxies.clientAddr(peerAddr(tt.peer), tt.xff)
		var want netip.Addr
		if tt.want != "" {
			want = a(tt.want)
		}
		if got != want {
			t.Errorf("peer %s, XFF %q: %v, want %v", tt.peer, tt.xff, got, want)
		}
	}
}

func TestClassifyAndKey(t *testing.T) {
	classes := map[string]ports.AddressClass{
		"127.0.0.1": ports.AddressLoopback, "127.255.1.2": ports.AddressLoopback, "::1": ports.AddressLoopback,
		"10.1.2.3": ports.AddressPrivate, "172.16.0.1": ports.AddressPrivate, "172.31.255.255": ports.AddressPrivate,
		"192.168.1.1": ports.AddressPrivate, "169.254.1.1": ports.AddressPrivate, "100.64.0.1": ports.AddressPrivate,
		"100.127.255.255": ports.AddressPrivate, "fc00::1": ports.AddressPrivate, "fd12::1": ports.AddressPrivate,
		"fe80::1": ports.AddressPrivate, "::ffff:10.0.0.1": ports.AddressPrivate,
		"172.32.0.1": ports.AddressPublic, "100.128.0.1": ports.AddressPublic, "8.8.8.8": ports.AddressPublic,
		"2001:db8::1": ports.AddressPublic,
	}
	for s, want := range classes {
		if got := classify(netip.MustParseAddr(s)); got != want {
			t.Errorf("classify(%s) = %s, want %s", s, got, want)
		}
	}
	if got := classify(netip.Addr{}); got != ports.AddressUnknown {
		t.Errorf("classify(invalid) = %s", got)
	}
	k := func(s string) clientKey { return keyOf(netip.MustParseAddr(s)) }
	if k("2001:db8:1:2::1") != k("2001:db8:1:2:ffff::9") || k("2001:db8:1:2::1") == k("2001:db8:1:3::1") {
		t.Error("IPv6 clients are not keyed by /64")
	}
	if k("198.51.100.1") == k("198.51.100.2") || k("::ffff:198.51.100.1") != k("198.51.100.1") {
		t.Error("IPv4 clients are not keyed by address")
	}
	if keyOf(netip.Addr{}) != (clientKey{}) {
		t.Error("unknown peers do not share one key")
	}
}

// TestThrottleUnknownShares: every unparsable peer spends the one
// "unknown" budget; the limiter's delay is rounded up to whole seconds.
func TestThrottleUnknownShares(t *testing.T) {
	th := newThrottle(ThrottlePerMinute, ThrottleBurst, MaxThrottledClients)
	now := time.Unix(1_800_000_000, 0)
	for i := range ThrottleBurst {
		if over, _ := th.spend(keyOf(peerAddr("garbage")), now); over {
			t.Fatalf("spend %d over budget", i+1)
		}
	}
	over, retry := th.spend(keyOf(netip.Addr{}), now.Add(500*time.Millisecond))
	if !over || retry != 3 {
		t.Errorf("spend 21 = %v, %d; want over budget, Retry-After 3 (2.5 s rounded up)", over, retry)
	}
	if th.len() != 1 {
		t.Errorf("%d keys, want 1", th.len())
	}
}
