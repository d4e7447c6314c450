package app

import (
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

// TestStartLog: records below error level wait for release and are then
// written in order, with the attributes of the logger they were logged
// with; an error is written at once; past maxHeld the held ones are
// written and the rest pass.
func TestStartLog(t *testing.T) {
	var b strings.Builder
	l := &startLog{}
	logger := slog.New(heldHandler{slog.NewTextHandler(&b, &slog.HandlerOptions{Level: slog.LevelDebug}), l})
	logger.Info("one")
	logger.With("k", "v").Warn("two")
	logger.Error("failed")
	if got := b.String(); strings.Count(got, "\n") != 1 || !strings.Contains(got, "msg=failed") {
		t.Fatalf("before release: %q, want the error alone", got)
	}
	l.release()
	logger.Info("three")
	got := b.String()
	i1, i2, i3 := strings.Index(got, "msg=one"), strings.Index(got, "msg=two k=v"), strings.Index(got, "msg=three")
	if i1 < 0 || i2 < i1 || i3 < i2 {
		t.Errorf("after release: %q, want one, two (k=v), three in order", got)
	}

	b.Reset()
	l = &startLog{}
	logger = slog.New(heldHandler{slog.NewTextHandler(&b, nil), l})
	for i := range maxHeld + 2 {
		logger.Info(fmt.Sprint("r", i))
	}
	if n := strings.Count(b.String(), "\n"); n != maxHeld+2 {
		t.Errorf("%d records written past the bound, want all %d", n, maxHeld+2)
	}
	if !strings.HasPrefix(b.String(), "time=") || !strings.Contains(strings.SplitN(b.String(), "\n", 2)[0], "msg=r0") {
		t.Errorf("the first record written is not the first logged:\n%.200s", b.String())
	}
}
