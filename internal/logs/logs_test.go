package logs_test

import (
	"bytes"
	"context"
	"log/slog"
	"testing"

	"github.com/agentmcp/agentmcp/internal/logs"
)

// TestOrDiscard: a Logger given is returned as is; nil becomes one that
// is enabled for no level, so nothing is formatted or written.
func TestOrDiscard(t *testing.T) {
	var buf bytes.Buffer
	l := slog.New(slog.NewTextHandler(&buf, nil))
	if logs.OrDiscard(l) != l {
		t.Error("a given Logger was replaced")
	}
	d := logs.OrDiscard(nil)
	if d == nil || d.Enabled(context.Background(), slog.LevelError) {
		t.Fatalf("OrDiscard(nil) = %v, want a Logger enabled for no level", d)
	}
	d.Error("dropped")
	if buf.Len() != 0 {
		t.Errorf("the discarding Logger wrote %q", buf.String())
	}
}
