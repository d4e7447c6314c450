package load

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"runtime/metrics"
	"time"

	"github.com/agentmcp/agentmcp/bench/internal/accesstoken"
)

// ServerInfo is the line benchserver prints on its stdout once an HTTP
// server is listening: everything the load generator needs to reach it.
type ServerInfo struct {
	Server string      `json:"server"`
	URL    string      `json:"url"`
	Host   string      `json:"host"`
	Header http.Header `json:"header,omitempty"`
	Remote *RemoteInfo `json:"remote,omitempty"`
	// Debug is the bench server's own loopback listener (not the MCP
	// server's): GET Debug+"/heap" answers a Heap.
	Debug      string `json:"debug,omitempty"`
	PID        int    `json:"pid"`
	GOMAXPROCS int    `json:"gomaxprocs"`
}

// RemoteInfo is how to mint the tokens the remote host admits.
type RemoteInfo struct {
	accesstoken.Claims
	// KeyFile holds the issuer's private key (PKCS #8 PEM), written by the
	// server for the load generator and removed when the server exits.
	KeyFile string `json:"keyFile"`
	// CacheSize is the host's verdict cache size.
	CacheSize int `json:"cacheSize"`
}

// ReadServerInfo reads a ServerInfo from a file.
func ReadServerInfo(path string) (ServerInfo, error) {
	var si ServerInfo
	b, err := os.ReadFile(path)
	if err != nil {
		return si, err
	}
	if err := json.Unmarshal(b, &si); err != nil {
		return si, fmt.Errorf("%s: %w", path, err)
	}
	return si, nil
}

// Heap is what a bench server's debug listener reports, read right after a
// forced garbage collection.
type Heap struct {
	// InUse is the bytes in in-use heap spans (live objects plus unused
	// space in those spans): runtime.MemStats.HeapInuse.
	InUse uint64 `json:"heapInUse"`
	// Live is the bytes of live heap objects.
	Live uint64 `json:"heapLive"`
	// Goroutines counts the server process's goroutines.
	Goroutines uint64 `json:"goroutines"`
}

var heapMetrics = []string{
	"/memory/classes/heap/objects:bytes",
	"/memory/classes/heap/unused:bytes",
	"/gc/heap/live:bytes",
	"/sched/goroutines:goroutines",
}

// ReadOwnHeap collects garbage, then reads this process's Heap.
func ReadOwnHeap() Heap {
	runtime.GC()
	s := make([]metrics.Sample, len(heapMetrics))
	for i, name := range heapMetrics {
		s[i].Name = name
	}
	metrics.Read(s)
	u := func(i int) uint64 {
		if s[i].Value.Kind() != metrics.KindUint64 {
			return 0
		}
		return s[i].Value.Uint64()
	}
	return Heap{InUse: u(0) + u(1), Live: u(2), Goroutines: u(3)}
}

// HeapHandler answers ReadOwnHeap as JSON.
func HeapHandler(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(ReadOwnHeap())
}

// ReadHeap asks a bench server's debug listener for its Heap, on a
// connection of its own that is closed afterwards (so each reading sees the
// same number of debug connections).
func ReadHeap(ctx context.Context, debugURL string) (Heap, error) {
	var h Heap
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, debugURL+"/heap", nil)
	if err != nil {
		return h, err
	}
	req.Close = true
	c := &http.Client{Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}}
	resp, err := c.Do(req)
	if err != nil {
		return h, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	if err != nil {
		return h, err
	}
	if resp.StatusCode != http.StatusOK {
		return h, fmt.Errorf("debug %s: status %d", debugURL, resp.StatusCode)
	}
	return h, json.Unmarshal(b, &h)
}

// Report is benchload's output: one JSON line on its stdout.
type Report struct {
	Mode   string `json:"mode"` // http or stdio
	Server string `json:"server"`
	Wire   string `json:"wire"`
	Tokens string `json:"tokens,omitempty"`
	// Workload is the request sent, when not echo: read_file, tasks-get.
	Workload string `json:"workload,omitempty"`
	Clients  int    `json:"clients,omitempty"`
	Window   int    `json:"window,omitempty"`
	Warmup   string `json:"warmup"`
	Phase    string `json:"phase"`
	// Answer is the text every answer carried.
	Answer string `json:"answer"`
	Result Result `json:"result"`
	// HeapAfterWarmup and HeapEnd are set with -mem.
	HeapAfterWarmup *Heap `json:"heapAfterWarmup,omitempty"`
	HeapEnd         *Heap `json:"heapEnd,omitempty"`
	// ServerGOMAXPROCS and LoadGOMAXPROCS are the two processes' GOMAXPROCS
	// (the server's is 0 for stdio: not reported).
	ServerGOMAXPROCS int `json:"serverGomaxprocs,omitempty"`
	LoadGOMAXPROCS   int `json:"loadGomaxprocs"`
	// MintSeconds is how long minting the token pool took (not measured).
	MintSeconds float64 `json:"mintSeconds,omitempty"`
}
