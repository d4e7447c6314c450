package domain_test

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/agentmcp/agentmcp/domain"
)

// TestAppendEnvelopeIsMarshalJSON holds the hand-written encoder to
// MarshalJSON's output, byte for byte, over envelopes built from awkward
// strings (quotes, backslashes, every control character, HTML characters,
// U+2028/U+2029, invalid UTF-8, U+FFFD itself), raw results with and
// without insignificant whitespace, and durations across float formats.
func TestAppendEnvelopeIsMarshalJSON(t *testing.T) {
	var ctl strings.Builder
	for c := range 0x20 {
		ctl.WriteByte(byte(c))
	}
	texts := []string{"", "plain", `q"uote\back`, ctl.String(), "<a href='x'>&amp;</a>", "line\u2028sep\u2029", "bad\xff\xfeutf8", "\uFFFD kept", "é ü ✓ 🚀", "\x7f del", strings.Repeat("x", 3000)}
	raws := []json.RawMessage{nil, json.RawMessage(`{"a":1}`), json.RawMessage(` { "a" : [ 1 , "x y" , "\u00e9" ] } `), json.RawMessage(`"str with  spaces"`), json.RawMessage("\n[true,\tnull]\n"), json.RawMessage(`12.50`)}
	durations := []*float64{nil, ptr(0), ptr(1.5), ptr(1e-7), ptr(1e21), ptr(123456789.125), ptr(-0.000001)}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 2000 {
		e := domain.Envelope{
			Success:     i%2 == 0,
			ToolName:    texts[rng.IntN(len(texts))],
			Result:      raws[rng.IntN(len(raws))],
			Error:       texts[rng.IntN(len(texts))],
			Duration:    durations[rng.IntN(len(durations))],
			ExecutionID: texts[rng.IntN(len(texts))],
			Metadata:    raws[rng.IntN(len(raws))],
		}
		want, err := domain.MarshalJSON(e)
		got, gerr := domain.AppendEnvelope(nil, e)
		if (err == nil) != (gerr == nil) {
			t.Fatalf("%+v: MarshalJSON err %v, AppendEnvelope err %v", e, err, gerr)
		}
		if err == nil && string(got) != string(want) {
			t.Fatalf("AppendEnvelope = %s\nMarshalJSON   = %s", got, want)
		}
	}
	for _, bad := range []domain.Envelope{
		{Result: json.RawMessage(`{`)},
		{Metadata: json.RawMessage(`nope`)},
		{Duration: ptr(math.NaN())},
		{Duration: ptr(math.Inf(1))},
	} {
		if _, err := domain.MarshalJSON(bad); err == nil {
			t.Fatalf("MarshalJSON(%+v) succeeded", bad)
		}
		if _, err := domain.AppendEnvelope(nil, bad); err == nil {
			t.Errorf("AppendEnvelope(%+v) succeeded where MarshalJSON fails", bad)
		}
	}
}

func ptr(f float64) *float64 { return &f }
