package httpremote

import (
	"net/netip"
	"net/url"
	"path"
	"strconv"
	"strings"
)

// MetadataPrefix is the well-known prefix of the protected-resource metadata
// path (RFC 9728 §3.1).
const MetadataPrefix = "/.well-known/oauth-protected-resource"

// resource is everything derived from the public URL (docs/SPEC.md §5.3), never from
// the listener.
type resource struct {
	publicURL    string          // as configured (it is canonical): the resource identifier and audience
	origin       string          // "https://" + host: the only Origin accepted
	endpoint     string          // request target of the MCP endpoint: the URL's path, "/" when empty
	metadataPath string          // MetadataPrefix + the path ("" appended for "/")
	metadataURL  string          // origin + metadataPath
	hosts        map[string]bool // accepted Host values, lower-case
}

// parsePublicURL checks that raw is an absolute https URL in canonical form
// (docs/SPEC.md §5.3) and derives the resource from it. Canonical means: scheme
// "https" in lower case; a host in lower case, without user info and
// without the default port 443 (an explicit port is 1..65535 written without
// leading zeros); no query (not even an empty "?") and no fragment; a path
// that is empty, or "/", or a clean absolute path (no empty, "." or ".."
// segment, no trailing slash), written the way Go escapes it. A proxy in
// front must forward that path unchanged. On failure it returns why, in
// words that never quote the URL (it may hold credentials).
func parsePublicURL(raw string) (resource, string) {
	u, err := url.Parse(raw)
	switch {
	case err != nil || u.Opaque != "" || u.Host == "":
		return resource{}, "not an absolute URL"
	case !strings.HasPrefix(raw, "https://"):
		return resource{}, "the scheme is not https (in lower case)"
	case u.User != nil:
		return resource{}, "it carries credentials"
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || strings.ContainsAny(raw, "?#"):
		return resource{}, "it carries a query or a fragment"
	case !canonicalHost(u):
		return resource{}, "the host is not canonical (lower case, no port 443, a name or an IP literal)"
	}
	p := u.EscapedPath()
	if p != "" && p != "/" && (p != path.Clean(p) || (&url.URL{Path: u.Path}).EscapedPath() != p) {
		return resource{}, "the path is not canonical (no trailing slash, no empty, . or .. segment, minimal escaping)"
	}
	if raw != "https://"+u.Host+p {
		return resource{}, "not in canonical form"
	}
	endpoint := p
	if endpoint == "" {
		endpoint = "/"
	}
	metadataPath := MetadataPrefix
	if endpoint != "/" {
		metadataPath += endpoint
	}
	origin := "https://" + u.Host
	hosts := map[string]bool{u.Host: true}
	if u.Port() == "" {
		hosts[u.Host+":443"] = true
	}
	return resource{
		publicURL:    raw,
		origin:       origin,
		endpoint:     endpoint,
		metadataPath: metadataPath,
		metadataURL:  origin + metadataPath,
		hosts:        hosts,
	}, ""
}

// canonicalHost: a lower-case DNS name (letters, digits, '-', '.') or IP
// literal (IPv6 in brackets, no zone), and an optional port other than 443.
func canonicalHost(u *url.URL) bool {
	name, port := u.Hostname(), u.Port()
	if name == "" || u.Host != strings.ToLower(u.Host) {
		return false
	}
	if strings.HasPrefix(u.Host, "[") {
		a, err := netip.ParseAddr(name)
		if err != nil || !a.Is6() || a.Zone() != "" || a.String() != name {
			return false
		}
	} else {
		for i := 0; i < len(name); i++ {
			c := name[i]
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '.') {
				return false
			}
		}
	}
	if port == "" {
		return !strings.HasSuffix(u.Host, ":")
	}
	n, err := strconv.Atoi(port)
	return err == nil && n >= 1 && n <= 65535 && n != 443 && strconv.Itoa(n) == port
}

// validIssuer: an absolute https URL with a host, without user info, query
// or fragment (docs/SPEC.md §5.3; RFC 8414 §2, and the verifier checks the same).
func validIssuer(raw string) bool {
	u, err := url.Parse(raw)
	return err == nil && u.Scheme == "https" && u.Host != "" && u.Opaque == "" && u.User == nil &&
		u.RawQuery == "" && !u.ForceQuery && u.Fragment == "" && !strings.ContainsAny(raw, "?#")
}
