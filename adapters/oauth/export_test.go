package oauth

import (
	"context"

	"github.com/agentmcp/agentmcp/ports"
)

// SetWaitHook makes v call f each time a caller starts waiting for a key
// refresh. Call it before v is first used.
func SetWaitHook(v *Verifier, f func()) { v.keys.onWait = f }

// IsPublicAddr exposes the dial policy's address classifier.
var IsPublicAddr = isPublicAddr

// VerifyUnrecovered is Verify without its recover, so that a fuzzer sees
// any panic.
func (v *Verifier) VerifyUnrecovered(ctx context.Context, token string) ports.Verdict {
	return v.verify(ctx, token)
}
