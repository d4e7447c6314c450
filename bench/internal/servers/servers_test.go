package servers

import (
	"context"
	"crypto/rsa"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/agentmcp/agentmcp/bench/internal/accesstoken"
	"github.com/agentmcp/agentmcp/bench/internal/load"
	"github.com/agentmcp/agentmcp/bench/internal/wire"
)

// agentmcp's engine and carrier API changes shape from time to time: one
// file, agentmcp.go, holds everything the bench builds from it, so that one
// file is all there is to adapt. The component benchmarks of a driven
// adapter (the workspace's tools, the conversation store) use that
// adapter, its port and the domain directly; those are not the servers'
// API and stay outside this rule.
func TestOnlyOneFileImportsAgentmcp(t *testing.T) {
	root, err := filepath.Abs("../..") // the bench module
	if err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(root, "internal", "servers", "agentmcp.go")
	seen := false
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") {
			return err
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if serverAPI(p) {
				if path != want {
					t.Errorf("%s imports %s: only internal/servers/agentmcp.go may", path, p)
				}
				seen = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !seen {
		t.Error("agentmcp.go imports nothing of agentmcp")
	}
}

// serverAPI reports whether the import path p is agentmcp's engine and
// carrier API: the engine, the carriers and their shared framing, the
// composition root.
func serverAPI(p string) bool {
	rel, ok := strings.CutPrefix(p, "github.com/agentmcp/agentmcp/")
	if !ok {
		return false
	}
	for _, api := range []string{"engine", "app", "adapters/stdio", "adapters/unixsocket", "adapters/streamable", "adapters/httploopback", "adapters/httpremote", "adapters/oauth"} {
		if rel == api || strings.HasPrefix(rel, api+"/") {
			return true
		}
	}
	return false
}

// startHTTP starts the named server and stops it when the test ends.
func startHTTP(t *testing.T, name string) *HTTP {
	t.Helper()
	s, err := StartHTTP(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), StopTimeout)
		defer cancel()
		if err := s.Stop(ctx); err != nil {
			t.Error(err)
		}
	})
	return s
}

// Every row's requests carry the same headers of the same sizes: the
// servers that check no token are sent one as long as the loopback host's.
func TestSameHeadersForEveryRow(t *testing.T) {
	shape := func(name string) map[string][]int {
		s := startHTTP(t, name)
		out := map[string][]int{}
		for k, vs := range s.Header {
			for _, v := range vs {
				out[k] = append(out[k], len(v))
			}
		}
		return out
	}
	want := shape(AgentmcpLoopback)
	if len(want["Authorization"]) != 1 {
		t.Fatalf("the loopback host's headers %v carry no one token", want)
	}
	for _, name := range []string{Bare, MCPGo, GoSDK, AgentmcpHandler} {
		if got := shape(name); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: header sizes %v, want the loopback host's %v", name, got, want)
		}
	}
}

// The remote host admits the tokens the bench mints, and really verifies
// them: a token signed by another key, or naming another audience, is
// refused, and so is a request without the public Host.
func TestRemoteVerifies(t *testing.T) {
	s := startHTTP(t, AgentmcpRemote)
	addr, path, err := load.ParseURL(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	key, err := accesstoken.DecodeKey(s.Remote.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	other, err := accesstoken.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	wrongAud := s.Remote.Claims
	wrongAud.Audience = "https://elsewhere.bench.test/mcp"
	for _, c := range []struct {
		name   string
		key    *rsa.PrivateKey
		claims accesstoken.Claims
		host   string
		want   string // "" admitted, else in the error
	}{
		{"admitted", key, s.Remote.Claims, s.Host, ""},
		{"another key", other, s.Remote.Claims, s.Host, "status 401"},
		{"another audience", key, wrongAud, s.Host, "status 401"},
		{"the listener's Host", key, s.Remote.Claims, addr, "status 403"},
	} {
		t.Run(c.name, func(t *testing.T) {
			m, err := accesstoken.NewMinter(c.key, c.claims)
			if err != nil {
				t.Fatal(err)
			}
			tok, err := m.Mint(1)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range wire.Wires {
				h, err := load.DialHTTP(load.HTTPTarget{Addr: addr, Path: path, Host: c.host,
					Modern: wire.Modern(w), Tokens: load.TokenPool{tok}}, 1)
				if c.want == "" {
					if err != nil {
						t.Fatalf("%s: %v", w, err)
					}
					if h.Want() != wire.EnvelopeText {
						t.Errorf("%s: answer %q", w, h.Want())
					}
					h.Close()
					continue
				}
				if err == nil {
					h.Close()
					t.Fatalf("%s: admitted", w)
				}
				if !strings.Contains(err.Error(), c.want) {
					t.Errorf("%s: %v, want %s", w, err, c.want)
				}
			}
		})
	}
}
